package temporal

import (
	"fmt"
	"sort"
	"time"

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

// DefaultContinueAfter is about 1000 actions, some 6000 history events:
// well inside Temporal's history limits, with payloads kept small by View.
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
// runs each as an activity, and folds every event through loop.Apply.
func RunWorkflow(ctx workflow.Context, in RunInput) (loop.State, error) {
	// Recorded once per history: the reducer behaviour this run uses.
	_ = workflow.GetVersion(ctx, ReducerChange, workflow.DefaultVersion, ReducerVersion)

	s := loop.New(in.RunID, in.Settings)
	if in.State != nil {
		s = *in.State
	}
	var entries []loop.Entry
	continued := false
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (loop.State, error) { return s, nil }); err != nil {
		return s, fmt.Errorf("register the %s query: %w", QueryStatus, err)
	}
	if err := workflow.SetQueryHandler(ctx, QueryJournal, func(from int) (JournalPage, error) {
		i := from - in.JournalBase
		if i < 0 || i > len(entries) {
			return JournalPage{}, fmt.Errorf("journal index %d is outside this run's %d..%d", from, in.JournalBase, in.JournalBase+len(entries))
		}
		return JournalPage{Entries: entries[i:], Next: in.JournalBase + len(entries), Continued: continued}, nil
	}); err != nil {
		return s, fmt.Errorf("register the %s query: %w", QueryJournal, err)
	}

	t := in.Timeouts.withDefaults()
	sel := workflow.NewSelector(ctx)
	approvals := workflow.GetSignalChannel(ctx, SignalApprove)
	var asking *loop.Action
	sel.AddReceive(approvals, func(c workflow.ReceiveChannel, _ bool) {
		var ap Approval
		c.Receive(ctx, &ap)
		if asking == nil {
			return // no question is open: an early or repeated answer
		}
		ev := loop.Event{ActionID: asking.ID, Type: loop.EvUserAnswered, Approve: ap.Approve, Detail: ap.Detail}
		if ap.Defer {
			ev = loop.Event{ActionID: asking.ID, Type: loop.EvPaused, Reason: pausedForApproval}
		}
		asking = nil
		entries = append(entries, loop.Entry{Event: &ev})
		s = loop.Apply(s, ev)
	})

	// A cancelled run stops waiting at once; see the drain below.
	sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})

	running := 0
	pending := map[string]workflow.Future{}
	start := func(a loop.Action) {
		if a.Type == loop.ActAsk {
			if in.WaitForApproval {
				asking = &a
				return
			}
			// The local engine's answer when nobody can approve: the run
			// pauses and the question stays in flight for the resume.
			ev := loop.Event{ActionID: a.ID, Type: loop.EvPaused, Reason: pausedForApproval}
			entries = append(entries, loop.Entry{Event: &ev})
			s = loop.Apply(s, ev)
			return
		}
		running++
		actx := workflow.WithActivityOptions(ctx, activityOptions(a, t))
		f := workflow.ExecuteActivity(actx, ActivityName, ActionInput{RunID: in.RunID, Action: a, View: View(s, a)})
		pending[a.ID] = f
		sel.AddFuture(f, func(f workflow.Future) {
			running--
			delete(pending, a.ID)
			var ev loop.Event
			if err := f.Get(ctx, &ev); err != nil {
				if ctx.Err() != nil || temporal.IsCanceledError(err) {
					// The run is being cancelled: like the local engine,
					// leave the action in flight for a resume.
					return
				}
				ev = eventOf(a, err)
			}
			ev.ActionID = a.ID
			entries = append(entries, loop.Entry{Event: &ev})
			s = loop.Apply(s, ev)
		})
	}
	for _, a := range loop.InFlightActions(s) {
		start(a)
	}
	limit := in.ContinueAfter
	if limit <= 0 {
		limit = DefaultContinueAfter
	}
	draining := func() bool {
		return len(entries) >= limit || workflow.GetInfo(ctx).GetContinueAsNewSuggested()
	}
	for {
		if ctx.Err() == nil && !draining() {
			for _, a := range loop.Next(s) {
				entries = append(entries, loop.Entry{Action: &a})
				s = loop.Issue(s, a)
				start(a)
			}
		}
		if running == 0 && (asking == nil || draining()) {
			break
		}
		sel.Select(ctx)
		if ctx.Err() != nil {
			break
		}
	}
	if ctx.Err() != nil {
		// Like the local engine, outcomes that arrive after a cancellation
		// are not folded: the actions stay in flight for a resume. Waiting
		// for the cancelled activities lets them stop cleanly.
		for _, id := range sortedKeys(pending) {
			_ = pending[id].Get(ctx, nil)
		}
		return s, temporal.NewCanceledError(fmt.Sprintf("run %s cancelled", in.RunID))
	}
	// Signals that arrived with the last outcomes are handled here, or the
	// new run would never see them.
	for sel.HasPending() {
		sel.Select(ctx)
	}
	if draining() && len(loop.Next(s)) > 0 || asking != nil {
		// More to do than this history should hold: carry the state (and
		// any open question, which is still in flight in it) to a new run.
		next := in
		next.State, next.JournalBase = &s, in.JournalBase+len(entries)
		continued = true
		return s, workflow.NewContinueAsNewError(ctx, WorkflowName, next)
	}
	return s, nil
}

func sortedKeys(m map[string]workflow.Future) []string {
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
