package temporal

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/plan"
)

// TestLargeStatesFitInOnePayload: a run's state past Temporal's 2 MB limit
// on one payload (a few thousand tasks) is carried compressed and comes
// back equal, while a small payload (an event) stays plain JSON.
func TestLargeStatesFitInOnePayload(t *testing.T) {
	s := bigState(3000)
	raw, err := json.Marshal(RunInput{RunID: s.RunID, Settings: s.Settings, State: &s})
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) <= 2<<20 {
		t.Fatalf("the fixture's state is only %d bytes; the test needs one over 2 MB", len(raw))
	}
	dc := DataConverter()
	p, err := dc.ToPayload(RunInput{RunID: s.RunID, Settings: s.Settings, State: &s})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("3000-task state: %d bytes of JSON, %d bytes as a payload", len(raw), len(p.GetData()))
	if len(p.GetData()) >= 2<<20 {
		t.Fatalf("the payload is %d bytes, over Temporal's 2 MB limit", len(p.GetData()))
	}
	var back RunInput
	if err := dc.FromPayload(p, &back); err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(back); string(got) != string(raw) {
		t.Fatal("the state did not come back equal")
	}

	small, err := dc.ToPayload(loop.Event{ActionID: "task/t1/a1/gates", Type: loop.EvGatesEvaluated, Passed: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(small.GetData()), `"task/t1/a1/gates"`) {
		t.Fatalf("a small payload was not kept as plain JSON: %q", small.GetData())
	}
}

// bigState is a finished run of n tasks whose results read like real ones:
// prose from a small vocabulary, in an order drawn at random (seeded).
func bigState(n int) loop.State {
	words := strings.Fields("the task adds a function and its tests; gofmt and go test pass on the worktree, the reviewer found no blocking problem, and the verifier checked every acceptance criterion against the diff of files in internal and cmd")
	rnd := rand.New(rand.NewPCG(1, 2))
	prose := func(k int) string {
		var b strings.Builder
		for range k {
			b.WriteString(words[rnd.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	s := loop.New("r1", loop.Settings{Goal: prose(30), Jobs: 8})
	s.Plan = &plan.Plan{Goal: s.Settings.Goal}
	s.Tasks = map[string]*loop.TaskState{}
	for i := range n {
		id := fmt.Sprintf("t%d", i)
		s.Order = append(s.Order, id)
		s.Plan.Tasks = append(s.Plan.Tasks, plan.Task{ID: id, Title: prose(8), Description: prose(40), FilesToModify: []string{id + ".go"}, AcceptanceCriteria: []string{prose(12), prose(12)}})
		out, _ := json.Marshal(map[string]any{"status": "COMPLETE", "summary": prose(60), "files_modified": []string{id + ".go"}})
		s.Tasks[id] = &loop.TaskState{
			ID: id, Status: loop.TaskMerged, Attempt: 1, Executor: out, Merged: fmt.Sprintf("%040x", rnd.Uint64()),
			Gates: []loop.GateSummary{{Name: "test", Command: "go test ./...", Passed: true, OutputTail: prose(50)}},
		}
	}
	return s
}
