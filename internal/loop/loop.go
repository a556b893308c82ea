package loop

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sluice-run/sluice/internal/plan"
)

// New returns the state of a run that has not started.
func New(runID string, settings Settings) State {
	if settings.Jobs < 1 {
		settings.Jobs = 1
	}
	if settings.ResearchPasses < 1 {
		settings.ResearchPasses = 1
	}
	if settings.CriticMaxIterations < 1 {
		settings.CriticMaxIterations = 1
	}
	if settings.Schedule == "" {
		settings.Schedule = "dag"
	}
	if settings.Depth == "" {
		settings.Depth = plan.DepthStandard
	}
	return State{RunID: runID, Settings: settings, Phase: PhaseInit, Status: StatusRunning}
}

// Entry is one journal record: an issued action or an arrived event.
type Entry struct {
	Action *Action `json:"action,omitempty"`
	Event  *Event  `json:"event,omitempty"`
}

// Fold replays journal entries onto a state.
func Fold(s State, entries []Entry) State {
	for _, e := range entries {
		switch {
		case e.Action != nil:
			s = Issue(s, *e.Action)
		case e.Event != nil:
			s = Apply(s, *e.Event)
		}
	}
	return s
}

// Next returns the work that should start now. It never returns an action
// that is already in flight, and returns nothing unless the run is running.
func Next(s State) []Action {
	if s.Status != StatusRunning {
		return nil
	}
	if a, ok := pendingPoint(s); ok {
		if _, busy := s.InFlight[a.ID]; busy {
			return nil
		}
		return []Action{a}
	}
	var want []Action
	switch s.Phase {
	case PhaseInit:
		want = []Action{{ID: "baseline", Type: ActBaseline}}
	case PhaseResearch:
		pass := s.ResearchPasses + 1
		id := fmt.Sprintf("research/p%d", pass)
		if s.ResearchRetried {
			id += "/retry"
		}
		want = []Action{{ID: id, Type: ActDelegate, Role: RoleResearcher, Pass: pass}}
	case PhasePlan:
		it := len(s.Critiques) + 1
		want = []Action{{ID: fmt.Sprintf("plan/i%d", it), Type: ActDelegate, Role: RolePlanner, Iteration: it}}
	case PhaseCritique:
		if s.Settings.DesignSpec && s.DesignSpecVersion < s.PlanVersion {
			// plan:post: the design spec of this plan version comes first.
			want = []Action{{ID: fmt.Sprintf("plan/v%d/design-spec", s.PlanVersion), Type: ActDelegate, Role: RoleDesignSpec, Iteration: s.PlanVersion}}
			break
		}
		it := len(s.Critiques) + 1
		want = []Action{{ID: fmt.Sprintf("critique/i%d", it), Type: ActDelegate, Role: RoleCritic, Iteration: it}}
	case PhaseApproval:
		want = []Action{{ID: fmt.Sprintf("approve/v%d", s.PlanVersion), Type: ActAsk, Question: approvalQuestion(s)}}
	case PhaseExecute:
		want = nextTaskActions(s)
	case PhaseVerify:
		want = []Action{{ID: "final", Type: ActFinalVerify, Depth: s.Settings.Depth}}
	}
	out := want[:0]
	for _, a := range want {
		if _, busy := s.InFlight[a.ID]; !busy {
			out = append(out, a)
		}
	}
	return out
}

func approvalQuestion(s State) string {
	n := 0
	if s.Plan != nil {
		n = len(s.Plan.Tasks)
	}
	q := fmt.Sprintf("Approve the plan (%d tasks, version %d) and start executing?", n, s.PlanVersion)
	if last := lastCritique(s); last != nil && last.Verdict != "APPROVE" {
		q += fmt.Sprintf(" The critic still objects after %d iterations: %s", len(s.Critiques), last.Objection)
	}
	return q
}

func lastCritique(s State) *plan.Critique {
	if len(s.Critiques) == 0 {
		return nil
	}
	return &s.Critiques[len(s.Critiques)-1]
}

func nextTaskActions(s State) []Action {
	var out []Action
	mergeBusy := false
	for _, a := range s.InFlight {
		if a.Type == ActMerge {
			mergeBusy = true
		}
	}
	running := 0
	var active []*plan.Task
	for _, id := range s.Order {
		t := s.Tasks[id]
		if t.Status != TaskRunning {
			continue
		}
		running++
		if pt, ok := s.Plan.Task(id); ok {
			active = append(active, pt)
		}
		a := stageAction(s, t)
		if _, busy := s.InFlight[a.ID]; busy {
			continue
		}
		if a.Type == ActMerge {
			if mergeBusy {
				continue
			}
			mergeBusy = true
		}
		out = append(out, a)
	}
	wave := currentWave(s)
	for _, id := range s.Order {
		if running >= s.Settings.Jobs {
			break
		}
		t := s.Tasks[id]
		if t.Status != TaskPending || !depsMerged(s, id) {
			continue
		}
		if s.Settings.Schedule == "waves" && t.Wave != wave {
			continue
		}
		pt, _ := s.Plan.Task(id)
		if overlapsAny(pt, active) {
			continue
		}
		active = append(active, pt)
		running++
		out = append(out, worktreeAction(s, id, 1))
	}
	return out
}

func overlapsAny(t *plan.Task, active []*plan.Task) bool {
	for _, a := range active {
		if len(plan.Overlap(t, a)) > 0 {
			return true
		}
	}
	return false
}

func depsMerged(s State, id string) bool {
	pt, _ := s.Plan.Task(id)
	for _, d := range pt.DependsOn {
		if s.Tasks[d].Status != TaskMerged {
			return false
		}
	}
	return true
}

func currentWave(s State) int {
	wave := -1
	for _, id := range s.Order {
		t := s.Tasks[id]
		if !terminal(t.Status) && (wave < 0 || t.Wave < wave) {
			wave = t.Wave
		}
	}
	return wave
}

func terminal(st TaskStatus) bool {
	return st == TaskMerged || st == TaskFailed || st == TaskSkipped
}

// TaskBranch names a task attempt's branch. It cannot live under
// sluice/<run-id>, which is the integration branch's own ref.
func TaskBranch(runID, taskID string, attempt int) string {
	return fmt.Sprintf("sluice/%s-tasks/%s-a%d", runID, taskID, attempt)
}

// IntegrationBranch names the run's integration branch.
func IntegrationBranch(runID string) string { return "sluice/" + runID }

func worktreeAction(s State, taskID string, attempt int) Action {
	return Action{
		ID:      taskActionID(taskID, attempt, StageWorktree),
		Type:    ActWorktree,
		TaskID:  taskID,
		Attempt: attempt,
		Branch:  TaskBranch(s.RunID, taskID, attempt),
	}
}

func taskActionID(taskID string, attempt int, st Stage) string {
	return fmt.Sprintf("task/%s/a%d/%s", taskID, attempt, st)
}

func taskDepth(s State, taskID string) string {
	if pt, ok := s.Plan.Task(taskID); ok && pt.ReviewDepth != "" {
		return pt.ReviewDepth
	}
	return s.Settings.Depth
}

func stageAction(s State, t *TaskState) Action {
	a := Action{
		ID:      taskActionID(t.ID, t.Attempt, t.Stage),
		TaskID:  t.ID,
		Attempt: t.Attempt,
		Depth:   taskDepth(s, t.ID),
		Branch:  TaskBranch(s.RunID, t.ID, t.Attempt),
	}
	a.Type, a.Role = stageWork(t.Stage)
	return a
}

// stageWork is the action type, and for a delegation the role, that does a
// task's stage.
func stageWork(st Stage) (ActionType, string) {
	switch st {
	case StageWorktree:
		return ActWorktree, ""
	case StageExecute:
		return ActDelegate, RoleExecutor
	case StageGates:
		return ActGates, ""
	case StageReview:
		return ActDelegate, RoleCodeReviewer
	case StageVerify:
		return ActDelegate, RoleVerifier
	case StageMerge:
		return ActMerge, ""
	}
	return "", ""
}

// ActionOfID reads back what an action id says about its action: its type,
// role, task and attempt. Ids are derived from the state (see Next), which
// is what makes them readable; a display uses this once the action is no
// longer in flight.
func ActionOfID(id string) Action {
	a := Action{ID: id}
	parts := strings.Split(id, "/")
	switch parts[0] {
	case "baseline":
		a.Type = ActBaseline
	case "final":
		a.Type = ActFinalVerify
	case "approve":
		a.Type = ActAsk
	case "point":
		a.Type = ActPoint
		if len(parts) > 1 {
			a.Point = parts[1]
		}
	case "research":
		a.Type, a.Role = ActDelegate, RoleResearcher
	case "plan":
		a.Type, a.Role = ActDelegate, RolePlanner
		if len(parts) == 3 && parts[2] == RoleDesignSpec {
			a.Role = RoleDesignSpec
		}
	case "critique":
		a.Type, a.Role = ActDelegate, RoleCritic
	case "task":
		if len(parts) == 4 {
			a.TaskID = parts[1]
			fmt.Sscanf(parts[2], "a%d", &a.Attempt)
			a.Type, a.Role = stageWork(Stage(parts[3]))
		}
	}
	return a
}

// Issue folds the start of an action into the state, so Next never returns
// the same work twice.
func Issue(s State, a Action) State {
	s = s.clone()
	if s.InFlight == nil {
		s.InFlight = map[string]Action{}
	}
	s.InFlight[a.ID] = a
	if a.Type == ActWorktree {
		if t := s.Tasks[a.TaskID]; t != nil && t.Status == TaskPending {
			t.Status = TaskRunning
			t.Attempt = a.Attempt
			t.Stage = StageWorktree
		}
	}
	return s
}

// Apply folds one event into the state.
func Apply(s State, e Event) State {
	s = s.clone()
	switch e.Type {
	case EvPaused, EvBudgetExhausted:
		if s.Status == StatusRunning {
			s.Status, s.Reason = StatusPaused, e.Reason
		}
		return s
	case EvResumed:
		if e.Budget != nil {
			s.Settings.Budget = *e.Budget
		}
		if e.Approve {
			s.Settings.AutoApprove = true
		}
		if s.Status == StatusPaused {
			s.Status, s.Reason = StatusRunning, ""
		}
		if s.Phase == PhaseApproval && s.Settings.AutoApprove {
			for id, a := range s.InFlight {
				if a.Type == ActAsk {
					delete(s.InFlight, id)
				}
			}
			s.Approved = true
			startExecute(&s)
		}
		checkBudget(&s)
		return s
	}
	a, ok := s.InFlight[e.ActionID]
	if !ok {
		// An answer to nothing in flight (a duplicate after a crash) changes nothing.
		return s
	}
	delete(s.InFlight, e.ActionID)
	if e.Type == EvDelegationDone || e.Type == EvDelegationFail {
		s.Usage = s.Usage.Add(e.Usage)
		if s.UsageByRole == nil {
			s.UsageByRole = map[string]Usage{}
		}
		s.UsageByRole[a.Role] = s.UsageByRole[a.Role].Add(e.Usage)
		if t := s.Tasks[a.TaskID]; t != nil {
			t.Usage = t.Usage.Add(e.Usage)
		}
		if e.Type == EvDelegationFail && interrupted(e.Reason) {
			// Not the attempt's fault: the same work is issued again later
			// and does not count as a retry.
			if e.Reason == ReasonBudget && s.Status == StatusRunning {
				s.Status, s.Reason = StatusPaused, "budget exhausted: "+e.Detail
			}
			return s
		}
	}
	switch a.Type {
	case ActBaseline:
		s.BaselineDone = true
		s.BaselineReport = e.Detail
		s.Phase = PhaseResearch
	case ActDelegate:
		applyDelegation(&s, a, e)
	case ActAsk:
		if e.Type == EvUserAnswered && e.Approve {
			s.Approved = true
			startExecute(&s)
		} else {
			s.Status, s.Reason = StatusFailed, "the plan was rejected"
			if e.Detail != "" {
				s.Reason += ": " + e.Detail
			}
		}
	case ActWorktree, ActGates, ActMerge:
		applyTaskEvent(&s, a, e)
	case ActFinalVerify:
		applyFinal(&s, e)
	case ActPoint:
		s.Fired = append(s.Fired, a.ID)
		if e.Type != EvPointFired || !e.Passed {
			detail := e.Detail
			if detail == "" {
				detail = "a blocking gate failed"
			}
			s.Ending = nil
			failRun(&s, fmt.Sprintf("capability gates at %s: %s", a.Point, detail))
			break
		}
		if a.Point == "complete" && s.Ending != nil {
			s.Status, s.Reason, s.Ending = s.Ending.Status, s.Ending.Reason, nil
		}
	}
	checkBudget(&s)
	return s
}

// pendingPoint is the run-level extension point that must fire before
// anything else happens in the current phase, if any.
func pendingPoint(s State) (Action, bool) {
	if len(s.Settings.GatePoints) == 0 {
		return Action{}, false
	}
	want := func(point, suffix string) (Action, bool) {
		if !slices.Contains(s.Settings.GatePoints, point) {
			return Action{}, false
		}
		id := "point/" + point + suffix
		if slices.Contains(s.Fired, id) {
			return Action{}, false
		}
		return Action{ID: id, Type: ActPoint, Point: point}, true
	}
	var order []string
	switch s.Phase {
	case PhaseResearch:
		order = []string{"research:pre"}
	case PhasePlan:
		order = []string{"research:post", "plan:pre"}
	case PhaseCritique:
		order = []string{"critique:pre"}
	case PhaseExecute:
		order = []string{"critique:post", "execute:pre"}
	case PhaseVerify:
		order = []string{"critique:post", "execute:pre"}
	case PhaseComplete:
		if s.Ending == nil {
			return Action{}, false
		}
		return want("complete", "")
	}
	for _, p := range order {
		if a, ok := want(p, ""); ok {
			return a, true
		}
	}
	if s.Settings.Schedule == "waves" && (s.Phase == PhaseExecute || s.Phase == PhaseVerify) {
		cur := currentWave(s)
		if s.Phase == PhaseVerify {
			cur = maxWave(s) + 1
		}
		for w := 0; w < cur; w++ {
			if hasWave(s, w) {
				if a, ok := want("execute:wave:post", fmt.Sprintf("/w%d", w)); ok {
					return a, true
				}
			}
		}
		if s.Phase == PhaseExecute && cur >= 0 {
			if a, ok := want("execute:wave:pre", fmt.Sprintf("/w%d", cur)); ok {
				return a, true
			}
		}
	}
	if s.Phase == PhaseVerify {
		return want("execute:post", "")
	}
	return Action{}, false
}

func maxWave(s State) int {
	m := -1
	for _, t := range s.Tasks {
		m = max(m, t.Wave)
	}
	return m
}

func hasWave(s State, w int) bool {
	for _, t := range s.Tasks {
		if t.Wave == w {
			return true
		}
	}
	return false
}

func interrupted(reason string) bool { return reason == ReasonBudget || reason == ReasonCancelled }

func checkBudget(s *State) {
	if s.Status != StatusRunning {
		return
	}
	b := s.Settings.Budget
	switch {
	case b.Tokens > 0 && s.Usage.Tokens >= b.Tokens:
		s.Status, s.Reason = StatusPaused, fmt.Sprintf("budget exhausted: %d of %d tokens used", s.Usage.Tokens, b.Tokens)
	case b.USD > 0 && s.Usage.CostUSD >= b.USD:
		s.Status, s.Reason = StatusPaused, fmt.Sprintf("budget exhausted: $%.4f of $%.2f spent", s.Usage.CostUSD, b.USD)
	}
}

func failRun(s *State, reason string) {
	s.Status, s.Reason = StatusFailed, reason
}

func applyDelegation(s *State, a Action, e Event) {
	failed := e.Type != EvDelegationDone
	switch a.Role {
	case RoleResearcher:
		if failed {
			if !s.ResearchRetried {
				s.ResearchRetried = true
				return
			}
			failRun(s, fmt.Sprintf("research failed twice: %s: %s", e.Reason, e.Detail))
			return
		}
		s.ResearchPasses++
		s.Research = e.Output
		if s.ResearchPasses >= s.Settings.ResearchPasses {
			s.Phase = PhasePlan
		}
	case RolePlanner:
		if failed {
			failRun(s, fmt.Sprintf("planning failed: %s: %s", e.Reason, e.Detail))
			return
		}
		var out struct {
			Plan *plan.Plan `json:"plan"`
		}
		if err := json.Unmarshal(e.Output, &out); err != nil || out.Plan == nil || len(out.Plan.Tasks) == 0 {
			failRun(s, "planning failed: the planner returned no plan with tasks")
			return
		}
		p := *out.Plan
		p.Goal = s.Settings.Goal
		p.CritiqueHistory = append([]plan.Critique(nil), s.Critiques...)
		s.Plan = &p
		s.PlanVersion++
		s.Phase = PhaseCritique
	case RoleDesignSpec:
		// Advisory: a failed design spec is recorded in the journal and the
		// critique goes on without it.
		s.DesignSpecVersion = a.Iteration
	case RoleCritic:
		if failed {
			failRun(s, fmt.Sprintf("critique failed: %s: %s", e.Reason, e.Detail))
			return
		}
		applyCritique(s, e.Output)
	default:
		applyTaskDelegation(s, a, e)
	}
}

func applyCritique(s *State, output json.RawMessage) {
	var out struct {
		Verdict      string `json:"verdict"`
		Objection    string `json:"objection"`
		Category     string `json:"objection_category"`
		Severity     string `json:"severity"`
		SuggestedFix string `json:"suggested_fix"`
	}
	_ = json.Unmarshal(output, &out)
	c := plan.Critique{
		Iteration:    len(s.Critiques) + 1,
		Verdict:      strings.ToUpper(out.Verdict),
		Objection:    out.Objection,
		Category:     out.Category,
		Severity:     out.Severity,
		SuggestedFix: out.SuggestedFix,
		Resolved:     strings.EqualFold(out.Verdict, "APPROVE"),
	}
	if c.Verdict == "APPROVE" {
		// The revision that earned approval resolved the earlier objections.
		for i := range s.Critiques {
			s.Critiques[i].Resolved = true
		}
	}
	s.Critiques = append(s.Critiques, c)
	if s.Plan != nil {
		s.Plan.CritiqueHistory = append([]plan.Critique(nil), s.Critiques...)
	}
	switch {
	case c.Verdict == "APPROVE":
		enterApproval(s)
	case len(s.Critiques) < s.Settings.CriticMaxIterations:
		s.Phase = PhasePlan
	case s.Settings.OnCriticExhausted == "proceed":
		if s.Plan != nil {
			s.Plan.PreMortem = append(s.Plan.PreMortem, "Accepted risk (critic objection not resolved): "+c.Objection)
		}
		enterApproval(s)
	default:
		// "ask": the user decides, with the objection in the question.
		s.Phase = PhaseApproval
		if s.Settings.AutoApprove {
			s.Approved = true
			startExecute(s)
		}
	}
}

func enterApproval(s *State) {
	s.Phase = PhaseApproval
	if s.Settings.AutoApprove {
		s.Approved = true
		startExecute(s)
	}
}

func startExecute(s *State) {
	s.Phase = PhaseExecute
	s.Tasks = map[string]*TaskState{}
	s.Order = nil
	waves, _ := plan.Waves(s.Plan)
	waveOf := map[string]int{}
	for i, w := range waves {
		for _, id := range w {
			waveOf[id] = i
		}
	}
	for _, t := range s.Plan.Tasks {
		s.Order = append(s.Order, t.ID)
		s.Tasks[t.ID] = &TaskState{ID: t.ID, Status: TaskPending, Wave: waveOf[t.ID]}
	}
	finishExecuteIfDone(s)
}

func applyTaskDelegation(s *State, a Action, e Event) {
	t := s.Tasks[a.TaskID]
	if t == nil || t.Status != TaskRunning || t.Attempt != a.Attempt {
		return
	}
	if e.Type != EvDelegationDone {
		failAttempt(s, t, Failure{Report: fmt.Sprintf("%s delegation failed (%s): %s", a.Role, e.Reason, e.Detail)})
		return
	}
	switch a.Role {
	case RoleExecutor:
		var out struct {
			Status   string   `json:"status"`
			Warnings []string `json:"warnings"`
		}
		_ = json.Unmarshal(e.Output, &out)
		t.Executor = e.Output
		if st := strings.ToUpper(out.Status); st != "" && st != "COMPLETE" {
			failAttempt(s, t, Failure{Report: "the executor reported status " + st, SpecificFailures: out.Warnings})
			return
		}
		t.Stage = StageGates
	case RoleCodeReviewer:
		var out struct {
			Verdict  string `json:"verdict"`
			Findings []struct {
				Severity     string `json:"severity"`
				File         string `json:"file"`
				Issue        string `json:"issue"`
				SuggestedFix string `json:"suggested_fix"`
			} `json:"findings"`
		}
		_ = json.Unmarshal(e.Output, &out)
		t.Review = e.Output
		var blocking, risks []string
		for _, f := range out.Findings {
			line := strings.TrimSpace(f.File + ": " + f.Issue)
			if f.Severity == "blocking" {
				if f.SuggestedFix != "" {
					line += " (fix: " + f.SuggestedFix + ")"
				}
				blocking = append(blocking, line)
			} else {
				risks = append(risks, f.Severity+": "+line)
			}
		}
		if len(blocking) > 0 {
			failAttempt(s, t, Failure{Report: "the code review found blocking problems", SpecificFailures: blocking})
			return
		}
		t.Risks = append(t.Risks, risks...)
		t.Stage = StageVerify
	case RoleVerifier:
		var out struct {
			Verdict         string   `json:"verdict"`
			Failures        []string `json:"failures"`
			FixInstructions string   `json:"fix_instructions"`
		}
		_ = json.Unmarshal(e.Output, &out)
		if strings.ToUpper(out.Verdict) != "PASS" {
			failAttempt(s, t, Failure{Report: "the verifier found unmet acceptance criteria", SpecificFailures: out.Failures, FixInstructions: out.FixInstructions})
			return
		}
		t.Stage = StageMerge
	}
}

func applyTaskEvent(s *State, a Action, e Event) {
	t := s.Tasks[a.TaskID]
	if t == nil || t.Status != TaskRunning || t.Attempt != a.Attempt {
		return
	}
	if e.Type == EvActionError {
		failAttempt(s, t, Failure{Report: fmt.Sprintf("%s failed: %s", a.Type, e.Detail)})
		return
	}
	switch e.Type {
	case EvWorktreeReady:
		t.Base, t.Branch, t.Worktree = e.Base, e.Branch, e.Worktree
		t.Stage = StageExecute
	case EvGatesEvaluated:
		t.Head, t.Changed, t.Gates = e.Head, e.Changed, e.Gates
		if len(e.Changed) == 0 {
			failAttempt(s, t, Failure{Report: "the executor changed no files"})
			return
		}
		if !e.Passed {
			var failing []string
			for _, g := range e.Gates {
				if !g.Passed && !g.Skipped {
					line := fmt.Sprintf("%s gate failed: `%s`", g.Name, g.Command)
					if g.Note != "" {
						line += " (" + g.Note + ")"
					}
					if g.OutputTail != "" {
						line += "\n" + g.OutputTail
					}
					failing = append(failing, line)
				}
			}
			failAttempt(s, t, Failure{Report: "quality gates failed in the task's worktree", SpecificFailures: failing, FixInstructions: "Make every failing gate pass; the output above is what the command printed."})
			return
		}
		if taskDepth(*s, t.ID) == plan.DepthLightweight {
			t.Stage = StageVerify
		} else {
			t.Stage = StageReview
		}
	case EvMerged:
		t.Status, t.Stage, t.Merged = TaskMerged, "", e.Head
		t.Reason = ""
		finishExecuteIfDone(s)
	case EvMergeConflict:
		failAttempt(s, t, Failure{
			Report:           "merging onto the integration branch conflicted; the task is retried on the new base",
			SpecificFailures: e.Files,
			FixInstructions:  "Redo the task on the current integration head; the conflicting files changed under you.",
		})
	}
}

func failAttempt(s *State, t *TaskState, f Failure) {
	f.Attempt = t.Attempt
	f.Stage = t.Stage
	t.Failures = append(t.Failures, f)
	if t.Attempt <= s.Settings.TaskRetries {
		t.Attempt++
		t.Stage = StageWorktree
		prev := f
		t.PreviousFailure = &prev
		t.Executor, t.Gates, t.Review, t.Head, t.Changed = nil, nil, nil, "", nil
		t.Base, t.Branch, t.Worktree = "", "", ""
		return
	}
	t.Status, t.Stage = TaskFailed, ""
	t.Reason = fmt.Sprintf("failed after %d attempts: %s", t.Attempt, f.Report)
	if len(f.SpecificFailures) > 0 {
		first, _, _ := strings.Cut(f.SpecificFailures[0], "\n")
		t.Reason += ": " + first
	}
	skipDependents(s)
	finishExecuteIfDone(s)
}

// skipDependents marks every pending task downstream of a failed or skipped
// task as skipped, naming the dependency.
func skipDependents(s *State) {
	for changed := true; changed; {
		changed = false
		for _, id := range s.Order {
			t := s.Tasks[id]
			if t.Status != TaskPending {
				continue
			}
			pt, _ := s.Plan.Task(id)
			for _, d := range pt.DependsOn {
				if st := s.Tasks[d].Status; st == TaskFailed || st == TaskSkipped {
					t.Status = TaskSkipped
					t.Reason = fmt.Sprintf("skipped: dependency %s %s", d, st)
					changed = true
					break
				}
			}
		}
	}
}

func finishExecuteIfDone(s *State) {
	merged := 0
	for _, id := range s.Order {
		st := s.Tasks[id].Status
		if !terminal(st) {
			return
		}
		if st == TaskMerged {
			merged++
		}
	}
	if merged == 0 {
		s.Phase = PhaseComplete
		failRun(s, "no task was merged")
		return
	}
	s.Phase = PhaseVerify
}

func applyFinal(s *State, e Event) {
	s.FinalDone = true
	s.FinalPassed = e.Type == EvFinalVerified && e.Passed
	s.FinalGates = e.Gates
	s.FinalReport = e.Detail
	s.Phase = PhaseComplete
	var failed, skipped []string
	for _, id := range s.Order {
		switch s.Tasks[id].Status {
		case TaskFailed:
			failed = append(failed, id)
		case TaskSkipped:
			skipped = append(skipped, id)
		}
	}
	switch {
	case !s.FinalPassed:
		failRun(s, "final verification of the integration branch failed")
	case len(failed) > 0 || len(skipped) > 0:
		failRun(s, fmt.Sprintf("tasks failed: %s; skipped: %s", listOrNone(failed), listOrNone(skipped)))
	default:
		s.Status, s.Reason = StatusDone, "every task merged and the integration branch passed its gates"
	}
	if slices.Contains(s.Settings.GatePoints, "complete") {
		// The complete point fires before the run is over.
		s.Ending = &Ending{Status: s.Status, Reason: s.Reason}
		s.Status, s.Reason = StatusRunning, ""
	}
}

func listOrNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// clone deep-copies the parts of the state that Issue and Apply change, so
// callers' states are never mutated.
func (s State) clone() State {
	c := s
	if s.Tasks != nil {
		c.Tasks = make(map[string]*TaskState, len(s.Tasks))
		for k, v := range s.Tasks {
			t := *v
			t.Failures = append([]Failure(nil), v.Failures...)
			t.Risks = append([]string(nil), v.Risks...)
			c.Tasks[k] = &t
		}
	}
	c.Order = append([]string(nil), s.Order...)
	c.Fired = append([]string(nil), s.Fired...)
	if s.Ending != nil {
		e := *s.Ending
		c.Ending = &e
	}
	c.Critiques = append([]plan.Critique(nil), s.Critiques...)
	if s.InFlight != nil {
		c.InFlight = make(map[string]Action, len(s.InFlight))
		for k, v := range s.InFlight {
			c.InFlight[k] = v
		}
	}
	if s.UsageByRole != nil {
		c.UsageByRole = make(map[string]Usage, len(s.UsageByRole))
		for k, v := range s.UsageByRole {
			c.UsageByRole[k] = v
		}
	}
	if s.Plan != nil {
		p := *s.Plan
		p.Tasks = append([]plan.Task(nil), s.Plan.Tasks...)
		p.PreMortem = append([]string(nil), s.Plan.PreMortem...)
		p.CritiqueHistory = append([]plan.Critique(nil), s.Plan.CritiqueHistory...)
		c.Plan = &p
	}
	return c
}

// InFlightActions returns the actions in flight in a stable order, for an
// engine resuming a run.
func InFlightActions(s State) []Action {
	out := make([]Action, 0, len(s.InFlight))
	for _, a := range s.InFlight {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Summary is a one-line compressed snapshot for current_state_summary
// (seed 001).
func Summary(s State, taskID string) string {
	parts := []string{"Phase: " + string(s.Phase)}
	if len(s.Order) > 0 {
		done := 0
		for _, id := range s.Order {
			if terminal(s.Tasks[id].Status) {
				done++
			}
		}
		if taskID != "" {
			parts = append(parts, fmt.Sprintf("Task: %s (%d/%d done)", taskID, done, len(s.Order)))
		} else {
			parts = append(parts, fmt.Sprintf("%d/%d tasks done", done, len(s.Order)))
		}
	}
	if c := lastCritique(s); c != nil && s.Phase != PhaseExecute {
		parts = append(parts, fmt.Sprintf("Critique %d: %s", c.Iteration, c.Verdict))
	}
	return strings.Join(parts, ", ")
}
