// Package temporal runs the loop as a Temporal workflow: the workflow folds
// events through the same pure reducer as the local engine (loop.Next,
// loop.Issue, loop.Apply), and every action runs as an activity on any
// worker that has the repository. Each task's stages before its merge run
// in a child workflow (TaskWorkflow) that drives the same reducer on its
// own copy of the state, so the run's history grows by a few events per
// task rather than per stage. Because the reducer is pure, the workflows
// are deterministic by construction; Temporal adds durable history,
// retries, heartbeats and resumption on another machine.
package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/sluice-run/sluice/internal/engine"
	"github.com/sluice-run/sluice/internal/loop"
)

// Error types an activity fails with. The workflow's retry policy lists
// the first two as non-retryable: retrying cannot fix them, and the
// reducer (not Temporal) decides whether a task gets another attempt.
const (
	// ErrTypeBudget: the run's budget ran out during the action. The error
	// carries the event, which pauses the run.
	ErrTypeBudget = "BudgetExhausted"
	// ErrTypeGate: a task's quality gates failed. The error carries the
	// event, which fails the attempt with the gate output.
	ErrTypeGate = "GateFailed"
	// ErrTypeSetup: the worker cannot build an executor for the run
	// (missing repository, run directory or configuration). It is retried
	// a bounded number of times, since another worker may be set up right.
	ErrTypeSetup = "WorkerSetup"
	// ErrTypeSync: a worker in a clone of its own could not fetch the run
	// before the action or publish its result after it; it is retried.
	ErrTypeSync = "WorkerSync"
	// ErrTypeInterrupted: the action was cut short (the worker is shutting
	// down or the call was cancelled); Temporal retries it, on this worker
	// or another.
	ErrTypeInterrupted = "Interrupted"
)

// ActivityName is the name the action activity is registered under.
const ActivityName = "ExecuteAction"

// ActionInput is an activity's payload: references and the small part of
// the state the action needs (see View), never transcripts or diffs, which
// the executor writes to the run directory.
type ActionInput struct {
	RunID  string      `json:"run_id"`
	Action loop.Action `json:"action"`
	View   loop.State  `json:"view"`
}

// ExecutorSource gives the executor that runs a run's actions on this
// worker. view is the state the first action arrived with (its budget and
// spending seed the executor's budget account).
type ExecutorSource interface {
	Executor(ctx context.Context, runID string, view loop.State) (engine.Executor, error)
}

// Activities holds the worker side: it runs actions with an executor.
type Activities struct {
	Source ExecutorSource
	// HeartbeatEvery is how often a running action heartbeats; zero means
	// three times per heartbeat timeout.
	HeartbeatEvery time.Duration
}

// ExecuteAction runs one action and returns its event. Budget exhaustion
// and failed gates come back as non-retryable errors carrying the event
// (the workflow applies it); an interrupted action is a retryable error.
func (a *Activities) ExecuteAction(ctx context.Context, in ActionInput) (loop.Event, error) {
	// Heartbeats start first: preparing the executor can take a while (a
	// worker in a clone fetches the run), and a silent worker would have
	// the action taken from it and run twice.
	stop := a.heartbeat(ctx, in.Action.ID)
	defer stop()
	x, err := a.Source.Executor(ctx, in.RunID, in.View)
	if err != nil {
		// Retryable: another worker of the queue may be set up right.
		return loop.Event{}, temporal.NewApplicationErrorWithCause(
			fmt.Sprintf("prepare the executor of run %s on this worker: %v", in.RunID, err), ErrTypeSetup, err)
	}
	var ev loop.Event
	var syncErr error
	if fx, ok := x.(FallibleExecutor); ok {
		ev, syncErr = fx.TryExecute(ctx, in.View, in.Action)
	} else {
		ev = x.Execute(ctx, in.View, in.Action)
	}
	if syncErr != nil {
		// Not the attempt's fault either: run the action again, here or
		// on another worker.
		return loop.Event{}, temporal.NewApplicationErrorWithCause(
			fmt.Sprintf("action %s on this worker: %v", in.Action.ID, syncErr), ErrTypeSync, syncErr)
	}
	ev.ActionID = in.Action.ID
	return classify(ctx, ev)
}

// heartbeat tells Temporal this worker is alive while a long model call or
// test suite runs; a crashed worker stops beating and the action is
// retried elsewhere after the heartbeat timeout. stop ends the beats and
// waits for them to end.
func (a *Activities) heartbeat(ctx context.Context, detail string) (stop func()) {
	every := a.HeartbeatEvery
	if every <= 0 {
		// Three beats per heartbeat timeout: one lost beat is no crash.
		every = 10 * time.Second
		if ht := activity.GetInfo(ctx).HeartbeatTimeout; ht > 0 {
			every = ht / 3
		}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, detail)
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// FallibleExecutor is an executor that can fail to carry an action out at
// all, as a worker in a clone of its own does when it cannot bring the
// clone up to date or publish what the action made. Such an action is
// retried by Temporal, not failed.
type FallibleExecutor interface {
	TryExecute(ctx context.Context, s loop.State, a loop.Action) (loop.Event, error)
}

// classify turns the events Temporal should treat as failures into typed
// errors.
func classify(ctx context.Context, ev loop.Event) (loop.Event, error) {
	switch {
	case ev.Type == loop.EvDelegationFail && ev.Reason == loop.ReasonBudget:
		return loop.Event{}, temporal.NewNonRetryableApplicationError("budget exhausted: "+ev.Detail, ErrTypeBudget, nil, ev)
	case ev.Type == loop.EvGatesEvaluated && !ev.Passed && len(ev.Changed) > 0:
		return loop.Event{}, temporal.NewNonRetryableApplicationError("quality gates failed in the task's worktree", ErrTypeGate, nil, ev)
	case ev.Type == loop.EvDelegationFail && ev.Reason == loop.ReasonCancelled,
		ev.Type == loop.EvActionError && ctx.Err() != nil:
		// Not the attempt's fault: run it again rather than fail it.
		return loop.Event{}, temporal.NewApplicationError("action interrupted: "+ev.Detail, ErrTypeInterrupted)
	}
	return ev, nil
}

// eventOf recovers the event an activity failed with, or makes one that
// fails the action when its retries ran out.
func eventOf(a loop.Action, err error) loop.Event {
	if ev, ok := carriedEvent(err); ok {
		ev.ActionID = a.ID
		return ev
	}
	if a.Type == loop.ActDelegate {
		return loop.Event{ActionID: a.ID, Type: loop.EvDelegationFail, Reason: "activity_failed", Detail: err.Error()}
	}
	return loop.Event{ActionID: a.ID, Type: loop.EvActionError, Detail: err.Error()}
}

// carriedEvent is the event a budget or gate failure carries.
func carriedEvent(err error) (loop.Event, bool) {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && (appErr.Type() == ErrTypeBudget || appErr.Type() == ErrTypeGate) && appErr.HasDetails() {
		var ev loop.Event
		if appErr.Details(&ev) == nil {
			return ev, true
		}
	}
	return loop.Event{}, false
}

func carriesEvent(err error) bool {
	_, ok := carriedEvent(err)
	return ok
}

// View is the part of s an action needs: the plan, research, critiques and
// settings, the action's own task in full, and only the id and status of
// every other task (the executor's state summary counts them). Keeping the
// other tasks' results out keeps every activity's payload, and so the
// workflow's history, small.
func View(s loop.State, a loop.Action) loop.State {
	v := s
	v.InFlight = nil
	v.UsageByRole = nil
	v.FinalGates = nil
	v.BaselineReport = ""
	if s.Tasks != nil {
		v.Tasks = make(map[string]*loop.TaskState, len(s.Tasks))
		for id, t := range s.Tasks {
			if id == a.TaskID {
				c := *t
				v.Tasks[id] = &c
				continue
			}
			v.Tasks[id] = &loop.TaskState{ID: t.ID, Status: t.Status, Attempt: t.Attempt, Wave: t.Wave}
		}
	}
	return v
}
