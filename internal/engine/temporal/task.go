package temporal

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/sluice-run/sluice/internal/loop"
)

// Names of the task child workflow.
const (
	// TaskWorkflowName is the name TaskWorkflow is registered under. The
	// run workflow starts one per task (and again per task attempt left in
	// flight by a cancellation) with the id <run workflow id>/<first action
	// id>. Like the run workflow it answers QueryJournal, with the entries
	// it has made so far, so a starter can show a running task's progress.
	TaskWorkflowName = "TaskWorkflow"
	// SignalStop tells a task workflow to issue nothing more: what runs
	// finishes, and the workflow returns. The run workflow sends it when
	// the run stops running (a budget pause).
	SignalStop = "stop"
)

// TaskInput starts a task's child workflow.
type TaskInput struct {
	RunID  string `json:"run_id"`
	TaskID string `json:"task_id"`
	// View is the run's state when the child starts, as View makes it for
	// the first action: the task in full, the others by status.
	View loop.State `json:"view"`
	// Actions are the task's actions the run workflow has issued and that
	// this child runs first: normally the attempt's worktree, on a resume
	// any stage left in flight.
	Actions  []loop.Action `json:"actions"`
	Timeouts Timeouts      `json:"timeouts,omitzero"`
}

// TaskResult is what a task's child workflow did, for the run workflow to
// fold and journal.
type TaskResult struct {
	// Entries are the actions the child issued and the events it folded,
	// in its order. The input actions' issue entries are the parent's and
	// are not repeated; actions still running when the child was cancelled
	// appear without an event, in flight.
	Entries []loop.Entry `json:"entries"`
}

// TaskWorkflow runs one task's pre-merge stages (worktree, execute, gates,
// review, verify, and the retries of failed attempts) with the same
// reducer as the run workflow, on its own copy of the state, so the run's
// history holds a few events per task instead of a few per stage. It ends
// when nothing of its task is in flight or left to issue: the task waits
// for its merge (which the run workflow does, holding the single merge
// slot), has failed, or the run is paused. Cancelled, it returns what it
// completed instead of failing, so the run loses no finished work.
func TaskWorkflow(ctx workflow.Context, in TaskInput) (TaskResult, error) {
	_ = workflow.GetVersion(ctx, ReducerChange, workflow.DefaultVersion, ReducerVersion)
	tr := &taskRunner{ctx: ctx, in: in, t: in.Timeouts.withDefaults(), s: in.View, pending: map[string]workflow.Future{}}
	if err := workflow.SetQueryHandler(ctx, QueryJournal, func(from int) (JournalPage, error) {
		if from < 0 || from > len(tr.entries) {
			return JournalPage{}, fmt.Errorf("journal index %d is outside the task's 0..%d", from, len(tr.entries))
		}
		return JournalPage{Entries: tr.entries[from:], Next: len(tr.entries)}, nil
	}); err != nil {
		return TaskResult{}, fmt.Errorf("register the %s query: %w", QueryJournal, err)
	}
	tr.sel = workflow.NewSelector(ctx)
	tr.sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
	stop := workflow.GetSignalChannel(ctx, SignalStop)

	for _, a := range in.Actions {
		tr.s = loop.Issue(tr.s, a)
	}
	for _, a := range in.Actions {
		tr.start(a)
	}
	stopped := false
	for {
		// A stop that arrived with the last outcome counts before
		// anything new is issued.
		for stop.ReceiveAsync(nil) {
			stopped = true
		}
		if ctx.Err() == nil && !stopped {
			for _, a := range tr.next() {
				tr.record(loop.Entry{Action: &a})
				tr.start(a)
			}
		}
		if len(tr.pending) == 0 || ctx.Err() != nil {
			break
		}
		tr.sel.Select(ctx)
	}
	if ctx.Err() != nil {
		tr.drain()
	}
	return TaskResult{Entries: tr.entries}, nil
}

// taskRunner is one run of TaskWorkflow.
type taskRunner struct {
	ctx     workflow.Context
	in      TaskInput
	t       Timeouts
	sel     workflow.Selector
	s       loop.State
	entries []loop.Entry
	// pending holds the running activities by action id.
	pending map[string]workflow.Future
}

// next is what the reducer wants of this task now. The merge is left to
// the run workflow, and other tasks are not this child's to start.
func (tr *taskRunner) next() []loop.Action {
	var out []loop.Action
	for _, a := range loop.Next(tr.s) {
		if a.TaskID == tr.in.TaskID && a.Type != loop.ActMerge {
			out = append(out, a)
		}
	}
	return out
}

func (tr *taskRunner) record(e loop.Entry) {
	tr.entries = append(tr.entries, e)
	switch {
	case e.Action != nil:
		tr.s = loop.Issue(tr.s, *e.Action)
	case e.Event != nil:
		tr.s = loop.Apply(tr.s, *e.Event)
	}
}

func (tr *taskRunner) start(a loop.Action) {
	opts := activityOptions(a, tr.t)
	// On a cancellation the child waits for the activity to end, so an
	// outcome that was already on its way is kept rather than run again.
	opts.WaitForCancellation = true
	actx := workflow.WithActivityOptions(tr.ctx, opts)
	f := workflow.ExecuteActivity(actx, ActivityName, ActionInput{RunID: tr.in.RunID, Action: a, View: View(tr.s, a)})
	tr.pending[a.ID] = f
	tr.sel.AddFuture(f, func(f workflow.Future) {
		delete(tr.pending, a.ID)
		tr.fold(a, f)
	})
}

// fold records an activity's outcome. A cancelled action (or any failure
// once the child is cancelled, such as a timeout of a worker that died)
// stays in flight for a resume; budget and gate failures carry their
// event, which is a real outcome and is kept.
func (tr *taskRunner) fold(a loop.Action, f workflow.Future) {
	var ev loop.Event
	if err := f.Get(tr.ctx, &ev); err != nil {
		if !carriesEvent(err) && (tr.ctx.Err() != nil || temporal.IsCanceledError(err)) {
			return
		}
		ev = eventOf(a, err)
	}
	ev.ActionID = a.ID
	tr.record(loop.Entry{Event: &ev})
}

// drain waits, after a cancellation, for the activities still running and
// keeps the outcomes that completed.
func (tr *taskRunner) drain() {
	for _, id := range sortedKeys(tr.pending) {
		f := tr.pending[id]
		delete(tr.pending, id)
		tr.fold(tr.s.InFlight[id], f)
	}
}
