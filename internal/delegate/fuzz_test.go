package delegate

import (
	"encoding/json"
	"testing"
)

// FuzzParseResultBlock: any text either yields valid JSON or an error, never
// a panic.
func FuzzParseResultBlock(f *testing.F) {
	f.Add(seedReply)
	f.Add("## RESULT\n```yaml\na: &x [1, 2]\nb: *x\n```")
	f.Add("```result\n{\"verdict\":\"PASS\"}\n```")
	f.Add("RESULT:\n~~~~\n- 1\n- .inf\n~~~~")
	f.Fuzz(func(t *testing.T, text string) {
		raw, err := ParseResultBlock(text)
		if err == nil && !json.Valid(raw) {
			t.Fatalf("ParseResultBlock returned invalid JSON %q for %q", raw, text)
		}
	})
}
