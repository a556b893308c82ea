package ui

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluice-run/sluice/internal/loop"
)

// RunPrinter prints a run's journal entries as they happen: one plain,
// timestamped line per meaningful entry, or JSON Lines with --json.
type RunPrinter struct {
	mu   sync.Mutex
	w    io.Writer
	json bool
	now  func() time.Time
}

// NewRunPrinter returns a printer writing to w.
func NewRunPrinter(w io.Writer, jsonLines bool, now func() time.Time) *RunPrinter {
	return &RunPrinter{w: w, json: jsonLines, now: now}
}

// JSONEntry is one line of `--json` output: a journal entry with the run's
// phase and status after it. Its fields are a stable, documented schema.
type JSONEntry struct {
	Time   time.Time    `json:"time"`
	Kind   string       `json:"kind"` // "action" or "event"
	Action *loop.Action `json:"action,omitempty"`
	Event  *loop.Event  `json:"event,omitempty"`
	Phase  loop.Phase   `json:"phase"`
	Status loop.Status  `json:"status"`
	Tokens int64        `json:"tokens"`
	Cost   float64      `json:"cost_usd"`
}

// Entry prints one journal entry. It is safe for concurrent use.
func (p *RunPrinter) Entry(e loop.Entry, s loop.State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		j := JSONEntry{Time: p.now().UTC(), Action: e.Action, Event: e.Event, Phase: s.Phase, Status: s.Status, Tokens: s.Usage.Tokens, Cost: s.Usage.CostUSD}
		j.Kind = "event"
		if e.Action != nil {
			j.Kind = "action"
		}
		if e.Event != nil && len(e.Event.Output) > 0 {
			ev := *e.Event
			ev.Output = nil // outputs live in the run's artifacts; lines stay short
			j.Event = &ev
		}
		b, _ := json.Marshal(j)
		fmt.Fprintf(p.w, "%s\n", b)
		return
	}
	if line := Describe(e, s); line != "" {
		fmt.Fprintf(p.w, "%s  %s\n", p.now().Format("15:04:05"), line)
	}
}

// Note prints a free-form line (plain mode only).
func (p *RunPrinter) Note(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.json {
		fmt.Fprintf(p.w, "%s  %s\n", p.now().Format("15:04:05"), msg)
	}
}

// Describe is the plain one-line description of a journal entry, or "" for
// entries not worth a line.
func Describe(e loop.Entry, s loop.State) string {
	if a := e.Action; a != nil {
		who := a.TaskID
		switch a.Type {
		case loop.ActBaseline:
			return "baseline: evaluating the quality gates on the base commit"
		case loop.ActDelegate:
			if who == "" {
				who = string(phaseOfRole(a.Role))
			}
			extra := ""
			switch {
			case a.Pass > 0:
				extra = fmt.Sprintf(" (pass %d)", a.Pass)
			case a.Iteration > 0:
				extra = fmt.Sprintf(" (iteration %d)", a.Iteration)
			}
			return fmt.Sprintf("%s: %s started%s", who, a.Role, extra)
		case loop.ActWorktree:
			return fmt.Sprintf("%s: attempt %d started in a fresh worktree", who, a.Attempt)
		case loop.ActGates:
			return fmt.Sprintf("%s: running quality gates", who)
		case loop.ActMerge:
			return fmt.Sprintf("%s: merging onto %s", who, loop.IntegrationBranch(s.RunID))
		case loop.ActFinalVerify:
			return "verify: running every gate on the merged integration branch"
		case loop.ActAsk:
			return "approval: " + a.Question
		case loop.ActPoint:
			return fmt.Sprintf("point %s: running the capabilities' gates", strings.TrimPrefix(a.ID, "point/"))
		}
		return ""
	}
	ev := e.Event
	a := actionOf(s, ev)
	who := a.TaskID
	if who == "" {
		who = string(phaseOfRole(a.Role))
	}
	switch ev.Type {
	case loop.EvBaselineDone:
		return "baseline: " + ev.Detail
	case loop.EvDelegationDone:
		extra := ""
		if a.Role == loop.RoleCritic {
			var v struct {
				Verdict   string `json:"verdict"`
				Objection string `json:"objection"`
			}
			_ = json.Unmarshal(ev.Output, &v)
			extra = ": " + v.Verdict
			if v.Objection != "" {
				extra += " — " + v.Objection
			}
		}
		if a.Role == loop.RoleVerifier || a.Role == loop.RoleCodeReviewer {
			var v struct {
				Verdict string `json:"verdict"`
			}
			_ = json.Unmarshal(ev.Output, &v)
			extra = ": " + v.Verdict
		}
		return fmt.Sprintf("%s: %s done (%d tokens)%s", who, a.Role, ev.Usage.Tokens, extra)
	case loop.EvDelegationFail:
		return fmt.Sprintf("%s: %s failed (%s): %s", who, a.Role, ev.Reason, firstLine(ev.Detail))
	case loop.EvWorktreeReady:
		return ""
	case loop.EvGatesEvaluated:
		var names []string
		for _, g := range ev.Gates {
			mark := "ok"
			switch {
			case g.Skipped:
				mark = "skipped"
			case !g.Passed:
				mark = "FAILED"
			case g.Note != "":
				mark = "ok (" + g.Note + ")"
			}
			names = append(names, g.Name+" "+mark)
		}
		verdict := "passed"
		if !ev.Passed {
			verdict = "FAILED"
		}
		if len(ev.Changed) == 0 {
			return fmt.Sprintf("%s: the executor changed no files", who)
		}
		return fmt.Sprintf("%s: gates %s on %d changed files: %s", who, verdict, len(ev.Changed), strings.Join(names, ", "))
	case loop.EvMerged:
		return fmt.Sprintf("%s: merged (%s)", who, short(ev.Head))
	case loop.EvMergeConflict:
		return fmt.Sprintf("%s: merge conflict in %s; retrying on the new base", who, strings.Join(ev.Files, ", "))
	case loop.EvFinalVerified:
		return "verify: " + ev.Detail
	case loop.EvPointFired:
		return fmt.Sprintf("point %s: %s", strings.TrimPrefix(ev.ActionID, "point/"), ev.Detail)
	case loop.EvActionError:
		return fmt.Sprintf("%s: %s failed: %s", who, a.Type, firstLine(ev.Detail))
	case loop.EvPaused, loop.EvBudgetExhausted:
		return "paused: " + ev.Reason
	case loop.EvResumed:
		return "resumed"
	case loop.EvUserAnswered:
		if ev.Approve {
			return "approval: plan approved"
		}
		return "approval: plan rejected"
	}
	return ""
}

// actionOf finds the action an event answers. After Apply the action is no
// longer in flight, so its id is read back instead.
func actionOf(s loop.State, ev *loop.Event) loop.Action {
	if a, ok := s.InFlight[ev.ActionID]; ok {
		return a
	}
	return loop.ActionOfID(ev.ActionID)
}

func phaseOfRole(role string) loop.Phase {
	switch role {
	case loop.RoleResearcher:
		return loop.PhaseResearch
	case loop.RolePlanner, loop.RoleDesignSpec:
		return loop.PhasePlan
	case loop.RoleCritic:
		return loop.PhaseCritique
	}
	return loop.PhaseExecute
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func short(sha string) string {
	if len(sha) > 10 {
		return sha[:10]
	}
	return sha
}

// Summary writes the end-of-run summary a person reads.
func Summary(w io.Writer, s loop.State, branch, runDir string) {
	fmt.Fprintf(w, "\nrun %s: %s", s.RunID, s.Status)
	if s.Reason != "" {
		fmt.Fprintf(w, " — %s", s.Reason)
	}
	fmt.Fprintln(w)
	ids := append([]string(nil), s.Order...)
	if len(ids) == 0 {
		for id := range s.Tasks {
			ids = append(ids, id)
		}
		sort.Strings(ids)
	}
	for _, id := range ids {
		t := s.Tasks[id]
		line := fmt.Sprintf("  %-10s %-8s attempts %d", id, t.Status, t.Attempt)
		if t.Reason != "" {
			line += "  " + firstLine(t.Reason)
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "  usage: %d tokens, $%.4f, %d model calls\n", s.Usage.Tokens, s.Usage.CostUSD, s.Usage.Calls)
	if strings.HasPrefix(s.BaselineReport, "pre-existing") {
		fmt.Fprintf(w, "  baseline: %s\n", s.BaselineReport)
	}
	for _, g := range s.FinalGates {
		if g.Note != "" {
			fmt.Fprintf(w, "  pre-existing: %s gate (%s): %s\n", g.Name, g.Command, g.Note)
		}
	}
	if branch != "" {
		fmt.Fprintf(w, "  branch: %s\n", branch)
	}
	if runDir != "" {
		fmt.Fprintf(w, "  run directory: %s\n", runDir)
	}
}
