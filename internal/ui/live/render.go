package live

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluice-run/sluice/internal/loop"
)

// Row states a person reads: a task's status with "running" split by
// whether it has passed its gates.
const (
	rowQueued  = "queued"
	rowRunning = "running"
	rowGated   = "gated"
	rowMerged  = "merged"
	rowFailed  = "failed"
	rowSkipped = "skipped"
)

// Frame is what one redraw needs besides the snapshot.
type Frame struct {
	Now           time.Time
	Width, Height int
	// StallAfter is how long a delegation may show no model reply and no
	// tool call before it is shown as stalled (0: never).
	StallAfter time.Duration
	// Plain drops colours (tests, dumb terminals).
	Plain bool
}

type styles struct {
	head, dim, ok, bad, warn, run lipgloss.Style
}

func newStyles(plain bool) styles {
	if plain {
		s := lipgloss.NewStyle()
		return styles{s, s, s, s, s, s}
	}
	return styles{
		head: lipgloss.NewStyle().Bold(true),
		dim:  lipgloss.NewStyle().Faint(true),
		ok:   lipgloss.NewStyle().Foreground(lipgloss.Color("2")),
		bad:  lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
		warn: lipgloss.NewStyle().Foreground(lipgloss.Color("3")).Bold(true),
		run:  lipgloss.NewStyle().Foreground(lipgloss.Color("6")),
	}
}

// Render draws the snapshot as the lines of one screen.
func Render(sn Snapshot, f Frame) string {
	st := newStyles(f.Plain)
	s := sn.State
	if !sn.Seen {
		out := st.dim.Render("sluice: starting…") + "\n"
		for _, n := range sn.Notes {
			out += st.warn.Render("note: ") + firstLine(n) + "\n"
		}
		return out
	}
	var lines []string
	add := func(l string) { lines = append(lines, l) }

	elapsed := f.Now.Sub(sn.Started)
	add(st.head.Render(fmt.Sprintf("sluice run %s", s.RunID)) + fmt.Sprintf("  phase %s  %s  %s", s.Phase, statusWord(st, s.Status), dur(elapsed)))
	if s.Settings.Goal != "" {
		add(st.dim.Render("goal: ") + s.Settings.Goal)
	}
	if s.Reason != "" && s.Status != loop.StatusRunning {
		add(st.dim.Render("reason: ") + s.Reason)
	}
	counts := map[string]int{}
	for _, id := range s.Order {
		counts[rowState(s.Tasks[id])]++
	}
	if len(s.Order) > 0 {
		add(fmt.Sprintf("tasks %d/%d merged · %d running · %d gated · %d queued · %d failed · %d skipped",
			counts[rowMerged], len(s.Order), counts[rowRunning], counts[rowGated], counts[rowQueued], counts[rowFailed], counts[rowSkipped]))
	}
	add(spentLine(sn))

	// Delegations and steps outside any task: baseline, research, plan,
	// critique, final verification.
	var runWide []Running
	for _, r := range sn.InFlight {
		if r.Action.TaskID == "" {
			runWide = append(runWide, r)
		}
	}
	sort.Slice(runWide, func(i, j int) bool { return runWide[i].Action.ID < runWide[j].Action.ID })
	if len(runWide) > 0 {
		add("")
		for _, r := range runWide {
			who := r.Action.Role
			if who == "" {
				who = string(r.Action.Type)
			}
			line := fmt.Sprintf("  %-22s %-14s %s %8s", r.Action.ID, who, st.run.Render("running"), dur(f.Now.Sub(r.Started)))
			if r.Tokens > 0 {
				line += fmt.Sprintf("  %d tok", r.Tokens)
			}
			line += activityNote(st, r, f)
			add(line)
		}
	}

	if len(s.Order) > 0 {
		add("")
		add(st.dim.Render(fmt.Sprintf("  %-10s %-18s %-14s %8s %10s %9s  %s", "TASK", "STATE", "ROLE", "ELAPSED", "TOKENS", "COST", "NOW")))
		rows := taskRows(sn, f, st)
		// Keep room for the header lines above and the notes and last line
		// below.
		room := f.Height - len(lines) - 2 - len(sn.Notes)
		if f.Height > 0 && len(rows) > room && room > 1 {
			rows = fitRows(rows, room-1, counts)
		}
		for _, r := range rows {
			add(r.text)
		}
	}
	if sn.LastLine != "" || len(sn.Notes) > 0 {
		add("")
	}
	for _, n := range sn.Notes {
		add(st.warn.Render("note: ") + firstLine(n))
	}
	if sn.LastLine != "" {
		add(st.dim.Render("last: ") + sn.LastLine)
	}
	if f.Width > 0 {
		for i, l := range lines {
			lines[i] = ansi.Truncate(l, f.Width, "…")
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

type row struct {
	state string
	text  string
}

func taskRows(sn Snapshot, f Frame, st styles) []row {
	s := sn.State
	byTask := map[string]Running{}
	for _, r := range sn.InFlight {
		if r.Action.TaskID != "" {
			// A task has one action in flight at a time; prefer a delegation.
			if cur, ok := byTask[r.Action.TaskID]; !ok || cur.Action.Type != loop.ActDelegate {
				byTask[r.Action.TaskID] = r
			}
		}
	}
	out := make([]row, 0, len(s.Order))
	for _, id := range s.Order {
		t := s.Tasks[id]
		state := rowState(t)
		label := state
		if t.Status == loop.TaskRunning && t.Stage != "" {
			label += " " + string(t.Stage)
		}
		if t.Attempt > 1 {
			label += fmt.Sprintf(" #%d", t.Attempt)
		}
		r, active := byTask[id]
		role := ""
		if active {
			role = r.Action.Role
			if role == "" {
				role = string(r.Action.Type)
			}
		}
		sp := sn.Tasks[id]
		elapsed := ""
		switch {
		case !sp.End.IsZero() && !sp.Start.IsZero():
			elapsed = dur(sp.End.Sub(sp.Start))
		case !sp.Start.IsZero():
			elapsed = dur(f.Now.Sub(sp.Start))
		}
		tokens := t.Usage.Tokens
		if active {
			tokens += r.Tokens
		}
		note := ""
		switch {
		case active:
			note = activityNote(st, r, f)
		case t.Status == loop.TaskFailed || t.Status == loop.TaskSkipped:
			note = "  " + firstLine(t.Reason)
		}
		out = append(out, row{state: state, text: fmt.Sprintf("  %-10s %s %-14s %8s %10s %9s%s",
			id, colourState(st, state, fmt.Sprintf("%-18s", label)), role, elapsed, count(tokens), money(t.Usage.CostUSD), note)})
	}
	return out
}

// fitRows keeps the rows worth seeing when they do not all fit: running,
// gated and failed first, then queued, and counts the rest in one line.
func fitRows(rows []row, room int, counts map[string]int) []row {
	rank := map[string]int{rowRunning: 0, rowGated: 0, rowFailed: 1, rowQueued: 2, rowSkipped: 3, rowMerged: 4}
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return rank[rows[idx[a]].state] < rank[rows[idx[b]].state] })
	keep := map[int]bool{}
	for _, i := range idx[:room] {
		keep[i] = true
	}
	hidden := map[string]int{}
	var out []row
	for i, r := range rows {
		if keep[i] {
			out = append(out, r)
		} else {
			hidden[r.state]++
		}
	}
	var parts []string
	for _, st := range []string{rowRunning, rowGated, rowFailed, rowQueued, rowSkipped, rowMerged} {
		if hidden[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", hidden[st], st))
		}
	}
	return append(out, row{text: fmt.Sprintf("  … %d more: %s", len(rows)-len(out), strings.Join(parts, ", "))})
}

// activityNote is the current tool call, or the stall warning with what the
// delegation last did.
func activityNote(st styles, r Running, f Frame) string {
	if r.Action.Type != loop.ActDelegate {
		return ""
	}
	idle := f.Now.Sub(r.LastAt)
	if f.StallAfter > 0 && idle >= f.StallAfter {
		return "  " + st.warn.Render(fmt.Sprintf("STALLED %s", dur(idle))) + fmt.Sprintf(" — last: %s", r.Last)
	}
	if r.Tool != "" {
		return "  " + r.Tool
	}
	return ""
}

func rowState(t *loop.TaskState) string {
	switch t.Status {
	case loop.TaskPending:
		return rowQueued
	case loop.TaskMerged:
		return rowMerged
	case loop.TaskFailed:
		return rowFailed
	case loop.TaskSkipped:
		return rowSkipped
	}
	switch t.Stage {
	case loop.StageReview, loop.StageVerify, loop.StageMerge:
		return rowGated
	}
	return rowRunning
}

func colourState(st styles, state, text string) string {
	switch state {
	case rowMerged:
		return st.ok.Render(text)
	case rowFailed:
		return st.bad.Render(text)
	case rowRunning, rowGated:
		return st.run.Render(text)
	case rowQueued, rowSkipped:
		return st.dim.Render(text)
	}
	return text
}

func statusWord(st styles, s loop.Status) string {
	switch s {
	case loop.StatusDone:
		return st.ok.Render(string(s))
	case loop.StatusFailed:
		return st.bad.Render(string(s))
	case loop.StatusPaused:
		return st.warn.Render(string(s))
	}
	return st.run.Render(string(s))
}

func spentLine(sn Snapshot) string {
	s := sn.State
	tokens := s.Usage.Tokens
	for _, r := range sn.InFlight {
		tokens += r.Tokens
	}
	b := s.Settings.Budget
	line := "spent " + count(tokens) + " tokens"
	if b.Tokens > 0 {
		line += fmt.Sprintf(" of %s (%.0f%%)", count(b.Tokens), 100*float64(tokens)/float64(b.Tokens))
	}
	line += " · " + money(s.Usage.CostUSD)
	if b.USD > 0 {
		line += fmt.Sprintf(" of %s (%.0f%%)", money(b.USD), 100*s.Usage.CostUSD/b.USD)
	}
	return line + fmt.Sprintf(" · %d calls", s.Usage.Calls)
}

func dur(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Truncate(time.Second)
	h, m, sec := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm%02ds", h, m, sec)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, sec)
	}
	return fmt.Sprintf("%ds", sec)
}

// count prints a token count compactly: 950, 12.3k, 4.56M.
func count(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%d", n)
}

func money(v float64) string { return fmt.Sprintf("$%.2f", v) }

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
