package agentrt

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseResultBlock(t *testing.T) {
	cases := []struct {
		name, text, want string
		err              error // nil: want success
	}{
		{"result fence", "Done.\n```result\n{\"a\": 1}\n```\n", `{"a":1}`, nil},
		{"RESULT line json", "Work done.\nRESULT\n```json\n{\"a\": [1, 2]}\n```", `{"a":[1,2]}`, nil},
		{"RESULT colon plain fence", "RESULT:\n\n```\n{\"a\": true}\n```", `{"a":true}`, nil},
		{"markdown heading yaml", "## RESULT\n\n```yaml\nexecutor_output:\n  summary: \"x\"\n  files: [a, b]\n```\n", `{"executor_output":{"files":["a","b"],"summary":"x"}}`, nil},
		{"bold RESULT tilde fence", "**RESULT**\n~~~json\n{\"a\": 2}\n~~~", `{"a":2}`, nil},
		{"last block wins", "RESULT\n```json\n{\"a\":1}\n```\nActually:\nRESULT\n```json\n{\"a\":2}\n```", `{"a":2}`, nil},
		{"yaml keys that are numbers", "```result\n1: one\n```", `{"1":"one"}`, nil},
		{"json fence without RESULT line", "Here is some json:\n```json\n{\"a\":1}\n```", "", ErrNoResultBlock},
		{"RESULT then prose then fence", "RESULT\nsee below\n```json\n{\"a\":1}\n```", "", ErrNoResultBlock},
		{"no fence", "RESULT: all good", "", ErrNoResultBlock},
		{"unclosed fence", "RESULT\n```json\n{\"a\":1}", "", ErrNoResultBlock},
		{"empty text", "", "", ErrNoResultBlock},
		{"bad json", "RESULT\n```json\n{\"a\":\n```", "", errors.New("not valid JSON")},
		{"bad yaml", "RESULT\n```yaml\na: [\n```", "", errors.New("neither JSON nor YAML")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseResultBlock(c.text)
			switch {
			case c.err == nil && err != nil:
				t.Fatalf("error %v", err)
			case c.err == nil:
				var g, w any
				if json.Unmarshal(got, &g) != nil || json.Unmarshal([]byte(c.want), &w) != nil {
					t.Fatalf("got %s", got)
				}
				gb, _ := json.Marshal(g)
				wb, _ := json.Marshal(w)
				if string(gb) != string(wb) {
					t.Errorf("got %s, want %s", gb, wb)
				}
			case errors.Is(c.err, ErrNoResultBlock):
				if !errors.Is(err, ErrNoResultBlock) {
					t.Errorf("err = %v, want ErrNoResultBlock", err)
				}
			default:
				if err == nil || errors.Is(err, ErrNoResultBlock) || !strings.Contains(err.Error(), c.err.Error()) {
					t.Errorf("err = %v, want one containing %q", err, c.err)
				}
			}
		})
	}
}

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

// FuzzParseResultBlock: no text a model writes makes the parser panic, and
// what it returns is always valid JSON.
func FuzzParseResultBlock(f *testing.F) {
	for _, s := range []string{
		"RESULT\n```json\n{\"a\":1}\n```",
		"## RESULT\n```yaml\na: &x [1, 2]\nb: *x\n```",
		"```result\n- 1\n- {a: b}\n```",
		"RESULT\n~~~\n{}\n~~~",
		"RESULT\n```\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		out, err := ParseResultBlock(text)
		if err == nil && !json.Valid(out) {
			t.Errorf("ParseResultBlock(%q) = %q, not JSON", text, out)
		}
	})
}
