// Package engine drives the loop: it asks the reducer what to do, journals
// every action before starting it and every event before folding it, runs
// actions concurrently, and feeds their outcomes back. The reducer bounds
// how much runs at once (the jobs limit lives in its state).
package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-run/sluice/internal/loop"
)

// Executor carries out one action and reports its outcome. It must be
// idempotent: after a crash the same action may be executed again.
type Executor interface {
	Execute(ctx context.Context, s loop.State, a loop.Action) loop.Event
}

// Journal makes entries durable before the engine acts on them.
type Journal interface {
	// Record appends one entry and syncs it to disk.
	Record(e loop.Entry, at time.Time) error
	// Snapshot stores the folded state (state.json).
	Snapshot(s loop.State) error
}

// Engine runs a loop to rest: done, failed, or paused.
type Engine struct {
	Exec    Executor
	Journal Journal
	Now     func() time.Time
	// Observe, when set, sees every entry after it is journaled (live view,
	// --json). It must not block.
	Observe func(e loop.Entry, s loop.State)
}

type outcome struct {
	ev loop.Event
}

// Run drives s until nothing is in flight and the reducer wants nothing
// more. Actions in flight in s (issued before a crash, never answered) are
// executed again first. When ctx is cancelled, outcomes that arrive after
// the cancellation are not journaled, so a resume re-issues that work.
func (e *Engine) Run(ctx context.Context, s loop.State) (loop.State, error) {
	results := make(chan outcome)
	running := 0
	start := func(a loop.Action, snapshot loop.State) {
		running++
		go func() {
			ev := e.Exec.Execute(ctx, snapshot, a)
			ev.ActionID = a.ID
			results <- outcome{ev: ev}
		}()
	}
	for _, a := range loop.InFlightActions(s) {
		start(a, s)
	}
	var firstErr error
	for {
		if ctx.Err() == nil && firstErr == nil {
			for _, a := range loop.Next(s) {
				entry := loop.Entry{Action: &a}
				if err := e.Journal.Record(entry, e.Now()); err != nil {
					firstErr = fmt.Errorf("journal action %s: %w", a.ID, err)
					break
				}
				s = loop.Issue(s, a)
				e.observe(entry, s)
				start(a, s)
			}
		}
		if running == 0 {
			break
		}
		out := <-results
		running--
		if ctx.Err() != nil || firstErr != nil {
			// Shutting down: leave the action in flight for the resume.
			continue
		}
		ev := out.ev
		entry := loop.Entry{Event: &ev}
		if err := e.Journal.Record(entry, e.Now()); err != nil {
			firstErr = fmt.Errorf("journal event for %s: %w", ev.ActionID, err)
			continue
		}
		s = loop.Apply(s, ev)
		e.observe(entry, s)
		if err := e.Journal.Snapshot(s); err != nil {
			firstErr = fmt.Errorf("write state snapshot: %w", err)
		}
	}
	if firstErr != nil {
		return s, firstErr
	}
	if err := e.Journal.Snapshot(s); err != nil {
		return s, fmt.Errorf("write state snapshot: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return s, fmt.Errorf("run interrupted: %w", err)
	}
	return s, nil
}

// Emit journals and folds a run-level event (pause, resume) outside any
// action.
func (e *Engine) Emit(s loop.State, ev loop.Event) (loop.State, error) {
	entry := loop.Entry{Event: &ev}
	if err := e.Journal.Record(entry, e.Now()); err != nil {
		return s, fmt.Errorf("journal %s event: %w", ev.Type, err)
	}
	s = loop.Apply(s, ev)
	e.observe(entry, s)
	return s, e.Journal.Snapshot(s)
}

func (e *Engine) observe(entry loop.Entry, s loop.State) {
	if e.Observe != nil {
		e.Observe(entry, s)
	}
}
