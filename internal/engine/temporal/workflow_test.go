package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/sluice-run/sluice/internal/engine"
	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/loop/looptest"
	"github.com/sluice-run/sluice/internal/plan"
)

// stubExec answers every action successfully unless told otherwise, and
// counts calls and completed delegations by action id.
type stubExec struct {
	plan *plan.Plan

	mu        sync.Mutex
	calls     map[string]int
	completed map[string]int
	// failGates makes a task's gates fail on the attempts listed.
	failGates map[string]map[int]bool
	// budgetOn makes the delegation with this action id run out of budget.
	budgetOn string
	// interruptOnce makes the first call of this action id end as a killed
	// worker's delegation does (cancelled, nothing completed).
	interruptOnce string
	// tokens is what every delegation spends.
	tokens int64
}

func newStub(p *plan.Plan) *stubExec {
	return &stubExec{plan: p, calls: map[string]int{}, completed: map[string]int{}}
}

func (f *stubExec) Execute(ctx context.Context, s loop.State, a loop.Action) loop.Event {
	f.mu.Lock()
	f.calls[a.ID]++
	n := f.calls[a.ID]
	f.mu.Unlock()
	ev := loop.Event{ActionID: a.ID}
	switch a.Type {
	case loop.ActBaseline:
		ev.Type = loop.EvBaselineDone
	case loop.ActWorktree:
		ev.Type, ev.Branch, ev.Worktree = loop.EvWorktreeReady, a.Branch, "/wt/"+a.TaskID
	case loop.ActGates:
		if s.Tasks[a.TaskID].Worktree != "/wt/"+a.TaskID {
			// The view must carry the action's own task in full.
			return loop.Event{Type: loop.EvActionError, Detail: "the view lost the task's worktree"}
		}
		ev.Type, ev.Passed, ev.Changed = loop.EvGatesEvaluated, !f.failGates[a.TaskID][a.Attempt], []string{a.TaskID + ".go"}
		if !ev.Passed {
			ev.Gates = []loop.GateSummary{{Name: "test", Command: "go test ./...", OutputTail: "FAIL"}}
		}
	case loop.ActMerge:
		ev.Type, ev.Head = loop.EvMerged, "merge-"+a.TaskID
	case loop.ActFinalVerify:
		ev.Type, ev.Passed = loop.EvFinalVerified, true
	case loop.ActDelegate:
		if a.ID == f.budgetOn {
			return loop.Event{Type: loop.EvDelegationFail, Reason: loop.ReasonBudget, Detail: "100 of 100 tokens used", Usage: loop.Usage{Tokens: 100, Calls: 1}}
		}
		if a.ID == f.interruptOnce && n == 1 {
			return loop.Event{Type: loop.EvDelegationFail, Reason: loop.ReasonCancelled, Detail: "the worker stopped"}
		}
		ev.Type = loop.EvDelegationDone
		ev.Usage = loop.Usage{Tokens: f.tokens, Calls: 1}
		ev.Output = looptest.Output(a.Role, f.plan)
		f.mu.Lock()
		f.completed[a.ID]++
		f.mu.Unlock()
	}
	return ev
}

type stubSource struct{ x engine.Executor }

func (s stubSource) Executor(context.Context, string, loop.State) (engine.Executor, error) {
	return s.x, nil
}

func chainPlan(n int) *plan.Plan {
	p := &plan.Plan{}
	for i := 0; i < n; i++ {
		t := plan.Task{ID: fmt.Sprintf("t%d", i), FilesToModify: []string{fmt.Sprintf("f%d.go", i)}, AcceptanceCriteria: []string{"ok"}}
		if i > 0 && i%2 == 0 {
			t.DependsOn = []string{fmt.Sprintf("t%d", i-1)}
		}
		p.Tasks = append(p.Tasks, t)
	}
	return p
}

func testSettings(jobs int) loop.Settings {
	return loop.Settings{Goal: "g", ResearchPasses: 1, CriticMaxIterations: 3, TaskRetries: 2, Jobs: jobs, AutoApprove: true}
}

type result struct {
	state   loop.State
	err     error
	journal []loop.Entry
}

func runWorkflow(t *testing.T, x engine.Executor, in RunInput, during func(env *testsuite.TestWorkflowEnvironment)) result {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetTestTimeout(30 * time.Second)
	Register(env, &Activities{Source: stubSource{x}, HeartbeatEvery: time.Millisecond})
	if during != nil {
		during(env)
	}
	env.ExecuteWorkflow(WorkflowName, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	var r result
	if r.err = env.GetWorkflowError(); r.err == nil {
		if err := env.GetWorkflowResult(&r.state); err != nil {
			t.Fatalf("decode the workflow result: %v", err)
		}
	}
	v, err := env.QueryWorkflow(QueryJournal, 0)
	if err != nil {
		t.Fatalf("query the journal: %v", err)
	}
	var page JournalPage
	if err := v.Get(&page); err != nil {
		t.Fatalf("decode the journal page: %v", err)
	}
	r.journal = page.Entries
	return r
}

func encode(t *testing.T, s loop.State) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type memJournal struct{ entries []loop.Entry }

func (j *memJournal) Record(e loop.Entry, _ time.Time) error {
	j.entries = append(j.entries, e)
	return nil
}
func (j *memJournal) Snapshot(loop.State) error { return nil }

// TestGreenPlanMatchesTheLocalEngine: the workflow runs a plan to done and
// ends in exactly the state the local engine reaches with the same
// executor; its journal folds to that state.
func TestGreenPlanMatchesTheLocalEngine(t *testing.T) {
	in := RunInput{RunID: "r1", Settings: testSettings(1)}
	r := runWorkflow(t, newStub(chainPlan(4)), in, nil)
	if r.err != nil || r.state.Status != loop.StatusDone {
		t.Fatalf("status %s (%s), err %v", r.state.Status, r.state.Reason, r.err)
	}
	local := &engine.Engine{Exec: newStub(chainPlan(4)), Journal: &memJournal{}, Now: time.Now}
	want, err := local.Run(context.Background(), loop.New("r1", testSettings(1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := encode(t, r.state); got != encode(t, want) {
		t.Fatalf("the workflow's state differs from the local engine's:\n got %s\nwant %s", got, encode(t, want))
	}
	if folded := loop.Fold(loop.New("r1", testSettings(1)), r.journal); encode(t, folded) != encode(t, r.state) {
		t.Fatal("the journal query does not fold to the workflow's result")
	}
}

// TestParallelPlanMerges: with several jobs every task still merges once.
func TestParallelPlanMerges(t *testing.T) {
	x := newStub(chainPlan(6))
	r := runWorkflow(t, x, RunInput{RunID: "r2", Settings: testSettings(3)}, nil)
	if r.err != nil || r.state.Status != loop.StatusDone {
		t.Fatalf("status %s (%s), err %v", r.state.Status, r.state.Reason, r.err)
	}
	for _, id := range r.state.Order {
		if n := x.calls[fmt.Sprintf("task/%s/a1/merge", id)]; n != 1 {
			t.Errorf("task %s merged %d times", id, n)
		}
	}
}

// TestFailedGatesRetryTheTask: a gate failure is not retried by Temporal
// (non-retryable) but handed to the reducer, which runs a second attempt
// with the failure as its previous_failure.
func TestFailedGatesRetryTheTask(t *testing.T) {
	x := newStub(chainPlan(2))
	x.failGates = map[string]map[int]bool{"t1": {1: true}}
	r := runWorkflow(t, x, RunInput{RunID: "r3", Settings: testSettings(2)}, nil)
	if r.err != nil || r.state.Status != loop.StatusDone {
		t.Fatalf("status %s (%s), err %v", r.state.Status, r.state.Reason, r.err)
	}
	t1 := r.state.Tasks["t1"]
	if t1.Status != loop.TaskMerged || t1.Attempt != 2 || len(t1.Failures) != 1 {
		t.Fatalf("t1: status %s attempt %d failures %d", t1.Status, t1.Attempt, len(t1.Failures))
	}
	if !strings.Contains(strings.Join(t1.Failures[0].SpecificFailures, "\n"), "go test ./...") {
		t.Fatalf("the failure does not carry the gate: %+v", t1.Failures[0])
	}
	if n := x.calls["task/t1/a1/gates"]; n != 1 {
		t.Fatalf("failed gates ran %d times; a gate failure must not be retried by Temporal", n)
	}
	if x.completed["task/t1/a2/execute"] != 1 {
		t.Fatal("the second attempt's executor did not run")
	}
}

// TestBudgetExhaustionPausesTheRun: a delegation that runs out of budget is
// not retried, and the run pauses with the budget reason, as in the local
// engine.
func TestBudgetExhaustionPausesTheRun(t *testing.T) {
	x := newStub(chainPlan(2))
	x.budgetOn = "critique/i1"
	r := runWorkflow(t, x, RunInput{RunID: "r4", Settings: testSettings(1)}, nil)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.state.Status != loop.StatusPaused || !strings.Contains(r.state.Reason, "budget exhausted") {
		t.Fatalf("status %s reason %q", r.state.Status, r.state.Reason)
	}
	if n := x.calls["critique/i1"]; n != 1 {
		t.Fatalf("the budget-exhausted delegation ran %d times", n)
	}
	if r.state.Usage.Tokens != 100 {
		t.Fatalf("usage %d tokens, want the failed call's 100 counted", r.state.Usage.Tokens)
	}
}

// TestBudgetLimitStopsNewWork: the reducer's own budget check pauses the
// run once spending reaches the limit, and no further delegation starts.
func TestBudgetLimitStopsNewWork(t *testing.T) {
	x := newStub(chainPlan(2))
	x.tokens = 60
	set := testSettings(1)
	set.Budget = loop.Budget{Tokens: 100}
	r := runWorkflow(t, x, RunInput{RunID: "r5", Settings: set}, nil)
	if r.err != nil || r.state.Status != loop.StatusPaused {
		t.Fatalf("status %s err %v", r.state.Status, r.err)
	}
	if got := len(x.completed); got != 2 {
		t.Fatalf("%d delegations completed; want 2 (research, plan) before the 100-token limit", got)
	}
}

// TestWorkerCrashMidDelegation: a delegation cut short (its worker died)
// is retried by Temporal, completes once, and costs the task no attempt.
func TestWorkerCrashMidDelegation(t *testing.T) {
	x := newStub(chainPlan(2))
	x.interruptOnce = "task/t0/a1/execute"
	r := runWorkflow(t, x, RunInput{RunID: "r6", Settings: testSettings(1)}, nil)
	if r.err != nil || r.state.Status != loop.StatusDone {
		t.Fatalf("status %s (%s), err %v", r.state.Status, r.state.Reason, r.err)
	}
	if n := x.calls["task/t0/a1/execute"]; n != 2 {
		t.Fatalf("the interrupted delegation ran %d times, want 2 (the crash, the retry)", n)
	}
	if n := x.completed["task/t0/a1/execute"]; n != 1 {
		t.Fatalf("the delegation completed %d times, want exactly once", n)
	}
	if t0 := r.state.Tasks["t0"]; t0.Attempt != 1 || len(t0.Failures) != 0 {
		t.Fatalf("t0 attempt %d failures %v: a crashed worker must not cost an attempt", t0.Attempt, t0.Failures)
	}
	for _, e := range r.journal {
		if e.Event != nil && e.Event.ActionID == "task/t0/a1/execute" && e.Event.Type != loop.EvDelegationDone {
			t.Fatalf("the journal holds the crash as an event: %+v", e.Event)
		}
	}
}

// TestApprovalSignal: waiting for approval, the status query shows the run
// in its approval phase; the approve signal starts execution.
func TestApprovalSignal(t *testing.T) {
	set := testSettings(1)
	set.AutoApprove = false
	var phase loop.Phase
	r := runWorkflow(t, newStub(chainPlan(2)), RunInput{RunID: "r7", Settings: set, WaitForApproval: true}, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(QueryStatus)
			if err != nil {
				t.Errorf("query status: %v", err)
				return
			}
			var s loop.State
			if err := v.Get(&s); err != nil {
				t.Errorf("decode status: %v", err)
			}
			phase = s.Phase
			env.SignalWorkflow(SignalApprove, Approval{Approve: true})
		}, time.Hour)
	})
	if phase != loop.PhaseApproval {
		t.Fatalf("phase while waiting: %q", phase)
	}
	if r.err != nil || r.state.Status != loop.StatusDone {
		t.Fatalf("status %s (%s), err %v", r.state.Status, r.state.Reason, r.err)
	}
}

// TestRejectionFailsTheRun: a rejected plan fails the run with the detail.
func TestRejectionFailsTheRun(t *testing.T) {
	set := testSettings(1)
	set.AutoApprove = false
	r := runWorkflow(t, newStub(chainPlan(2)), RunInput{RunID: "r8", Settings: set, WaitForApproval: true}, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(SignalApprove, Approval{Approve: false, Detail: "too big"})
		}, time.Minute)
	})
	if r.err != nil || r.state.Status != loop.StatusFailed || !strings.Contains(r.state.Reason, "too big") {
		t.Fatalf("status %s (%s), err %v", r.state.Status, r.state.Reason, r.err)
	}
}

// TestApprovalPausesWithoutAWaiter: non-interactive, the run pauses at the
// approval with the question in flight, and resuming with --yes (the
// resumed event) from the journal finishes it.
func TestApprovalPausesWithoutAWaiter(t *testing.T) {
	set := testSettings(1)
	set.AutoApprove = false
	x := newStub(chainPlan(2))
	r := runWorkflow(t, x, RunInput{RunID: "r9", Settings: set}, nil)
	if r.err != nil || r.state.Status != loop.StatusPaused || !strings.Contains(r.state.Reason, "sluice resume --yes") {
		t.Fatalf("status %s (%s), err %v", r.state.Status, r.state.Reason, r.err)
	}
	s := loop.Fold(loop.New("r9", set), r.journal)
	s = loop.Apply(s, loop.Event{Type: loop.EvResumed, Approve: true})
	r2 := runWorkflow(t, x, RunInput{RunID: "r9", Settings: set, State: &s}, nil)
	if r2.err != nil || r2.state.Status != loop.StatusDone {
		t.Fatalf("resumed: status %s (%s), err %v", r2.state.Status, r2.state.Reason, r2.err)
	}
	if n := x.completed["plan/i1"]; n != 1 {
		t.Fatalf("the resume planned again (%d plans)", n)
	}
}

// TestViewKeepsPayloadsSmall: an action's view holds its own task in full
// and only the status of the others.
func TestViewKeepsPayloadsSmall(t *testing.T) {
	s := loop.State{
		Tasks: map[string]*loop.TaskState{
			"a": {ID: "a", Status: loop.TaskRunning, Executor: json.RawMessage(`{"summary":"long"}`), Worktree: "/wt/a"},
			"b": {ID: "b", Status: loop.TaskMerged, Executor: json.RawMessage(`{"summary":"long"}`), Changed: []string{"x.go"}},
		},
		InFlight: map[string]loop.Action{"x": {ID: "x"}},
	}
	v := View(s, loop.Action{ID: "task/a/a1/gates", TaskID: "a"})
	if v.Tasks["a"].Worktree != "/wt/a" || len(v.Tasks["a"].Executor) == 0 {
		t.Fatal("the view dropped the action's own task")
	}
	if b := v.Tasks["b"]; b.Status != loop.TaskMerged || b.Executor != nil || b.Changed != nil {
		t.Fatalf("the view kept another task's results: %+v", b)
	}
	if v.InFlight != nil || s.Tasks["b"].Executor == nil {
		t.Fatal("the view kept the in-flight set, or changed the state it was made from")
	}
}

// TestDeferredApprovalPauses: an approver who cannot answer pauses the run
// with the question still in flight.
func TestDeferredApprovalPauses(t *testing.T) {
	set := testSettings(1)
	set.AutoApprove = false
	r := runWorkflow(t, newStub(chainPlan(2)), RunInput{RunID: "r10", Settings: set, WaitForApproval: true}, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalApprove, Approval{Defer: true}) }, time.Minute)
	})
	if r.err != nil || r.state.Status != loop.StatusPaused || len(r.state.InFlight) != 1 {
		t.Fatalf("status %s (%s), in flight %v, err %v", r.state.Status, r.state.Reason, r.state.InFlight, r.err)
	}
}

// flakySource fails to build the executor the first time, as a worker
// without the run directory does.
type flakySource struct {
	x     engine.Executor
	mu    sync.Mutex
	calls int
}

func (f *flakySource) Executor(context.Context, string, loop.State) (engine.Executor, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls == 1 {
		return nil, fmt.Errorf("read meta.json: no such file")
	}
	return f.x, nil
}

// TestSetupErrorIsRetried: a worker that cannot set up the run fails the
// activity with a retryable error; the retry (on a worker that can) runs
// the action, and the run ends as if nothing happened.
func TestSetupErrorIsRetried(t *testing.T) {
	src := &flakySource{x: newStub(chainPlan(1))}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	Register(env, &Activities{Source: src})
	env.ExecuteWorkflow(WorkflowName, RunInput{RunID: "r11", Settings: testSettings(1)})
	var s loop.State
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if err := env.GetWorkflowResult(&s); err != nil || s.Status != loop.StatusDone {
		t.Fatalf("status %s (%s), err %v", s.Status, s.Reason, err)
	}
	v, err := env.QueryWorkflow(QueryJournal, 0)
	if err != nil {
		t.Fatal(err)
	}
	var page JournalPage
	if err := v.Get(&page); err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Entries {
		if e.Event != nil && e.Event.Type == loop.EvActionError {
			t.Fatalf("the setup failure reached the reducer: %+v", e.Event)
		}
	}
	if src.calls < 2 {
		t.Fatalf("the executor source was asked %d times", src.calls)
	}
}

// TestContinueAsNewKeepsHistoriesBounded: with a small entry limit the
// workflow drains and continues as new several times, carrying only the
// folded state; the chain ends exactly where one long run ends, and the
// journal pages, numbered across the chain, fold to that state.
func TestContinueAsNewKeepsHistoriesBounded(t *testing.T) {
	x := newStub(chainPlan(5))
	in := RunInput{RunID: "r12", Settings: testSettings(2), ContinueAfter: 12}
	var journal []loop.Entry
	runs := 0
	var s loop.State
	for {
		runs++
		if runs > 40 {
			t.Fatal("the chain does not end")
		}
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestWorkflowEnvironment()
		Register(env, &Activities{Source: stubSource{x}})
		env.ExecuteWorkflow(WorkflowName, in)
		v, err := env.QueryWorkflow(QueryJournal, in.JournalBase)
		if err != nil {
			t.Fatal(err)
		}
		var page JournalPage
		if err := v.Get(&page); err != nil {
			t.Fatal(err)
		}
		journal = append(journal, page.Entries...)
		if page.Next != len(journal) {
			t.Fatalf("run %d: journal page ends at %d, want %d", runs, page.Next, len(journal))
		}
		var can *workflow.ContinueAsNewError
		if err := env.GetWorkflowError(); errors.As(err, &can) {
			if !page.Continued {
				t.Fatalf("run %d continued as new but its journal does not say so", runs)
			}
			// At the limit the run stops issuing, and what runs still
			// lands: per job, one task child's attempt (its worktree
			// event, then four stages issued and folded).
			const childEntries = 1 + 4*2
			if len(page.Entries) > in.ContinueAfter+in.Settings.Jobs*childEntries+2 {
				t.Fatalf("run %d made %d entries with a limit of %d", runs, len(page.Entries), in.ContinueAfter)
			}
			in = RunInput{}
			if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
				t.Fatal(err)
			}
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		if err := env.GetWorkflowResult(&s); err != nil {
			t.Fatal(err)
		}
		break
	}
	if runs < 3 {
		t.Fatalf("%d runs: the limit did not continue the workflow as new", runs)
	}
	if s.Status != loop.StatusDone {
		t.Fatalf("status %s (%s)", s.Status, s.Reason)
	}
	for id, n := range x.completed {
		if n != 1 {
			t.Errorf("delegation %s completed %d times across the chain", id, n)
		}
	}
	if folded := loop.Fold(loop.New("r12", testSettings(2)), journal); encode(t, folded) != encode(t, s) {
		t.Fatal("the chain's journal does not fold to its final state")
	}
}

// blockingExec holds one delegation until its context ends.
type blockingExec struct {
	*stubExec
	block   string
	started func()
}

func (b *blockingExec) Execute(ctx context.Context, s loop.State, a loop.Action) loop.Event {
	if a.ID == b.block {
		b.started()
		<-ctx.Done()
		return loop.Event{Type: loop.EvDelegationFail, Reason: loop.ReasonCancelled, Detail: "cancelled"}
	}
	return b.stubExec.Execute(ctx, s, a)
}

// TestCancelLeavesWorkInFlight: a cancelled workflow folds no outcome of
// the cancelled activity; the action stays in flight in the journal, and a
// resume from the journal runs it and finishes.
func TestCancelLeavesWorkInFlight(t *testing.T) {
	x := newStub(chainPlan(2))
	b := &blockingExec{stubExec: x, block: "plan/i1"}
	r := runWorkflow(t, b, RunInput{RunID: "r13", Settings: testSettings(1)}, func(env *testsuite.TestWorkflowEnvironment) {
		// The mock clock stands still while an activity runs: cancel from
		// the activity's side once the planner is under way.
		b.started = func() { go env.CancelWorkflow() }
	})
	if r.err == nil {
		t.Fatal("a cancelled workflow ended without an error")
	}
	s := loop.Fold(loop.New("r13", testSettings(1)), r.journal)
	if _, ok := s.InFlight["plan/i1"]; !ok || s.Status != loop.StatusRunning {
		t.Fatalf("after the cancel: status %s, in flight %v; want plan/i1 in flight", s.Status, s.InFlight)
	}
	r2 := runWorkflow(t, x, RunInput{RunID: "r13", Settings: testSettings(1), State: &s}, nil)
	if r2.err != nil || r2.state.Status != loop.StatusDone {
		t.Fatalf("resumed: status %s (%s), err %v", r2.state.Status, r2.state.Reason, r2.err)
	}
}

// whereExec records which workflow each action's activity ran for.
type whereExec struct {
	engine.Executor
	mu  sync.Mutex
	ran map[string][]string
}

func newWhere(x engine.Executor) *whereExec {
	return &whereExec{Executor: x, ran: map[string][]string{}}
}

func (w *whereExec) Execute(ctx context.Context, s loop.State, a loop.Action) loop.Event {
	id := activity.GetInfo(ctx).WorkflowExecution.ID
	w.mu.Lock()
	w.ran[a.ID] = append(w.ran[a.ID], id)
	w.mu.Unlock()
	return w.Executor.Execute(ctx, s, a)
}

// workflowOf is the one workflow an action ran for.
func (w *whereExec) workflowOf(t *testing.T, actionID string) string {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if ids := w.ran[actionID]; len(ids) == 1 {
		return ids[0]
	}
	t.Fatalf("action %s ran for workflows %v, want exactly one", actionID, w.ran[actionID])
	return ""
}

// localState is where the local engine takes the same run.
func localState(t *testing.T, x engine.Executor, runID string, set loop.Settings) loop.State {
	t.Helper()
	local := &engine.Engine{Exec: x, Journal: &memJournal{}, Now: time.Now}
	s, err := local.Run(context.Background(), loop.New(runID, set))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTaskStagesRunInChildWorkflows: a task's worktree, executor, gates,
// review and verifier, retries included, run in one child per task; the
// run workflow itself runs only the run-level actions and the merges. The
// run still ends exactly where the local engine ends.
func TestTaskStagesRunInChildWorkflows(t *testing.T) {
	stub := func() *stubExec {
		x := newStub(chainPlan(3))
		x.failGates = map[string]map[int]bool{"t1": {1: true}}
		return x
	}
	w := newWhere(stub())
	r := runWorkflow(t, w, RunInput{RunID: "r14", Settings: testSettings(1)}, nil)
	if r.err != nil || r.state.Status != loop.StatusDone {
		t.Fatalf("status %s (%s), err %v", r.state.Status, r.state.Reason, r.err)
	}
	parent := w.workflowOf(t, "baseline")
	stages := 0
	for id := range w.ran {
		a := loop.ActionOfID(id)
		want := parent
		if a.TaskID != "" && a.Type != loop.ActMerge {
			// The retry of t1 (attempt 2) stays in the child of attempt 1.
			want = parent + "/task/" + a.TaskID + "/a1/worktree"
			stages++
		}
		if got := w.workflowOf(t, id); got != want {
			t.Errorf("action %s ran for workflow %q, want %q", id, got, want)
		}
	}
	if stages != 3*5+3 {
		t.Errorf("%d task stages ran, want 18 (five per task, and t1's first attempt up to its failed gates)", stages)
	}
	if want := localState(t, stub(), "r14", testSettings(1)); encode(t, r.state) != encode(t, want) {
		t.Fatalf("the workflow's state differs from the local engine's:\n got %s\nwant %s", encode(t, r.state), encode(t, want))
	}
	if folded := loop.Fold(loop.New("r14", testSettings(1)), r.journal); encode(t, folded) != encode(t, r.state) {
		t.Fatal("the journal, with the children's entries, does not fold to the workflow's result")
	}
}

// TestCancelMidTaskKeepsTheChildsWork: cancelling the run while a task's
// review runs folds what the task's child completed; the resume runs the
// review (in a new child) and never the finished executor again.
func TestCancelMidTaskKeepsTheChildsWork(t *testing.T) {
	x := newStub(chainPlan(2))
	b := &blockingExec{stubExec: x, block: "task/t0/a1/review"}
	r := runWorkflow(t, b, RunInput{RunID: "r15", Settings: testSettings(1)}, func(env *testsuite.TestWorkflowEnvironment) {
		b.started = func() { go env.CancelWorkflow() }
	})
	if r.err == nil {
		t.Fatal("a cancelled workflow ended without an error")
	}
	s := loop.Fold(loop.New("r15", testSettings(1)), r.journal)
	if _, ok := s.InFlight["task/t0/a1/review"]; !ok || len(s.InFlight) != 1 {
		t.Fatalf("after the cancel, in flight %v; want only the review", s.InFlight)
	}
	if t0 := s.Tasks["t0"]; t0.Stage != loop.StageReview || t0.Head == "" && len(t0.Changed) == 0 {
		t.Fatalf("after the cancel t0 is at %s with changes %v: the child's gates were lost", t0.Stage, t0.Changed)
	}
	w := newWhere(x)
	r2 := runWorkflow(t, w, RunInput{RunID: "r15", Settings: testSettings(1), State: &s}, nil)
	if r2.err != nil || r2.state.Status != loop.StatusDone {
		t.Fatalf("resumed: status %s (%s), err %v", r2.state.Status, r2.state.Reason, r2.err)
	}
	if n := x.completed["task/t0/a1/execute"]; n != 1 {
		t.Fatalf("the executor completed %d times, want once: the resume ran it again", n)
	}
	if n := x.completed["task/t0/a1/review"]; n != 1 {
		t.Fatalf("the review completed %d times after the resume, want once", n)
	}
	parent := w.workflowOf(t, "task/t0/a1/merge")
	if got := w.workflowOf(t, "task/t0/a1/review"); got != parent+"/task/t0/a1/review" {
		t.Fatalf("the resumed review ran for workflow %q", got)
	}
}

// TestResumeContinuesATaskInAChild: a run resumed with a task's gates in
// flight starts a child from the gates, which carries the task on; the run
// ends exactly where the uninterrupted run ended.
func TestResumeContinuesATaskInAChild(t *testing.T) {
	whole := runWorkflow(t, newStub(chainPlan(2)), RunInput{RunID: "r16", Settings: testSettings(1)}, nil)
	if whole.err != nil || whole.state.Status != loop.StatusDone {
		t.Fatalf("status %s (%s), err %v", whole.state.Status, whole.state.Reason, whole.err)
	}
	cut := -1
	for i, e := range whole.journal {
		if e.Action != nil && e.Action.ID == "task/t0/a1/gates" {
			cut = i
		}
	}
	if cut < 0 {
		t.Fatal("the journal holds no gates action of t0")
	}
	s := loop.Fold(loop.New("r16", testSettings(1)), whole.journal[:cut+1])
	x := newStub(chainPlan(2))
	w := newWhere(x)
	r := runWorkflow(t, w, RunInput{RunID: "r16", Settings: testSettings(1), State: &s}, nil)
	if r.err != nil {
		t.Fatal(r.err)
	}
	parent := w.workflowOf(t, "task/t0/a1/merge")
	if got := w.workflowOf(t, "task/t0/a1/gates"); got != parent+"/task/t0/a1/gates" {
		t.Fatalf("the gates in flight ran for workflow %q, want the child %s/task/t0/a1/gates", got, parent)
	}
	if got := w.workflowOf(t, "task/t0/a1/verify"); got != parent+"/task/t0/a1/gates" {
		t.Fatalf("t0's verifier ran for workflow %q, want the resumed child", got)
	}
	if x.calls["task/t0/a1/worktree"]+x.calls["task/t0/a1/execute"] != 0 {
		t.Fatal("the resume ran t0's finished stages again")
	}
	if encode(t, r.state) != encode(t, whole.state) {
		t.Fatalf("the resumed run ends elsewhere:\n got %s\nwant %s", encode(t, r.state), encode(t, whole.state))
	}
}

// TestBudgetRunsOutInATask: a task's executor running out of budget pauses
// the run as in the local engine, with the task's stage left to the
// resume; with two tasks running, the other child stops too and nothing
// merges while the run is paused.
func TestBudgetRunsOutInATask(t *testing.T) {
	stub := func() *stubExec {
		x := newStub(chainPlan(2))
		x.budgetOn = "task/t0/a1/execute"
		return x
	}
	r := runWorkflow(t, stub(), RunInput{RunID: "r17", Settings: testSettings(1)}, nil)
	if r.err != nil || r.state.Status != loop.StatusPaused || !strings.Contains(r.state.Reason, "budget exhausted") {
		t.Fatalf("status %s (%s), err %v", r.state.Status, r.state.Reason, r.err)
	}
	if want := localState(t, stub(), "r17", testSettings(1)); encode(t, r.state) != encode(t, want) {
		t.Fatalf("the workflow's state differs from the local engine's:\n got %s\nwant %s", encode(t, r.state), encode(t, want))
	}

	x := stub()
	r = runWorkflow(t, x, RunInput{RunID: "r18", Settings: testSettings(2)}, nil)
	if r.err != nil || r.state.Status != loop.StatusPaused {
		t.Fatalf("two jobs: status %s (%s), err %v", r.state.Status, r.state.Reason, r.err)
	}
	// Whether t1 reaches its merge before t0 runs out depends on timing;
	// what must hold is that no merge starts once the run is paused.
	folded := loop.New("r18", testSettings(2))
	for _, e := range r.journal {
		if e.Action != nil && e.Action.Type == loop.ActMerge && folded.Status != loop.StatusRunning {
			t.Errorf("%s was issued while the run was %s", e.Action.ID, folded.Status)
		}
		folded = loop.Fold(folded, []loop.Entry{e})
	}
	if len(r.state.InFlight) != 0 {
		t.Errorf("the paused run left %v in flight", r.state.InFlight)
	}
	if folded := loop.Fold(loop.New("r18", testSettings(2)), r.journal); encode(t, folded) != encode(t, r.state) {
		t.Fatal("the journal does not fold to the workflow's result")
	}
}

// signalExec sends the task workflow the stop signal while one action
// runs, before its outcome is reported.
type signalExec struct {
	*stubExec
	on   string
	send func()
}

func (x *signalExec) Execute(ctx context.Context, s loop.State, a loop.Action) loop.Event {
	if a.ID == x.on {
		x.send()
	}
	return x.stubExec.Execute(ctx, s, a)
}

// TestTaskWorkflowStopsWhenTold: a task workflow told to stop finishes the
// action under way, issues nothing more, and returns (and its journal
// query shows) what it did.
func TestTaskWorkflowStopsWhenTold(t *testing.T) {
	whole := runWorkflow(t, newStub(chainPlan(1)), RunInput{RunID: "r19", Settings: testSettings(1)}, nil)
	cut := -1
	for i, e := range whole.journal {
		if e.Action != nil && e.Action.ID == "task/t0/a1/worktree" {
			cut = i
		}
	}
	if cut < 0 {
		t.Fatal("the journal holds no worktree action of t0")
	}
	s := loop.Fold(loop.New("r19", testSettings(1)), whole.journal[:cut+1])
	first := *whole.journal[cut].Action

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetTestTimeout(30 * time.Second)
	x := &signalExec{stubExec: newStub(chainPlan(1)), on: "task/t0/a1/execute", send: func() { env.SignalWorkflow(SignalStop, nil) }}
	Register(env, &Activities{Source: stubSource{x}, HeartbeatEvery: time.Millisecond})
	env.ExecuteWorkflow(TaskWorkflowName, TaskInput{RunID: "r19", TaskID: "t0", View: View(s, first), Actions: []loop.Action{first}})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res TaskResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range res.Entries {
		if e.Action != nil {
			ids = append(ids, "issue "+e.Action.ID)
		} else {
			ids = append(ids, "event "+e.Event.ActionID)
		}
	}
	want := "event task/t0/a1/worktree, issue task/t0/a1/execute, event task/t0/a1/execute"
	if got := strings.Join(ids, ", "); got != want {
		t.Fatalf("the stopped task workflow did %s; want %s", got, want)
	}
	v, err := env.QueryWorkflow(QueryJournal, 1)
	if err != nil {
		t.Fatal(err)
	}
	var page JournalPage
	if err := v.Get(&page); err != nil {
		t.Fatal(err)
	}
	if page.Next != 3 || len(page.Entries) != 2 || page.Entries[0].Action == nil || page.Entries[0].Action.ID != "task/t0/a1/execute" {
		t.Fatalf("the task's journal query from 1 gave %+v", page)
	}
}

// cancelChildExec cancels the task workflow running one action, once,
// as an operator cancelling the child (not the run) does.
type cancelChildExec struct {
	*stubExec
	on   string
	env  *testsuite.TestWorkflowEnvironment
	once sync.Once
}

func (x *cancelChildExec) Execute(ctx context.Context, s loop.State, a loop.Action) loop.Event {
	cancelled := false
	if a.ID == x.on {
		x.once.Do(func() {
			cancelled = true
			x.env.CancelWorkflowByID(activity.GetInfo(ctx).WorkflowExecution.ID, "")
		})
	}
	if cancelled {
		<-ctx.Done()
		return loop.Event{Type: loop.EvDelegationFail, Reason: loop.ReasonCancelled, Detail: "cancelled"}
	}
	return x.stubExec.Execute(ctx, s, a)
}

// TestACancelledChildIsStartedAgain: a task workflow cancelled on its own
// returns what it completed; the run goes on and starts a new child for
// the stage left in flight, and the run ends as an uninterrupted one.
func TestACancelledChildIsStartedAgain(t *testing.T) {
	x := &cancelChildExec{stubExec: newStub(chainPlan(2)), on: "task/t0/a1/review"}
	w := newWhere(x)
	r := runWorkflow(t, w, RunInput{RunID: "r20", Settings: testSettings(1)}, func(env *testsuite.TestWorkflowEnvironment) { x.env = env })
	if r.err != nil || r.state.Status != loop.StatusDone {
		t.Fatalf("status %s (%s), err %v", r.state.Status, r.state.Reason, r.err)
	}
	parent := w.workflowOf(t, "baseline")
	if got := w.ran["task/t0/a1/review"]; len(got) != 2 || got[1] != parent+"/task/t0/a1/review" {
		t.Fatalf("the review ran for workflows %v; want the cancelled child, then %s/task/t0/a1/review", got, parent)
	}
	if n := x.calls["task/t0/a1/execute"]; n != 1 {
		t.Fatalf("the executor ran %d times; the cancelled child's finished work was lost", n)
	}
	if want := localState(t, newStub(chainPlan(2)), "r20", testSettings(1)); encode(t, r.state) != encode(t, want) {
		t.Fatalf("the workflow's state differs from the local engine's:\n got %s\nwant %s", encode(t, r.state), encode(t, want))
	}
}

// TestJournalPagesAcrossAChain: a reader whose index is past a run that
// continued as new is sent on to the next run, not refused; an index past
// a run that did not continue is an error.
func TestJournalPagesAcrossAChain(t *testing.T) {
	entries := make([]loop.Entry, 3)
	if p, err := journalPage(entries, 10, true, 11); err != nil || len(p.Entries) != 2 || p.Next != 13 || !p.Continued {
		t.Fatalf("inside the run: %+v, %v", p, err)
	}
	if p, err := journalPage(entries, 10, true, 20); err != nil || len(p.Entries) != 0 || !p.Continued {
		t.Fatalf("past a continued run: want an empty page marked continued, got %+v, %v", p, err)
	}
	if _, err := journalPage(entries, 10, false, 20); err == nil {
		t.Fatal("past the last run of the chain: want an error")
	}
	if _, err := journalPage(entries, 10, true, 9); err == nil {
		t.Fatal("before the run: want an error")
	}
}

// slowAfterBudget holds t1's executor until t0's has run out of budget and
// the run has had time to pause, so the run's stop signal reaches t1's
// child while its executor runs.
type slowAfterBudget struct {
	*stubExec
	hit chan struct{}
}

func (x *slowAfterBudget) Execute(ctx context.Context, s loop.State, a loop.Action) loop.Event {
	switch a.ID {
	case x.budgetOn:
		defer close(x.hit)
	case "task/t1/a1/execute":
		<-x.hit
		time.Sleep(time.Second)
	}
	return x.stubExec.Execute(ctx, s, a)
}

// TestAPausedRunStopsItsTaskChildren: when one task's spending pauses the
// run, the run tells the other task's child, whose own copy of the state
// does not know, to start nothing new: t1's executor finishes, its gates
// never start.
func TestAPausedRunStopsItsTaskChildren(t *testing.T) {
	x := &slowAfterBudget{stubExec: newStub(chainPlan(2)), hit: make(chan struct{})}
	x.budgetOn = "task/t0/a1/execute"
	r := runWorkflow(t, x, RunInput{RunID: "r19", Settings: testSettings(2)}, nil)
	if r.err != nil || r.state.Status != loop.StatusPaused {
		t.Fatalf("status %s (%s), err %v", r.state.Status, r.state.Reason, r.err)
	}
	if x.completed["task/t1/a1/execute"] != 1 {
		t.Fatalf("t1's executor completed %d times; it was under way and should finish once", x.completed["task/t1/a1/execute"])
	}
	if n := x.calls["task/t1/a1/gates"]; n != 0 {
		t.Fatalf("t1's gates ran %d times after the run paused", n)
	}
}
