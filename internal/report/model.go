// Package report writes a run's report.html: one self-contained page (inline
// CSS and SVG, no scripts, nothing fetched at view time) with the goal, the
// outcome, the plan as a dependency graph, a timeline of every delegation and
// gate, each gate's clauses, the critique history, where the tokens and money
// went, and links to every task's diff, artifacts and transcripts.
package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/plan"
	"github.com/sluice-run/sluice/internal/run"
	"github.com/sluice-run/sluice/internal/store"
)

// Bar is one action on the timeline: from when it was issued to when its
// event arrived.
type Bar struct {
	ActionID string
	Type     loop.ActionType
	Role     string
	TaskID   string
	Attempt  int
	Start    time.Time
	End      time.Time
	// Open is true when no event answered the action (still in flight, or
	// interrupted by a crash); End is then the journal's last time.
	Open bool
	// Outcome is "ok", "failed", "revise" (a critic objection) or
	// "interrupted" (budget or cancellation; the work is re-issued).
	Outcome string
	Detail  string
	Usage   loop.Usage
	Model   string
	// Transcript and Artifact are paths relative to the run directory, or
	// empty when the file does not exist.
	Transcript string
	Artifact   string
	// Transcript summary, from its start and end lines.
	Turns     int
	ToolCalls int
}

// GateRun is one evaluation of a task's (or the run's) gates.
type GateRun struct {
	Label    string
	ActionID string
	Passed   bool
	Changed  []string
	Clauses  []Clause
	Artifact string
	Detail   string
}

// Clause is one gate clause's outcome.
type Clause struct {
	loop.GateSummary
	ExitCode     *int
	Duration     time.Duration
	TimedOut     bool
	FailingTests []string
	Cached       bool
}

// TaskView is everything the report shows about a task.
type TaskView struct {
	ID       string
	Title    string
	Status   loop.TaskStatus
	Attempts int
	Deps     []string
	Reason   string
	Failures []loop.Failure
	Risks    []string
	Usage    loop.Usage
	Start    time.Time
	End      time.Time
	Gates    []GateRun
	Bars     []Bar
	Diff     string
	Criteria []string
	Files    []string
}

// Spend is a row of a cost table.
type Spend struct {
	Name string
	loop.Usage
}

// Data is the report's content, computed from a loaded run.
type Data struct {
	RunID      string
	Goal       string
	Status     loop.Status
	Phase      loop.Phase
	Reason     string
	BaseBranch string
	BaseSHA    string
	Branch     string
	Start      time.Time
	End        time.Time
	Settings   loop.Settings
	Usage      loop.Usage
	Plan       *plan.Plan
	PlanVer    int
	Critiques  []plan.Critique
	Tasks      []*TaskView
	// RunBars are the actions outside any task, in journal order.
	RunBars   []Bar
	Baseline  *GateRun
	Final     *GateRun
	ByRole    []Spend
	ByModel   []Spend
	Warnings  []string
	InFlight  []string
	Artifacts []string
}

// Collect computes the report's content from a loaded run; it reads the run
// directory's transcripts and artifacts for models, turns and gate details.
func Collect(l *run.Loaded) *Data {
	s := l.State
	d := &Data{
		RunID: s.RunID, Goal: l.Meta.Goal, Status: s.Status, Phase: s.Phase, Reason: s.Reason,
		BaseBranch: l.Meta.BaseBranch, BaseSHA: l.Meta.BaseSHA, Branch: loop.IntegrationBranch(s.RunID),
		Start: l.Meta.StartedAt, Settings: s.Settings, Usage: s.Usage, Plan: s.Plan, PlanVer: s.PlanVersion,
		Critiques: s.Critiques,
	}
	if d.Goal == "" {
		d.Goal = s.Settings.Goal
	}
	if len(l.Records) > 0 {
		if d.Start.IsZero() || l.Records[0].Time.Before(d.Start) {
			d.Start = l.Records[0].Time
		}
		d.End = l.Records[len(l.Records)-1].Time
	}
	for _, w := range l.Warnings {
		d.Warnings = append(d.Warnings, w.String())
	}
	for _, a := range loop.InFlightActions(s) {
		d.InFlight = append(d.InFlight, a.ID)
	}

	tasks := map[string]*TaskView{}
	for _, id := range s.Order {
		t := s.Tasks[id]
		tv := &TaskView{ID: id, Status: t.Status, Attempts: t.Attempt, Reason: t.Reason, Failures: t.Failures, Risks: t.Risks, Usage: t.Usage}
		if s.Plan != nil {
			if pt, ok := s.Plan.Task(id); ok {
				tv.Title, tv.Deps, tv.Criteria, tv.Files = pt.Title, pt.DependsOn, pt.AcceptanceCriteria, pt.FilesToModify
			}
		}
		if exists(l.Dir, diffPath(id)) {
			tv.Diff = diffPath(id)
		}
		tasks[id] = tv
		d.Tasks = append(d.Tasks, tv)
	}

	bars := collectBars(l)
	byRole, byModel := map[string]loop.Usage{}, map[string]loop.Usage{}
	for i := range bars {
		b := &bars[i]
		if b.Type == loop.ActDelegate {
			b.Transcript = existing(l.Dir, filepath.Join(store.TranscriptsDir, fileName(b.ActionID)+".jsonl"))
			if b.Transcript != "" {
				b.Model, b.Turns, b.ToolCalls = transcriptSummary(filepath.Join(l.Dir, b.Transcript))
			}
			model := b.Model
			if model == "" {
				model = "(unknown)"
			}
			byRole[b.Role] = byRole[b.Role].Add(b.Usage)
			byModel[model] = byModel[model].Add(b.Usage)
		}
		b.Artifact = existing(l.Dir, filepath.Join(store.ArtifactsDir, fileName(b.ActionID)+".json"))
		if tv := tasks[b.TaskID]; tv != nil {
			tv.Bars = append(tv.Bars, *b)
			if tv.Start.IsZero() || b.Start.Before(tv.Start) {
				tv.Start = b.Start
			}
			if b.End.After(tv.End) {
				tv.End = b.End
			}
		} else {
			d.RunBars = append(d.RunBars, *b)
		}
	}
	d.ByRole, d.ByModel = spends(byRole), spends(byModel)

	d.Baseline = baselineRun(l)
	for _, e := range l.Entries {
		ev := e.Event
		if ev == nil {
			continue
		}
		switch ev.Type {
		case loop.EvGatesEvaluated:
			a := loop.ActionOfID(ev.ActionID)
			if tv := tasks[a.TaskID]; tv != nil {
				g := gateRun(l.Dir, ev, "attempt "+strconv.Itoa(a.Attempt))
				tv.Gates = append(tv.Gates, g)
			}
		case loop.EvFinalVerified:
			g := gateRun(l.Dir, ev, "integration branch")
			g.Artifact = existing(l.Dir, filepath.Join(store.ArtifactsDir, "final_gates.json"))
			g.Clauses = enrich(l.Dir, g.Artifact, g.Clauses)
			d.Final = &g
		}
	}
	if entries, err := os.ReadDir(filepath.Join(l.Dir, store.ArtifactsDir)); err == nil {
		for _, e := range entries {
			if !e.IsDir() {
				d.Artifacts = append(d.Artifacts, filepath.ToSlash(filepath.Join(store.ArtifactsDir, e.Name())))
			}
		}
	}
	return d
}

// collectBars pairs every issued action with the event that answered it,
// folding the journal alongside to tell which answers failed an attempt.
func collectBars(l *run.Loaded) []Bar {
	var bars []Bar
	open := map[string]int{}
	s := loop.New(l.Meta.RunID, l.Meta.Settings)
	var last time.Time
	j := 0
	for _, rec := range l.Records {
		if rec.Kind != store.KindAction && rec.Kind != store.KindEvent {
			continue
		}
		if j >= len(l.Entries) {
			break
		}
		e := l.Entries[j]
		j++
		last = rec.Time
		if a := e.Action; a != nil {
			open[a.ID] = len(bars)
			bars = append(bars, Bar{ActionID: a.ID, Type: a.Type, Role: a.Role, TaskID: a.TaskID, Attempt: a.Attempt, Start: rec.Time, Open: true, Outcome: "ok"})
			s = loop.Issue(s, *a)
			continue
		}
		ev := *e.Event
		i, ok := open[ev.ActionID]
		var failuresBefore int
		var task *loop.TaskState
		if ok {
			task = s.Tasks[bars[i].TaskID]
			if task != nil {
				failuresBefore = len(task.Failures)
			}
		}
		s = loop.Apply(s, ev)
		if !ok {
			continue
		}
		delete(open, ev.ActionID)
		b := &bars[i]
		b.End, b.Open, b.Usage, b.Detail = rec.Time, false, ev.Usage, ev.Detail
		if b.Detail == "" {
			b.Detail = ev.Reason
		}
		switch {
		case ev.Type == loop.EvDelegationFail && (ev.Reason == loop.ReasonBudget || ev.Reason == loop.ReasonCancelled):
			b.Outcome = "interrupted"
		case ev.Type == loop.EvDelegationFail || ev.Type == loop.EvActionError || ev.Type == loop.EvMergeConflict:
			b.Outcome = "failed"
			if ev.Type == loop.EvDelegationFail {
				b.Detail = ev.Reason + ": " + ev.Detail
			}
		case ev.Type == loop.EvFinalVerified && !ev.Passed:
			b.Outcome = "failed"
		case b.Role == loop.RoleCritic && len(s.Critiques) > 0 && s.Critiques[len(s.Critiques)-1].Verdict != "APPROVE":
			b.Outcome = "revise"
			b.Detail = s.Critiques[len(s.Critiques)-1].Objection
		}
		if t := s.Tasks[b.TaskID]; task != nil && t != nil && len(t.Failures) > failuresBefore {
			b.Outcome = "failed"
			b.Detail = t.Failures[len(t.Failures)-1].Report
		}
	}
	for _, i := range open {
		bars[i].End = last
	}
	return bars
}

// gateResult is the part of a gates artifact (gates.Result) the report
// shows beyond the journal's summary.
type gateResult struct {
	Name         string        `json:"name"`
	ExitCode     int           `json:"exit_code"`
	Duration     time.Duration `json:"duration"`
	TimedOut     bool          `json:"timed_out"`
	FailingTests []string      `json:"failing_tests"`
	Cached       bool          `json:"cached"`
	Passed       bool          `json:"passed"`
	Skipped      bool          `json:"skipped"`
	Command      string        `json:"command"`
	OutputTail   string        `json:"output_tail"`
}

func gateRun(dir string, ev *loop.Event, label string) GateRun {
	g := GateRun{Label: label, ActionID: ev.ActionID, Passed: ev.Passed, Changed: ev.Changed, Detail: ev.Detail}
	for _, c := range ev.Gates {
		g.Clauses = append(g.Clauses, Clause{GateSummary: c})
	}
	if ev.Type == loop.EvGatesEvaluated && len(ev.Changed) == 0 {
		g.Detail = "the executor changed no files"
	}
	g.Artifact = existing(dir, filepath.Join(store.ArtifactsDir, fileName(ev.ActionID)+".json"))
	g.Clauses = enrich(dir, g.Artifact, g.Clauses)
	return g
}

// enrich adds exit codes, durations and failing tests from a gates
// artifact, when it holds gate results.
func enrich(dir, artifact string, clauses []Clause) []Clause {
	if artifact == "" {
		return clauses
	}
	data, err := os.ReadFile(filepath.Join(dir, artifact))
	if err != nil {
		return clauses
	}
	var results []gateResult
	if json.Unmarshal(data, &results) != nil {
		return clauses
	}
	byName := map[string]gateResult{}
	for _, r := range results {
		byName[r.Name] = r
	}
	for i := range clauses {
		if r, ok := byName[clauses[i].Name]; ok {
			code := r.ExitCode
			clauses[i].ExitCode, clauses[i].Duration, clauses[i].TimedOut = &code, r.Duration, r.TimedOut
			clauses[i].FailingTests, clauses[i].Cached = r.FailingTests, r.Cached
		}
	}
	return clauses
}

// baselineRun reads the T0 gate results, which only the artifact holds.
func baselineRun(l *run.Loaded) *GateRun {
	var detail string
	found := false
	for _, e := range l.Entries {
		if e.Event != nil && e.Event.Type == loop.EvBaselineDone {
			detail, found = e.Event.Detail, true
		}
	}
	if !found {
		return nil
	}
	g := &GateRun{Label: "base commit", ActionID: "baseline", Passed: true, Detail: detail}
	g.Artifact = existing(l.Dir, filepath.Join(store.ArtifactsDir, "baseline.json"))
	if g.Artifact != "" {
		if data, err := os.ReadFile(filepath.Join(l.Dir, g.Artifact)); err == nil {
			var results []gateResult
			if json.Unmarshal(data, &results) == nil {
				for _, r := range results {
					code := r.ExitCode
					g.Clauses = append(g.Clauses, Clause{
						GateSummary: loop.GateSummary{Name: r.Name, Command: r.Command, Passed: r.Passed, Skipped: r.Skipped, OutputTail: r.OutputTail},
						ExitCode:    &code, Duration: r.Duration, TimedOut: r.TimedOut, FailingTests: r.FailingTests, Cached: r.Cached,
					})
					if !r.Passed && !r.Skipped {
						g.Passed = false
					}
				}
			}
		}
	}
	return g
}

// transcriptSummary reads a transcript's model from its start line and the
// turns and tool calls from its end line.
func transcriptSummary(path string) (model string, turns, tools int) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"type":"start"`)) && !bytes.Contains(line, []byte(`"type":"end"`)) {
			continue
		}
		var ev struct {
			Type      string `json:"type"`
			Model     string `json:"model"`
			Turn      int    `json:"turn"`
			ToolCalls int    `json:"tool_calls"`
		}
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		switch ev.Type {
		case "start":
			model = ev.Model
		case "end":
			turns, tools = ev.Turn, ev.ToolCalls
		}
	}
	return model, turns, tools
}

func spends(m map[string]loop.Usage) []Spend {
	out := make([]Spend, 0, len(m))
	for k, v := range m {
		out = append(out, Spend{Name: k, Usage: v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CostUSD != out[j].CostUSD {
			return out[i].CostUSD > out[j].CostUSD
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// fileName is how the local engine names an action's artifact and
// transcript files.
func fileName(actionID string) string { return strings.ReplaceAll(actionID, "/", "_") }

func diffPath(taskID string) string { return "diffs/" + taskID + ".diff" }

func exists(dir, rel string) bool {
	_, err := os.Stat(filepath.Join(dir, rel))
	return err == nil
}

func existing(dir, rel string) string {
	if exists(dir, rel) {
		return filepath.ToSlash(rel)
	}
	return ""
}
