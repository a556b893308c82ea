package live

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/report/fixture"
	"github.com/sluice-run/sluice/internal/store"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// replay feeds a fixture journal to the sink the way the engine would, with
// the clock at each record's time, and returns the final state.
func replay(t *testing.T, k *Sink, c *clock, r fixture.Run) loop.State {
	t.Helper()
	s := loop.New(r.Meta.RunID, r.Meta.Settings)
	for _, rec := range r.Records {
		c.set(rec.Time)
		var e loop.Entry
		switch rec.Kind {
		case store.KindAction:
			var a loop.Action
			if err := json.Unmarshal(rec.Data, &a); err != nil {
				t.Fatal(err)
			}
			e.Action = &a
			s = loop.Issue(s, a)
		case store.KindEvent:
			var ev loop.Event
			if err := json.Unmarshal(rec.Data, &ev); err != nil {
				t.Fatal(err)
			}
			e.Event = &ev
			s = loop.Apply(s, ev)
		}
		k.Entry(e, s)
	}
	return s
}

// parallelRun stops mid-execution with several tasks in flight at once.
func parallelRun(t *testing.T) fixture.Run {
	t.Helper()
	r := fixture.Simulate(fixture.Options{Tasks: 8, Jobs: 3, StopAfter: 40, FailGates: []string{"t1"}})
	running := 0
	for _, id := range r.State.Order {
		if r.State.Tasks[id].Status == loop.TaskRunning {
			running++
		}
	}
	if r.State.Phase != loop.PhaseExecute || running < 2 {
		t.Fatalf("fixture should stop with tasks running in parallel: phase %s, %d running", r.State.Phase, running)
	}
	return r
}

func update(m *model, msg tea.Msg) *model {
	next, _ := m.Update(msg)
	return next.(*model)
}

func TestViewShowsParallelTasksWithStateRoleTokensAndTool(t *testing.T) {
	c := &clock{}
	r := parallelRun(t)
	k := NewSink(c.now)
	s := replay(t, k, c, r)

	// The executor of a running task calls a tool and answers a model call.
	var exec loop.Action
	for _, a := range s.InFlight {
		if a.Role == loop.RoleExecutor {
			exec = a
			break
		}
	}
	if exec.ID == "" {
		t.Fatal("fixture has no executor in flight")
	}
	k.Activity(Activity{ActionID: exec.ID, TaskID: exec.TaskID, Role: exec.Role, Tokens: 777_000})
	k.Activity(Activity{ActionID: exec.ID, TaskID: exec.TaskID, Role: exec.Role, Tool: "edit_file"})

	m := newModel(k, Options{Now: c.now, StallAfter: time.Hour, Plain: true})
	m = update(m, tea.WindowSizeMsg{Width: 200, Height: 60})
	m = update(m, tickMsg(c.now()))
	out := m.View().Content

	for _, want := range []string{
		"sluice run " + r.Meta.RunID, "phase execute", "goal: " + r.Meta.Goal,
		"spent ", " of 50.00M", "$500.00",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("view lacks %q:\n%s", want, out)
		}
	}
	rows := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && strings.HasPrefix(f[0], "t") && s.Tasks[f[0]] != nil {
			rows[f[0]] = line
		}
	}
	if len(rows) != len(s.Order) {
		t.Fatalf("want a row per task (%d), got %d:\n%s", len(s.Order), len(rows), out)
	}
	running := 0
	for _, id := range s.Order {
		ts := s.Tasks[id]
		row := rows[id]
		switch ts.Status {
		case loop.TaskPending:
			if !strings.Contains(row, "queued") {
				t.Errorf("pending task %s should read queued: %q", id, row)
			}
		case loop.TaskMerged:
			if !strings.Contains(row, "merged") {
				t.Errorf("merged task %s: %q", id, row)
			}
		case loop.TaskRunning:
			running++
			if !strings.Contains(row, string(ts.Stage)) {
				t.Errorf("running task %s should show its stage %s: %q", id, ts.Stage, row)
			}
		}
	}
	if running < 2 {
		t.Fatalf("want at least two running rows, got %d", running)
	}
	execRow := rows[exec.TaskID]
	for _, want := range []string{"executor", "edit_file", count(s.Tasks[exec.TaskID].Usage.Tokens + 777_000)} {
		if !strings.Contains(execRow, want) {
			t.Errorf("row of %s lacks %q: %q", exec.TaskID, want, execRow)
		}
	}
	// t1 failed its gates once: its row shows the second attempt.
	if !strings.Contains(rows["t1"], "#2") {
		t.Errorf("t1 should show attempt #2: %q", rows["t1"])
	}
}

func TestStalledDelegationShowsWhatItLastDid(t *testing.T) {
	c := &clock{}
	r := parallelRun(t)
	k := NewSink(c.now)
	s := replay(t, k, c, r)
	var exec loop.Action
	for _, a := range s.InFlight {
		if a.Role == loop.RoleExecutor {
			exec = a
		}
	}
	k.Activity(Activity{ActionID: exec.ID, TaskID: exec.TaskID, Role: exec.Role, Tool: "bash"})
	m := newModel(k, Options{Now: c.now, StallAfter: 5 * time.Minute, Plain: true})
	m = update(m, tickMsg{})
	if strings.Contains(m.View().Content, "STALLED") {
		t.Fatalf("nothing has stalled yet:\n%s", m.View().Content)
	}
	c.set(c.now().Add(6 * time.Minute))
	m = update(m, tickMsg{})
	var row string
	for _, line := range strings.Split(m.View().Content, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == exec.TaskID {
			row = line
		}
	}
	if !strings.Contains(row, "STALLED 6m00s") || !strings.Contains(row, "last: tool call bash") {
		t.Fatalf("the silent executor of %s should show as stalled after its bash call: %q", exec.TaskID, row)
	}
	// Any sign of life clears it.
	k.Activity(Activity{ActionID: exec.ID, Tokens: 10})
	m = update(m, tickMsg{})
	for _, line := range strings.Split(m.View().Content, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == exec.TaskID && strings.Contains(line, "STALLED") {
			t.Fatalf("activity should clear the stall: %q", line)
		}
	}
}

func TestFrameChangesOnlyOnTicks(t *testing.T) {
	c := &clock{}
	r := fixture.Simulate(fixture.Options{Tasks: 4, Jobs: 2})
	k := NewSink(c.now)
	m := newModel(k, Options{Now: c.now, Plain: true})
	m = update(m, tickMsg{})
	before := m.View().Content
	replay(t, k, c, r)
	// A key press or anything else but the timer does not take new news.
	m = update(m, tea.KeyPressMsg{Code: 'x', Text: "x"})
	if got := m.View().Content; got != before {
		t.Fatalf("the frame changed without a tick:\n%s", got)
	}
	m = update(m, tickMsg{})
	if got := m.View().Content; got == before || !strings.Contains(got, "done") {
		t.Fatalf("after a tick the frame should show the finished run:\n%s", got)
	}
	if FrameInterval < 100*time.Millisecond {
		t.Fatalf("FrameInterval %s allows more than 10 redraws a second", FrameInterval)
	}
}

func TestManyTasksFitTheScreen(t *testing.T) {
	c := &clock{}
	r := fixture.Simulate(fixture.Options{Tasks: 128, Jobs: 8, StopAfter: 400})
	k := NewSink(c.now)
	s := replay(t, k, c, r)
	m := newModel(k, Options{Now: c.now, Plain: true})
	m = update(m, tea.WindowSizeMsg{Width: 120, Height: 30})
	m = update(m, tickMsg{})
	out := m.View().Content
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) > 30 {
		t.Fatalf("%d lines do not fit a 30-line terminal:\n%s", len(lines), out)
	}
	if !strings.Contains(out, "… ") || !strings.Contains(out, "more:") {
		t.Fatalf("hidden rows should be counted:\n%s", out)
	}
	for _, id := range s.Order {
		if s.Tasks[id].Status == loop.TaskRunning && !strings.Contains(out, "\n  "+id+" ") {
			t.Errorf("running task %s must stay visible:\n%s", id, out)
		}
	}
	for _, l := range lines {
		if len([]rune(l)) > 120 {
			t.Errorf("line wider than the terminal: %q", l)
		}
	}
}

func TestInterruptKeyCallsInterruptOnce(t *testing.T) {
	calls := 0
	m := newModel(NewSink(nil), Options{Now: time.Now, Interrupt: func() { calls++ }, Plain: true})
	ctrlC := tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	m = update(m, ctrlC)
	m = update(m, ctrlC)
	if calls != 1 {
		t.Fatalf("Interrupt called %d times, want 1", calls)
	}
	m = update(m, tickMsg{})
	if !strings.Contains(m.View().Content, "interrupting") {
		t.Fatalf("the view should say it is interrupting:\n%s", m.View().Content)
	}
}

// blockedWriter never returns from Write until released: a terminal that
// stopped reading.
type blockedWriter struct {
	entered chan struct{}
	once    sync.Once
	release chan struct{}
}

func (w *blockedWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.entered) })
	<-w.release
	return 0, io.ErrClosedPipe
}

func TestEntryNeverBlocksOnAStuckRenderer(t *testing.T) {
	w := &blockedWriter{entered: make(chan struct{}), release: make(chan struct{})}
	v := New(Options{Out: w, Plain: true})
	r := fixture.Simulate(fixture.Options{Tasks: 16, Jobs: 4})
	var entries []loop.Entry
	for _, rec := range r.Records {
		var e loop.Entry
		if rec.Kind == store.KindAction {
			e.Action = new(loop.Action)
			_ = json.Unmarshal(rec.Data, e.Action)
		} else {
			e.Event = new(loop.Event)
			_ = json.Unmarshal(rec.Data, e.Event)
		}
		entries = append(entries, e)
	}
	v.Entry(entries[0], r.State)
	v.Start()
	// The program is now stuck writing its first frame and stays stuck.
	<-w.entered
	for i := 0; i < 10_000; i++ {
		e := entries[i%len(entries)]
		v.Entry(e, r.State)
		if e.Action != nil {
			v.Activity(Activity{ActionID: e.Action.ID, Tool: "bash"})
		}
	}
	if got := v.Sink().Snapshot().Version; got < 10_000 {
		t.Fatalf("sink folded %d updates, want at least 10000", got)
	}
	close(w.release)
	if err := v.Stop(); err != nil && !strings.Contains(err.Error(), "closed pipe") {
		t.Fatalf("stop: %v", err)
	}
}

func TestNotesShowUnderTheTableAndStopIsIdempotent(t *testing.T) {
	c := &clock{}
	k := NewSink(c.now)
	replay(t, k, c, fixture.Simulate(fixture.Options{Tasks: 2, StopAfter: 20}))
	for i := 1; i <= 5; i++ {
		k.Note(fmt.Sprintf("warning %d", i))
	}
	m := newModel(k, Options{Now: c.now, Plain: true})
	m = update(m, tickMsg{})
	out := m.View().Content
	if strings.Contains(out, "warning 2") || !strings.Contains(out, "note: warning 3") || !strings.Contains(out, "note: warning 5") {
		t.Fatalf("want the latest three notes:\n%s", out)
	}

	var buf bytes.Buffer
	v := New(Options{Out: &buf, Plain: true, Width: 100, Height: 30})
	if err := v.Stop(); err != nil {
		t.Fatalf("stop before start: %v", err)
	}
	v.Start()
	v.Note("model: claude-sonnet-4-5")
	if err := v.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := v.Stop(); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	if !strings.Contains(buf.String(), "model: claude-sonnet-4-5") {
		t.Fatalf("the final frame should show the note:\n%q", buf.String())
	}
}
