package temporal

import (
	"fmt"
	"sort"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/sluice-run/sluice/internal/loop"
)

// Names clients use to talk to a running workflow.
const (
	WorkflowName = "RunWorkflow"
	// QueryStatus returns the workflow's folded loop.State.
	QueryStatus = "status"
	// QueryJournal returns the journal entries from an index on (a
	// JournalPage), so the starter can write the run directory.
	QueryJournal = "journal"
	// SignalApprove answers the plan approval (an Approval).
	SignalApprove = "approve"
	// DefaultTaskQueue is the task queue workers poll unless told otherwise.
	DefaultTaskQueue = "sluice"
)

// ReducerChange is the workflow.GetVersion change id of the reducer's
// behaviour. A change to loop.Next or loop.Apply that would make a
// recorded history replay differently raises ReducerVersion and keeps the
// old behaviour for histories recorded at a lower version.
const (
	ReducerChange  = "loop-reducer"
	ReducerVersion = 1
)

// TaskChildChange is the workflow.GetVersion change id of running each
// task's pre-merge stages in a TaskWorkflow child, which keeps the run's
// history to a few events per task attempt instead of a few per stage.
// Histories recorded before it (workflow.DefaultVersion) run every stage
// as an activity of the run workflow, and still replay that way.
const (
	TaskChildChange  = "task-child-workflow"
	TaskChildVersion = 1
)

// RunInput starts (or continues) a run's workflow. It holds the run's
// settings and, on resume, the state folded from the journal: the reducer's
// whole memory, no transcripts.
type RunInput struct {
	RunID    string        `json:"run_id"`
	Settings loop.Settings `json:"settings"`
	// State continues a run from its journal; nil starts a new run.
	State *loop.State `json:"state,omitempty"`
	// WaitForApproval makes the plan approval wait for the approve signal;
	// otherwise the run pauses there, as the local engine does without a
	// terminal.
	WaitForApproval bool `json:"wait_for_approval,omitempty"`
	// Timeouts override the activity timeouts (zero fields: defaults).
	Timeouts Timeouts `json:"timeouts,omitzero"`
	// ContinueAfter bounds each history: after this many journal entries
	// (zero: DefaultContinueAfter), or when the server suggests it, the
	// workflow stops issuing work, lets what runs finish, and continues as
	// new with the folded state. The reducer's state is its whole memory,
	// so nothing else needs carrying over.
	ContinueAfter int `json:"continue_after,omitempty"`
	// JournalBase is the number of journal entries earlier runs of the
	// chain made; the journal query numbers entries from it.
	JournalBase int `json:"journal_base,omitempty"`
}

// DefaultContinueAfter is about 1000 actions, at most some 6000 history
// events (when every action is an activity of the run; a task child's
// entries cost the run about three): well inside Temporal's history
// limits, with payloads kept small by View.
const DefaultContinueAfter = 2000

// Timeouts bound each action's activity.
type Timeouts struct {
	// Delegation is the most one delegation may take (start to close).
	Delegation time.Duration `json:"delegation,omitempty"`
	// Action is the most a worktree, gate, merge or baseline may take.
	Action time.Duration `json:"action,omitempty"`
	// Heartbeat is how long a silent worker is trusted before its action
	// is retried elsewhere.
	Heartbeat time.Duration `json:"heartbeat,omitempty"`
	// Attempts bounds Temporal's retries of one action.
	Attempts int32 `json:"attempts,omitempty"`
}

func (t Timeouts) withDefaults() Timeouts {
	if t.Delegation <= 0 {
		t.Delegation = 2 * time.Hour
	}
	if t.Action <= 0 {
		t.Action = time.Hour
	}
	if t.Heartbeat <= 0 {
		t.Heartbeat = time.Minute
	}
	if t.Attempts <= 0 {
		t.Attempts = 3
	}
	return t
}

// Approval is the approve signal's payload.
type Approval struct {
	Approve bool   `json:"approve"`
	Detail  string `json:"detail,omitempty"`
	// Defer leaves the question open: the run pauses, as when no one can
	// answer, and `sluice resume --yes` approves it later.
	Defer bool `json:"defer,omitempty"`
}

// JournalPage is a slice of the workflow's journal entries.
type JournalPage struct {
	Entries []loop.Entry `json:"entries"`
	// Next is the index to ask for next time.
	Next int `json:"next"`
	// Continued says this run of the workflow continued as new: the
	// entries from Next on are in the next run of the chain.
	Continued bool `json:"continued,omitempty"`
}

// pausedForApproval is the local engine's reason when no one can approve.
const pausedForApproval = "the plan awaits approval: read plan.md, then run `sluice resume --yes` to approve it"

// RunWorkflow drives a run to rest (done, failed or paused) exactly as
// engine.Engine does: actions in flight in the input state run again first;
// then, until nothing is running, it issues whatever loop.Next asks for,
// runs each, and folds every event through loop.Apply. Baseline, research,
// planning, critique, merges, gate points and the final verification run
// as activities of this workflow; each task's pre-merge stages run in a
// TaskWorkflow child (see TaskChildChange), whose journal entries this
// workflow folds, in the child's order, when the child returns.
func RunWorkflow(ctx workflow.Context, in RunInput) (loop.State, error) {
	// Recorded once per history: the reducer behaviour this run uses.
	_ = workflow.GetVersion(ctx, ReducerChange, workflow.DefaultVersion, ReducerVersion)
	// Histories recorded before children existed keep running every task
	// stage as an activity of this workflow.
	childTasks := workflow.GetVersion(ctx, TaskChildChange, workflow.DefaultVersion, TaskChildVersion) >= TaskChildVersion

	r := &runner{
		ctx:        ctx,
		in:         in,
		t:          in.Timeouts.withDefaults(),
		s:          loop.New(in.RunID, in.Settings),
		childTasks: childTasks,
		pending:    map[string]workflow.Future{},
		children:   map[string]*child{},
	}
	if in.State != nil {
		r.s = *in.State
	}
	if err := r.setQueryHandlers(); err != nil {
		return r.s, err
	}
	r.sel = workflow.NewSelector(ctx)
	r.sel.AddReceive(workflow.GetSignalChannel(ctx, SignalApprove), r.approve)
	// A cancelled run stops waiting at once; see the drain below.
	r.sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})

	r.startInFlight()
	limit := in.ContinueAfter
	if limit <= 0 {
		limit = DefaultContinueAfter
	}
	draining := func() bool {
		return len(r.entries) >= limit || workflow.GetInfo(ctx).GetContinueAsNewSuggested()
	}
	for {
		if ctx.Err() == nil && !draining() {
			for _, a := range loop.Next(r.s) {
				r.record(loop.Entry{Action: &a})
				r.start(a)
			}
		}
		// Children count as running: the workflow continues as new only
		// once every child has returned and been folded.
		if r.running == 0 && (r.asking == nil || draining()) {
			break
		}
		r.sel.Select(ctx)
		if ctx.Err() != nil {
			break
		}
		r.stopChildrenOnceStopped()
	}
	if ctx.Err() != nil {
		return r.s, r.cancelled()
	}
	// Signals that arrived with the last outcomes are handled here, or the
	// new run would never see them.
	for r.sel.HasPending() {
		r.sel.Select(ctx)
	}
	if draining() && len(loop.Next(r.s)) > 0 || r.asking != nil {
		// More to do than this history should hold: carry the state (and
		// any open question, which is still in flight in it) to a new run.
		next := in
		next.State, next.JournalBase = &r.s, in.JournalBase+len(r.entries)
		r.continued = true
		return r.s, workflow.NewContinueAsNewError(ctx, WorkflowName, next)
	}
	return r.s, nil
}

// runner is one run of RunWorkflow: the folded state, the journal entries
// it made, and the work it is waiting for.
type runner struct {
	ctx        workflow.Context
	in         RunInput
	t          Timeouts
	sel        workflow.Selector
	s          loop.State
	entries    []loop.Entry
	continued  bool
	childTasks bool
	// asking is the approval question waiting for the approve signal.
	asking *loop.Action
	// running counts activities and children not yet folded.
	running int
	// pending holds the running activities by action id.
	pending map[string]workflow.Future
	// children holds the running task children by task id.
	children map[string]*child
	// stopSent says the running children were told to stop issuing.
	stopSent bool
}

// child is a running TaskWorkflow and the actions it was started with.
type child struct {
	f       workflow.ChildWorkflowFuture
	actions []loop.Action
}

func (r *runner) setQueryHandlers() error {
	if err := workflow.SetQueryHandler(r.ctx, QueryStatus, func() (loop.State, error) { return r.s, nil }); err != nil {
		return fmt.Errorf("register the %s query: %w", QueryStatus, err)
	}
	if err := workflow.SetQueryHandler(r.ctx, QueryJournal, func(from int) (JournalPage, error) {
		return journalPage(r.entries, r.in.JournalBase, r.continued, from)
	}); err != nil {
		return fmt.Errorf("register the %s query: %w", QueryJournal, err)
	}
	return nil
}

// journalPage answers the journal query of a run whose entries are
// numbered from base. An index past them, in a run that continued as new,
// is in a later run of the chain: the answer is an empty page marked
// Continued, so a reader catching up from the first run (a starter
// re-attaching after its predecessor died) moves on to the next.
func journalPage(entries []loop.Entry, base int, continued bool, from int) (JournalPage, error) {
	i := from - base
	switch {
	case i >= 0 && i <= len(entries):
		return JournalPage{Entries: entries[i:], Next: base + len(entries), Continued: continued}, nil
	case i > len(entries) && continued:
		return JournalPage{Next: from, Continued: true}, nil
	}
	return JournalPage{}, fmt.Errorf("journal index %d is outside this run's %d..%d", from, base, base+len(entries))
}

// record journals one entry and folds it into the state.
func (r *runner) record(e loop.Entry) {
	r.entries = append(r.entries, e)
	switch {
	case e.Action != nil:
		r.s = loop.Issue(r.s, *e.Action)
	case e.Event != nil:
		r.s = loop.Apply(r.s, *e.Event)
	}
}

func (r *runner) approve(c workflow.ReceiveChannel, _ bool) {
	var ap Approval
	c.Receive(r.ctx, &ap)
	if r.asking == nil {
		return // no question is open: an early or repeated answer
	}
	ev := loop.Event{ActionID: r.asking.ID, Type: loop.EvUserAnswered, Approve: ap.Approve, Detail: ap.Detail}
	if ap.Defer {
		ev = loop.Event{ActionID: r.asking.ID, Type: loop.EvPaused, Reason: pausedForApproval}
	}
	r.asking = nil
	r.record(loop.Entry{Event: &ev})
}

// startInFlight runs again what the input state has in flight. A task's
// stages in flight go to one child per task.
func (r *runner) startInFlight() {
	var tasks []string
	byTask := map[string][]loop.Action{}
	for _, a := range loop.InFlightActions(r.s) {
		if !r.inChild(a) {
			r.start(a)
			continue
		}
		if byTask[a.TaskID] == nil {
			tasks = append(tasks, a.TaskID)
		}
		byTask[a.TaskID] = append(byTask[a.TaskID], a)
	}
	for _, id := range tasks {
		r.startChild(id, byTask[id])
	}
}

// inChild says whether a runs in its task's child workflow: every task
// stage but the merge, which needs the run's single merge slot.
func (r *runner) inChild(a loop.Action) bool {
	return r.childTasks && a.TaskID != "" && a.Type != loop.ActMerge
}

func (r *runner) start(a loop.Action) {
	switch {
	case a.Type == loop.ActAsk:
		if r.in.WaitForApproval {
			r.asking = &a
			return
		}
		// The local engine's answer when nobody can approve: the run
		// pauses and the question stays in flight for the resume.
		ev := loop.Event{ActionID: a.ID, Type: loop.EvPaused, Reason: pausedForApproval}
		r.record(loop.Entry{Event: &ev})
	case r.inChild(a):
		if _, busy := r.children[a.TaskID]; busy {
			// The running child owns the task; what it leaves in flight
			// is started again when it returns (see restartTask).
			return
		}
		r.startChild(a.TaskID, []loop.Action{a})
	default:
		r.startActivity(a)
	}
}

func (r *runner) startActivity(a loop.Action) {
	r.running++
	actx := workflow.WithActivityOptions(r.ctx, activityOptions(a, r.t))
	f := workflow.ExecuteActivity(actx, ActivityName, ActionInput{RunID: r.in.RunID, Action: a, View: View(r.s, a)})
	r.pending[a.ID] = f
	r.sel.AddFuture(f, func(f workflow.Future) {
		r.running--
		delete(r.pending, a.ID)
		var ev loop.Event
		if err := f.Get(r.ctx, &ev); err != nil {
			if r.ctx.Err() != nil || temporal.IsCanceledError(err) {
				// The run is being cancelled: like the local engine,
				// leave the action in flight for a resume.
				return
			}
			ev = eventOf(a, err)
		}
		ev.ActionID = a.ID
		r.record(loop.Entry{Event: &ev})
	})
}

// startChild runs a task's stages, from the actions given (already issued
// here), in a TaskWorkflow. Its id is derived from the first action, so it
// is unique within the run and the same on replay.
func (r *runner) startChild(taskID string, actions []loop.Action) {
	info := workflow.GetInfo(r.ctx)
	cctx := workflow.WithChildOptions(r.ctx, workflow.ChildWorkflowOptions{
		WorkflowID: info.WorkflowExecution.ID + "/" + actions[0].ID,
		TaskQueue:  info.TaskQueueName,
		// A parent that goes away takes its children with it; a cancelled
		// parent waits for them to return what they completed.
		ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		WaitForCancellation: true,
	})
	f := workflow.ExecuteChildWorkflow(cctx, TaskWorkflowName, TaskInput{
		RunID:    r.in.RunID,
		TaskID:   taskID,
		View:     View(r.s, actions[0]),
		Actions:  actions,
		Timeouts: r.in.Timeouts,
	})
	r.running++
	c := &child{f: f, actions: actions}
	r.children[taskID] = c
	r.sel.AddFuture(f, func(workflow.Future) {
		r.running--
		delete(r.children, taskID)
		r.childDone(c)
		if r.ctx.Err() == nil {
			r.restartTask(taskID)
		}
	})
}

// childDone folds what a child returned, in the child's order. A child
// that could not run at all fails its actions as an activity that ran out
// of retries does; one cancelled before it ran leaves them in flight.
func (r *runner) childDone(c *child) {
	var res TaskResult
	err := c.f.Get(r.ctx, &res)
	if err != nil {
		if r.ctx.Err() != nil || temporal.IsCanceledError(err) {
			return // left in flight for a resume
		}
		for _, a := range c.actions {
			ev := eventOf(a, err)
			r.record(loop.Entry{Event: &ev})
		}
		return
	}
	for _, e := range res.Entries {
		r.record(e)
	}
}

// restartTask starts a new child for a task stage still in flight after
// its child returned: one the child was cancelled in (by an operator; the
// run itself goes on), or one issued while the child ran.
func (r *runner) restartTask(taskID string) {
	var again []loop.Action
	for _, a := range loop.InFlightActions(r.s) {
		if a.TaskID == taskID && r.inChild(a) {
			again = append(again, a)
		}
	}
	if len(again) > 0 {
		r.startChild(taskID, again)
	}
}

// stopChildrenOnceStopped tells the running children to stop issuing once
// the run stops running (a budget pause, most often from another task's
// spending, which a child's own copy of the state does not see): as in
// the local engine, work under way finishes and nothing new starts. A
// child started later sees the stopped status in its view.
func (r *runner) stopChildrenOnceStopped() {
	if r.stopSent || r.s.Status == loop.StatusRunning || len(r.children) == 0 {
		return
	}
	r.stopSent = true
	for _, id := range sortedKeys(r.children) {
		r.stopChild(r.children[id])
	}
}

func (r *runner) stopChild(c *child) {
	// Signalling waits for the child to start; that wait must not hold up
	// the run's own loop.
	workflow.Go(r.ctx, func(gctx workflow.Context) {
		_ = c.f.SignalChildWorkflow(gctx, SignalStop, nil).Get(gctx, nil)
	})
}

// cancelled ends a cancelled run. Like the local engine, activity outcomes
// that arrive after a cancellation are not folded: the actions stay in
// flight for a resume; waiting for the cancelled activities lets them stop
// cleanly. Children return what they completed before they stopped, and
// that is folded, so no finished delegation is run again.
func (r *runner) cancelled() error {
	for _, id := range sortedKeys(r.pending) {
		_ = r.pending[id].Get(r.ctx, nil)
	}
	for _, id := range sortedKeys(r.children) {
		r.childDone(r.children[id])
	}
	return temporal.NewCanceledError(fmt.Sprintf("run %s cancelled", r.in.RunID))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// activityOptions bounds one action: delegations may run long and
// heartbeat; every action is retried a bounded number of times, never for
// budget or gate failures.
func activityOptions(a loop.Action, t Timeouts) workflow.ActivityOptions {
	timeout := t.Action
	if a.Type == loop.ActDelegate {
		timeout = t.Delegation
	}
	return workflow.ActivityOptions{
		ActivityID:          a.ID,
		StartToCloseTimeout: timeout,
		HeartbeatTimeout:    t.Heartbeat,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        t.Attempts,
			NonRetryableErrorTypes: []string{ErrTypeBudget, ErrTypeGate},
		},
	}
}
