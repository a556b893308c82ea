package agentrt

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestOutputValidatorUnwrapsContract(t *testing.T) {
	v, err := NewOutputValidator(json.RawMessage(resultSchema), nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := v.Check(json.RawMessage(`{"executor_output": {"summary": "s", "files_modified": []}}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"summary": "s", "files_modified": []}` {
		t.Errorf("out = %s", out)
	}
	_, err = v.Check(json.RawMessage(`{"executor_output": {"summary": "s"}}`))
	if err == nil || !strings.Contains(err.Error(), "files_modified") {
		t.Errorf("err = %v, want the inner document's errors", err)
	}
	if _, err := v.Check(json.RawMessage(`  `)); err == nil {
		t.Error("an empty result passed")
	}
}
