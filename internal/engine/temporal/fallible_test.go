package temporal

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/sluice-run/sluice/internal/loop"
)

// syncFailing is a worker in a clone of its own whose first try of one
// action cannot publish its result.
type syncFailing struct {
	*stubExec
	failOnce string
	mu       sync.Mutex
	tries    map[string]int
}

func (f *syncFailing) TryExecute(ctx context.Context, s loop.State, a loop.Action) (loop.Event, error) {
	f.mu.Lock()
	f.tries[a.ID]++
	n := f.tries[a.ID]
	f.mu.Unlock()
	ev := f.Execute(ctx, s, a)
	if a.ID == f.failOnce && n == 1 {
		return ev, errors.New("push to the remote: connection refused")
	}
	return ev, nil
}

// TestASyncFailureRetriesTheAction: an action whose worker could not
// publish its result runs again (Temporal retries it) instead of failing
// the task's attempt, and the run ends as if nothing had happened.
func TestASyncFailureRetriesTheAction(t *testing.T) {
	x := &syncFailing{stubExec: newStub(chainPlan(2)), failOnce: "task/t1/a1/execute", tries: map[string]int{}}
	r := runWorkflow(t, x, RunInput{RunID: "r1", Settings: testSettings(2)}, nil)
	if r.err != nil || r.state.Status != loop.StatusDone {
		t.Fatalf("status %s (%s), err %v", r.state.Status, r.state.Reason, r.err)
	}
	if n := x.tries["task/t1/a1/execute"]; n != 2 {
		t.Fatalf("the action whose result could not be published ran %d times; want 2", n)
	}
	if tk := r.state.Tasks["t1"]; tk.Attempt != 1 || len(tk.Failures) != 0 {
		t.Fatalf("the sync failure counted against the task: attempt %d, failures %v", tk.Attempt, tk.Failures)
	}
}
