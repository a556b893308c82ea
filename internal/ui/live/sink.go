// Package live is the terminal view of a run in progress: the phase, a row
// per task with its state, role, elapsed time, tokens, cost and current tool
// call, stalled delegations, and the run's totals against its budget.
//
// The engine feeds it through a Sink whose methods never block: each call
// folds its news into one latest-state slot under a short lock, and the
// renderer copies that slot at most ten times a second. A slow or stuck
// terminal therefore delays only the picture, never the run.
package live

import (
	"sync"
	"time"

	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/ui"
)

// Activity is live progress inside a delegation. It has the fields of the
// local engine's Activity, so one converts to the other.
type Activity struct {
	ActionID string
	TaskID   string
	Role     string
	// Tool is set when the agent calls a tool.
	Tool string
	// Tokens is the delegation's running token total, set after each model
	// call.
	Tokens int64
}

// Running is an action in flight as the view knows it.
type Running struct {
	Action  loop.Action
	Started time.Time
	// LastAt is the last sign of life: the start, a model call or a tool call.
	LastAt time.Time
	// Last says what that sign of life was.
	Last string
	// Tool is the most recent tool call, if any.
	Tool   string
	Tokens int64
}

// Span is when a task started and, once it is merged, failed or skipped,
// when it ended.
type Span struct {
	Start, End time.Time
}

// Snapshot is everything the view draws, copied out of the sink.
type Snapshot struct {
	// Version counts the updates folded in; it changes whenever the
	// snapshot does.
	Version uint64
	State   loop.State
	// Seen is false until the first entry arrives.
	Seen    bool
	Started time.Time
	// InFlight holds the actions in flight, by id.
	InFlight map[string]Running
	Tasks    map[string]Span
	// LastLine is the plain description of the latest meaningful entry.
	LastLine string
	// Notes are the latest free-form messages, oldest first.
	Notes []string
}

// maxNotes is how many notes the view keeps.
const maxNotes = 3

// Sink receives a run's entries and activity. Its methods are safe for
// concurrent use and never wait on the renderer.
type Sink struct {
	now func() time.Time

	mu   sync.Mutex
	snap Snapshot
}

// NewSink returns an empty sink reading the time from now.
func NewSink(now func() time.Time) *Sink {
	if now == nil {
		now = time.Now
	}
	return &Sink{now: now, snap: Snapshot{InFlight: map[string]Running{}, Tasks: map[string]Span{}}}
}

// Entry folds one journal entry and the state after it. It is the engine's
// Observe hook.
func (k *Sink) Entry(e loop.Entry, s loop.State) {
	// Described outside the lock: it may decode an event's output.
	line := ui.Describe(e, s)
	at := k.now()
	k.mu.Lock()
	defer k.mu.Unlock()
	sn := &k.snap
	sn.Version++
	sn.State = s
	if !sn.Seen {
		sn.Seen, sn.Started = true, at
	}
	if line != "" {
		sn.LastLine = line
	}
	switch {
	case e.Action != nil:
		a := *e.Action
		sn.InFlight[a.ID] = Running{Action: a, Started: at, LastAt: at, Last: "started"}
		if a.TaskID != "" {
			if sp, ok := sn.Tasks[a.TaskID]; !ok || sp.Start.IsZero() {
				sn.Tasks[a.TaskID] = Span{Start: at}
			}
		}
	case e.Event != nil:
		id := e.Event.ActionID
		if r, ok := sn.InFlight[id]; ok {
			delete(sn.InFlight, id)
			if t := s.Tasks[r.Action.TaskID]; t != nil && isTerminal(t.Status) {
				sp := sn.Tasks[t.ID]
				sp.End = at
				sn.Tasks[t.ID] = sp
			}
		}
	}
	// Tasks that ended without an action of their own (skipped) get an end.
	for id, t := range s.Tasks {
		if isTerminal(t.Status) {
			if sp := sn.Tasks[id]; sp.End.IsZero() && t.Status == loop.TaskSkipped {
				sp.End = at
				sn.Tasks[id] = sp
			}
		}
	}
}

// Activity folds a sign of life from inside a delegation. Activity for an
// action that is not in flight (it already ended) is dropped.
func (k *Sink) Activity(a Activity) {
	at := k.now()
	k.mu.Lock()
	defer k.mu.Unlock()
	r, ok := k.snap.InFlight[a.ActionID]
	if !ok {
		return
	}
	k.snap.Version++
	r.LastAt = at
	if a.Tool != "" {
		r.Tool, r.Last = a.Tool, "tool call "+a.Tool
	} else {
		r.Tokens, r.Last = a.Tokens, "model reply"
	}
	k.snap.InFlight[a.ActionID] = r
}

// Note keeps a free-form message for the view.
func (k *Sink) Note(msg string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.snap.Version++
	notes := append(k.snap.Notes, msg)
	if len(notes) > maxNotes {
		notes = notes[len(notes)-maxNotes:]
	}
	// A fresh slice each time: snapshots share the old one.
	k.snap.Notes = append([]string(nil), notes...)
}

// Snapshot copies the latest state out of the sink.
func (k *Sink) Snapshot() Snapshot {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.snap
	c.InFlight = make(map[string]Running, len(k.snap.InFlight))
	for id, r := range k.snap.InFlight {
		c.InFlight[id] = r
	}
	c.Tasks = make(map[string]Span, len(k.snap.Tasks))
	for id, sp := range k.snap.Tasks {
		c.Tasks[id] = sp
	}
	return c
}

// Version is the sink's update count, cheaper than a Snapshot when nothing
// changed.
func (k *Sink) Version() uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.snap.Version
}

func isTerminal(st loop.TaskStatus) bool {
	return st == loop.TaskMerged || st == loop.TaskFailed || st == loop.TaskSkipped
}
