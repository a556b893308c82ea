package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/loop/looptest"
	"github.com/sluice-run/sluice/internal/plan"
)

type memJournal struct {
	mu      sync.Mutex
	entries []loop.Entry
	state   loop.State
}

func (j *memJournal) Record(e loop.Entry, _ time.Time) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	// Copy through JSON, as the real journal does.
	b, _ := json.Marshal(e)
	var c loop.Entry
	_ = json.Unmarshal(b, &c)
	j.entries = append(j.entries, c)
	return nil
}

func (j *memJournal) Snapshot(s loop.State) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.state = s
	return nil
}

// fakeExec answers every action successfully, counting concurrent task
// work and optionally cancelling the run after a number of actions.
type fakeExec struct {
	plan        *plan.Plan
	active, max atomic.Int32
	calls       atomic.Int32
	cancelAfter int32
	cancel      context.CancelFunc
	delegations sync.Map // action id → count of completed delegations
}

func (f *fakeExec) Execute(ctx context.Context, s loop.State, a loop.Action) loop.Event {
	if a.TaskID != "" {
		n := f.active.Add(1)
		defer f.active.Add(-1)
		for {
			m := f.max.Load()
			if n <= m || f.max.CompareAndSwap(m, n) {
				break
			}
		}
	}
	if c := f.calls.Add(1); f.cancelAfter > 0 && c == f.cancelAfter {
		f.cancel()
	}
	time.Sleep(time.Millisecond)
	ev := loop.Event{ActionID: a.ID}
	switch a.Type {
	case loop.ActBaseline:
		ev.Type = loop.EvBaselineDone
	case loop.ActWorktree:
		ev.Type, ev.Branch = loop.EvWorktreeReady, a.Branch
	case loop.ActGates:
		ev.Type, ev.Passed, ev.Changed = loop.EvGatesEvaluated, true, []string{a.TaskID}
	case loop.ActMerge:
		ev.Type = loop.EvMerged
	case loop.ActFinalVerify:
		ev.Type, ev.Passed = loop.EvFinalVerified, true
	case loop.ActDelegate:
		if ctx.Err() != nil {
			return loop.Event{Type: loop.EvDelegationFail, Reason: loop.ReasonCancelled}
		}
		ev.Type = loop.EvDelegationDone
		ev.Output = looptest.Output(a.Role, f.plan)
	}
	return ev
}

func widePlan(n int) *plan.Plan {
	p := &plan.Plan{}
	for i := 0; i < n; i++ {
		p.Tasks = append(p.Tasks, plan.Task{ID: fmt.Sprintf("t%d", i), FilesToModify: []string{fmt.Sprintf("f%d.go", i)}, AcceptanceCriteria: []string{"ok"}})
	}
	return p
}

func settings(jobs int) loop.Settings {
	return loop.Settings{Goal: "g", ResearchPasses: 1, CriticMaxIterations: 3, TaskRetries: 2, Jobs: jobs, AutoApprove: true}
}

func TestRunBoundsConcurrencyByJobs(t *testing.T) {
	for _, jobs := range []int{1, 3} {
		f := &fakeExec{plan: widePlan(8)}
		j := &memJournal{}
		e := &Engine{Exec: f, Journal: j, Now: time.Now}
		s, err := e.Run(context.Background(), loop.New("r", settings(jobs)))
		if err != nil || s.Status != loop.StatusDone {
			t.Fatalf("jobs %d: status %s err %v", jobs, s.Status, err)
		}
		if got := int(f.max.Load()); got > jobs || (jobs > 1 && got < 2) {
			t.Fatalf("jobs %d: max concurrent task actions %d", jobs, got)
		}
		if replay := loop.Fold(loop.New("r", settings(jobs)), j.entries); !sameState(replay, s) {
			t.Fatalf("jobs %d: the journal does not fold to the final state", jobs)
		}
	}
}

// TestCancelledRunResumesToTheSameEnd: a run cancelled midway journals no
// outcome that arrived after the cancellation, and resuming from the journal
// ends where an uninterrupted run ends, without repeating any delegation
// whose completion was journaled.
func TestCancelledRunResumesToTheSameEnd(t *testing.T) {
	for _, after := range []int32{3, 9, 17, 30} {
		ctx, cancel := context.WithCancel(context.Background())
		f := &fakeExec{plan: widePlan(5), cancelAfter: after, cancel: cancel}
		j := &memJournal{}
		e := &Engine{Exec: f, Journal: j, Now: time.Now}
		_, err := e.Run(ctx, loop.New("r", settings(2)))
		if err == nil {
			t.Fatalf("cancel after %d: want an interruption error", after)
		}
		resumed := loop.Fold(loop.New("r", settings(2)), j.entries)
		done := map[string]bool{}
		for _, en := range j.entries {
			if en.Event != nil && en.Event.Type == loop.EvDelegationDone {
				done[en.Event.ActionID] = true
			}
		}
		f2 := &fakeExec{plan: widePlan(5)}
		j2 := &memJournal{entries: j.entries}
		e2 := &Engine{Exec: recordingExec{f2, done, t}, Journal: j2, Now: time.Now}
		s, err := e2.Run(context.Background(), resumed)
		if err != nil || s.Status != loop.StatusDone {
			t.Fatalf("cancel after %d: resumed status %s err %v", after, s.Status, err)
		}
	}
}

type recordingExec struct {
	inner *fakeExec
	done  map[string]bool
	t     *testing.T
}

func (r recordingExec) Execute(ctx context.Context, s loop.State, a loop.Action) loop.Event {
	if a.Type == loop.ActDelegate && r.done[a.ID] {
		r.t.Errorf("delegation %s repeated after its completion was journaled", a.ID)
	}
	return r.inner.Execute(ctx, s, a)
}

func sameState(a, b loop.State) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
