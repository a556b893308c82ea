package agentrt

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/sluice-run/sluice/internal/model"
)

// TestCompactionKeepsSystemAndDelegation pushes a conversation far past its
// window with large file reads and checks that every request keeps the
// system prompt and the delegation verbatim, masks old observations, keeps
// the latest ones whole, stays under the window, and finishes.
func TestCompactionKeepsSystemAndDelegation(t *testing.T) {
	files := map[string]string{}
	for i := range 12 {
		files[fmt.Sprintf("f%d.go", i)] = strings.Repeat(fmt.Sprintf("line %d of a long file\n", i), 400) // ~9.6 KB
	}
	var steps []func(model.Request) (*model.Response, error)
	for i := range 12 {
		steps = append(steps, reply("", call(fmt.Sprintf("r%d", i), "read_file", fmt.Sprintf(`{"path":"f%d.go"}`, i))))
	}
	steps = append(steps, reply("", call("done", SubmitResultName, `{"summary":"read them all","files_modified":[]}`)))
	p := &scriptProvider{t: t, steps: steps}

	spec := baseSpec(readTool(files))
	spec.MaxTurns = 20
	spec.ContextWindow = 12000 // tokens; 12 reads are ~29k tokens by bytes/4
	instructions := strings.Repeat("Project rule: keep functions short.\n", 50)
	spec.System = []model.TextPart{{Text: "You are the executor."}, {Text: instructions}}
	var tr strings.Builder
	res, err := Run(context.Background(), p, spec, Hooks{}, &tr)
	if err != nil {
		t.Fatal(err)
	}
	if res.Turns != 13 {
		t.Errorf("turns = %d", res.Turns)
	}

	summary := regexp.MustCompile(`^\[output of read_file f\d+\.go elided: 400 lines, \d+ bytes\]$`)
	reqs := p.requests()
	masked := 0
	for i, req := range reqs {
		if req.System[0].Text != "You are the executor." || req.System[1].Text != instructions {
			t.Fatalf("request %d: system prompt changed", i)
		}
		if req.Messages[0].Content[0].Text != spec.Delegation {
			t.Fatalf("request %d: delegation changed: %q", i, req.Messages[0].Content[0].Text)
		}
		var obs []model.Block
		for _, m := range req.Messages {
			for _, b := range m.Content {
				if b.Type == model.BlockToolResult {
					obs = append(obs, b)
				}
			}
		}
		for j, b := range obs {
			whole := strings.HasPrefix(b.Text, "line ")
			switch {
			case j >= len(obs)-1 && !whole:
				t.Errorf("request %d: the latest observation was masked", i)
			case !whole && !summary.MatchString(b.Text):
				t.Errorf("request %d: masked observation %q", i, b.Text)
			case !whole:
				masked++
			}
		}
		size := 0
		b, _ := json.Marshal(req)
		size = len(b) / bytesPerToken
		if size > spec.ContextWindow {
			t.Errorf("request %d is ~%d tokens, over the %d-token window", i, size, spec.ContextWindow)
		}
	}
	if masked == 0 {
		t.Fatal("nothing was ever masked")
	}
	// Once compaction has run, the last three observations stay whole.
	last := reqs[len(reqs)-1]
	var lastObs []model.Block
	for _, m := range last.Messages {
		for _, b := range m.Content {
			if b.Type == model.BlockToolResult {
				lastObs = append(lastObs, b)
			}
		}
	}
	wholeTail := 0
	for _, b := range lastObs[len(lastObs)-3:] {
		if strings.HasPrefix(b.Text, "line ") {
			wholeTail++
		}
	}
	if wholeTail == 0 {
		t.Errorf("no recent observation survived whole")
	}
	if !strings.Contains(tr.String(), `"type":"compaction"`) {
		t.Error("the transcript does not record compaction")
	}
}

func TestDescribeArgs(t *testing.T) {
	cases := map[string]string{
		`{"path":"a/b.go","start":1}`:    "a/b.go",
		`{"command":"go test\n  ./..."}`: "go test ./...",
		`{"x":1}`:                        "",
		`not json`:                       "",
		`{"pattern":"` + strings.Repeat("a", 80) + `"}`: strings.Repeat("a", 57) + "...",
	}
	for in, want := range cases {
		if got := describeArgs(json.RawMessage(in)); got != want {
			t.Errorf("describeArgs(%s) = %q, want %q", in, got, want)
		}
	}
}
