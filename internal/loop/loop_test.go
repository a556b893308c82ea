package loop

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-run/sluice/internal/plan"
)

// world answers actions the way an engine would, from rules a test sets.
type world struct {
	plan *plan.Plan
	// critic verdicts in order; APPROVE once exhausted.
	critic []string
	// gatesPass decides the gates outcome of a task attempt.
	gatesPass func(task string, attempt int) bool
	// verify decides the verifier's verdict of a task attempt.
	verify func(task string, attempt int) bool
	// conflict decides whether a merge conflicts.
	conflict func(task string, attempt int) bool
	tokens   int64
	// pointFails names an extension point whose blocking gate fails.
	pointFails string
}

func (w *world) respond(a Action) Event {
	e := Event{ActionID: a.ID}
	switch a.Type {
	case ActBaseline:
		e.Type = EvBaselineDone
	case ActAsk:
		e.Type, e.Approve = EvUserAnswered, true
	case ActWorktree:
		e.Type, e.Base, e.Branch, e.Worktree = EvWorktreeReady, "base", a.Branch, "/wt/"+a.TaskID
	case ActGates:
		e.Type, e.Head, e.Changed = EvGatesEvaluated, "head-"+a.TaskID, []string{a.TaskID + ".go"}
		e.Passed = w.gatesPass == nil || w.gatesPass(a.TaskID, a.Attempt)
		e.Gates = []GateSummary{{Name: "test", Command: "go test ./...", Passed: e.Passed, OutputTail: "--- FAIL: TestX"}}
	case ActMerge:
		if w.conflict != nil && w.conflict(a.TaskID, a.Attempt) {
			e.Type, e.Files = EvMergeConflict, []string{"shared.go"}
		} else {
			e.Type, e.Head = EvMerged, "merge-"+a.TaskID
		}
	case ActFinalVerify:
		e.Type, e.Passed = EvFinalVerified, true
	case ActPoint:
		e.Type, e.Passed = EvPointFired, w.pointFails != a.Point
	case ActDelegate:
		e.Type = EvDelegationDone
		e.Usage = Usage{Tokens: w.tokens, Calls: 1}
		switch a.Role {
		case RoleResearcher:
			e.Output = json.RawMessage(`{"findings":{"architecture_notes":"n"}}`)
		case RolePlanner:
			out, _ := json.Marshal(map[string]any{"plan": w.plan})
			e.Output = out
		case RoleCritic:
			v := "APPROVE"
			if a.Iteration <= len(w.critic) {
				v = w.critic[a.Iteration-1]
			}
			e.Output = json.RawMessage(fmt.Sprintf(`{"verdict":%q,"objection":"objection %d"}`, v, a.Iteration))
		case RoleExecutor:
			e.Output = json.RawMessage(`{"status":"COMPLETE"}`)
		case RoleDesignSpec:
			e.Output = json.RawMessage(`{"document":"# Spec","summary":"s"}`)
		case RoleCodeReviewer:
			e.Output = json.RawMessage(`{"verdict":"APPROVE","findings":[]}`)
		case RoleVerifier:
			v := "PASS"
			if w.verify != nil && !w.verify(a.TaskID, a.Attempt) {
				v = "FAIL"
			}
			e.Output = json.RawMessage(fmt.Sprintf(`{"verdict":%q,"failures":["criterion x unmet"]}`, v))
		}
	}
	return e
}

// run drives the loop to rest, answering actions in the order chosen by
// pick (nil: first in flight), and returns the final state and the journal.
func run(t *testing.T, s State, w *world, pick func(n int) int) (State, []Entry) {
	t.Helper()
	var journal []Entry
	for step := 0; step < 10000; step++ {
		for _, a := range Next(s) {
			a := a
			journal = append(journal, Entry{Action: &a})
			s = Issue(s, a)
		}
		inflight := InFlightActions(s)
		if len(inflight) == 0 {
			return s, journal
		}
		i := 0
		if pick != nil {
			i = pick(len(inflight))
		}
		e := w.respond(inflight[i])
		journal = append(journal, Entry{Event: &e})
		s = Apply(s, e)
	}
	t.Fatal("loop did not come to rest in 10000 steps")
	return s, nil
}

func diamond() *plan.Plan {
	return &plan.Plan{Tasks: []plan.Task{
		{ID: "t1", Title: "base", FilesToModify: []string{"a.go"}, AcceptanceCriteria: []string{"c"}},
		{ID: "t2", Title: "left", DependsOn: []string{"t1"}, FilesToModify: []string{"b.go"}, AcceptanceCriteria: []string{"c"}},
		{ID: "t3", Title: "right", DependsOn: []string{"t1"}, FilesToModify: []string{"c.go"}, AcceptanceCriteria: []string{"c"}},
		{ID: "t4", Title: "top", DependsOn: []string{"t2", "t3"}, FilesToModify: []string{"d.go"}, AcceptanceCriteria: []string{"c"}},
	}}
}

func settings() Settings {
	return Settings{Goal: "Add a thing", ResearchPasses: 2, CriticMaxIterations: 3, TaskRetries: 2, OnCriticExhausted: "ask", Jobs: 4, AutoApprove: true}
}

func TestGreenRunGoesThroughEveryPhase(t *testing.T) {
	w := &world{plan: diamond(), critic: []string{"REVISE"}}
	s, journal := run(t, New("r1", settings()), w, nil)
	if s.Status != StatusDone || s.Phase != PhaseComplete {
		t.Fatalf("status %s phase %s reason %q", s.Status, s.Phase, s.Reason)
	}
	var ids []string
	for _, e := range journal {
		if e.Action != nil && !strings.HasPrefix(e.Action.ID, "task/") {
			ids = append(ids, e.Action.ID)
		}
	}
	want := []string{"baseline", "research/p1", "research/p2", "plan/i1", "critique/i1", "plan/i2", "critique/i2", "final"}
	if !reflect.DeepEqual(ids, want) {
		t.Fatalf("phase actions = %v, want %v", ids, want)
	}
	if s.PlanVersion != 2 || len(s.Critiques) != 2 || !s.Critiques[0].Resolved {
		t.Fatalf("critique history = %+v", s.Critiques)
	}
	for _, id := range s.Order {
		if s.Tasks[id].Status != TaskMerged || s.Tasks[id].Attempt != 1 {
			t.Fatalf("task %s = %+v", id, s.Tasks[id])
		}
	}
}

func TestCriticRevisingThreeTimesAsksTheUser(t *testing.T) {
	st := settings()
	st.AutoApprove = false
	s := New("r1", st)
	w := &world{plan: diamond(), critic: []string{"REVISE", "REVISE", "REVISE"}}
	// Drive until the loop asks.
	for i := 0; i < 100 && s.Phase != PhaseApproval; i++ {
		for _, a := range Next(s) {
			s = Issue(s, a)
		}
		for _, a := range InFlightActions(s) {
			s = Apply(s, w.respond(a))
		}
	}
	if s.Phase != PhaseApproval || len(s.Critiques) != 3 {
		t.Fatalf("phase %s after %d critiques", s.Phase, len(s.Critiques))
	}
	next := Next(s)
	if len(next) != 1 || next[0].Type != ActAsk || !strings.Contains(next[0].Question, "objection 3") {
		t.Fatalf("want one ask naming the last objection, got %+v", next)
	}
	s = Issue(s, next[0])
	s = Apply(s, Event{ActionID: next[0].ID, Type: EvUserAnswered, Approve: false, Detail: "too risky"})
	if s.Status != StatusFailed || !strings.Contains(s.Reason, "rejected") {
		t.Fatalf("rejection: status %s reason %q", s.Status, s.Reason)
	}
}

func TestCriticExhaustedWithProceedRecordsTheRisk(t *testing.T) {
	st := settings()
	st.OnCriticExhausted = "proceed"
	w := &world{plan: diamond(), critic: []string{"REVISE", "REVISE", "REVISE"}}
	s, _ := run(t, New("r1", st), w, nil)
	if s.Status != StatusDone {
		t.Fatalf("status %s: %s", s.Status, s.Reason)
	}
	if len(s.Plan.PreMortem) != 1 || !strings.Contains(s.Plan.PreMortem[0], "objection 3") {
		t.Fatalf("pre_mortem = %v", s.Plan.PreMortem)
	}
}

func TestExecutorFailingTwiceThenPassingIsMergedOnTheThirdAttempt(t *testing.T) {
	w := &world{plan: diamond(), gatesPass: func(task string, attempt int) bool { return task != "t2" || attempt == 3 }}
	s, journal := run(t, New("r1", settings()), w, nil)
	t2 := s.Tasks["t2"]
	if s.Status != StatusDone || t2.Status != TaskMerged || t2.Attempt != 3 || len(t2.Failures) != 2 {
		t.Fatalf("status %s, t2 = %+v", s.Status, t2)
	}
	// The third executor delegation carried the second failure.
	if t2.PreviousFailure == nil || t2.PreviousFailure.Attempt != 2 || !strings.Contains(strings.Join(t2.PreviousFailure.SpecificFailures, "\n"), "--- FAIL: TestX") {
		t.Fatalf("previous failure = %+v", t2.PreviousFailure)
	}
	var worktrees []string
	for _, e := range journal {
		if e.Action != nil && e.Action.Type == ActWorktree && e.Action.TaskID == "t2" {
			worktrees = append(worktrees, e.Action.Branch)
		}
	}
	if len(worktrees) != 3 || worktrees[0] == worktrees[2] {
		t.Fatalf("each attempt gets its own branch: %v", worktrees)
	}
}

func TestTaskFailingThreeTimesSkipsDependentsAndOthersProceed(t *testing.T) {
	w := &world{plan: diamond(), verify: func(task string, _ int) bool { return task != "t2" }}
	s, _ := run(t, New("r1", settings()), w, nil)
	if s.Status != StatusFailed {
		t.Fatalf("status %s", s.Status)
	}
	if got := s.Tasks["t2"]; got.Status != TaskFailed || got.Attempt != 3 || !strings.Contains(got.Reason, "3 attempts") {
		t.Fatalf("t2 = %+v", got)
	}
	if got := s.Tasks["t3"]; got.Status != TaskMerged {
		t.Fatalf("independent t3 = %+v", got)
	}
	if got := s.Tasks["t4"]; got.Status != TaskSkipped || !strings.Contains(got.Reason, "dependency t2 failed") {
		t.Fatalf("dependent t4 = %+v", got)
	}
	if !strings.Contains(s.Reason, "t2") || !strings.Contains(s.Reason, "t4") {
		t.Fatalf("summary should name failed and skipped tasks: %q", s.Reason)
	}
}

func TestMergeConflictRetriesOnTheNewBase(t *testing.T) {
	w := &world{plan: diamond(), conflict: func(task string, attempt int) bool { return task == "t3" && attempt == 1 }}
	s, _ := run(t, New("r1", settings()), w, nil)
	t3 := s.Tasks["t3"]
	if s.Status != StatusDone || t3.Attempt != 2 || t3.Failures[0].Stage != StageMerge {
		t.Fatalf("status %s, t3 = %+v", s.Status, t3)
	}
}

func TestBudgetExhaustionPausesAndResumeFinishes(t *testing.T) {
	st := settings()
	st.Budget = Budget{Tokens: 1000}
	w := &world{plan: diamond(), tokens: 100}
	s, _ := run(t, New("r1", st), w, nil)
	if s.Status != StatusPaused || !strings.Contains(s.Reason, "budget exhausted") {
		t.Fatalf("status %s reason %q", s.Status, s.Reason)
	}
	if s.Phase != PhaseExecute {
		t.Fatalf("want a pause mid-execute, phase %s", s.Phase)
	}
	if len(Next(s)) != 0 {
		t.Fatal("a paused run must not start work")
	}
	s = Apply(s, Event{Type: EvResumed, Budget: &Budget{Tokens: 100000}})
	s, _ = run(t, s, w, nil)
	if s.Status != StatusDone {
		t.Fatalf("after resume: status %s reason %q", s.Status, s.Reason)
	}
}

func TestInterruptedDelegationIsReissuedWithoutCountingARetry(t *testing.T) {
	s := New("r1", settings())
	w := &world{plan: diamond()}
	for s.Phase != PhaseExecute || s.Tasks["t1"].Stage != StageExecute {
		for _, a := range Next(s) {
			s = Issue(s, a)
		}
		a := InFlightActions(s)[0]
		s = Apply(s, w.respond(a))
	}
	next := Next(s)
	if len(next) != 1 || next[0].Role != RoleExecutor {
		t.Fatalf("want the executor, got %+v", next)
	}
	s = Issue(s, next[0])
	s = Apply(s, Event{ActionID: next[0].ID, Type: EvDelegationFail, Reason: ReasonCancelled})
	again := Next(s)
	if len(again) != 1 || again[0].ID != next[0].ID || s.Tasks["t1"].Attempt != 1 || len(s.Tasks["t1"].Failures) != 0 {
		t.Fatalf("re-issue: %+v, task %+v", again, s.Tasks["t1"])
	}
}

func TestApplyNeverMutatesItsInput(t *testing.T) {
	s := New("r1", settings())
	w := &world{plan: diamond()}
	for i := 0; i < 200 && s.Status == StatusRunning; i++ {
		for _, a := range Next(s) {
			before, _ := json.Marshal(s)
			s2 := Issue(s, a)
			after, _ := json.Marshal(s)
			if string(before) != string(after) {
				t.Fatalf("Issue mutated its input at %s", a.ID)
			}
			s = s2
		}
		inflight := InFlightActions(s)
		if len(inflight) == 0 {
			break
		}
		before, _ := json.Marshal(s)
		s2 := Apply(s, w.respond(inflight[0]))
		after, _ := json.Marshal(s)
		if string(before) != string(after) {
			t.Fatalf("Apply mutated its input at %s", inflight[0].ID)
		}
		s = s2
	}
}

func randomPlan(r *rand.Rand, n int) *plan.Plan {
	p := &plan.Plan{}
	files := []string{"a.go", "b.go", "c.go", "d.go", "e.go", "pkg/", "pkg/x.go", "f.go"}
	for i := 0; i < n; i++ {
		t := plan.Task{ID: fmt.Sprintf("t%02d", i), AcceptanceCriteria: []string{"works"}}
		for j := 0; j < i; j++ {
			if r.IntN(4) == 0 {
				t.DependsOn = append(t.DependsOn, fmt.Sprintf("t%02d", j))
			}
		}
		for k := 0; k < 1+r.IntN(2); k++ {
			t.FilesToModify = append(t.FilesToModify, files[r.IntN(len(files))])
		}
		p.Tasks = append(p.Tasks, t)
	}
	return p
}

// TestReplayAndSchedulingProperties: for random plans and random event
// orders, folding the journal reproduces the state exactly, and Next never
// starts a task whose dependencies are not merged or whose files overlap a
// running task.
func TestReplayAndSchedulingProperties(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		r := rand.New(rand.NewPCG(seed, seed*7))
		p := randomPlan(r, 2+r.IntN(12))
		st := settings()
		st.Jobs = 1 + r.IntN(4)
		if seed%2 == 0 {
			st.Schedule = "waves"
		}
		w := &world{
			plan:      p,
			critic:    []string{"REVISE"},
			gatesPass: func(string, int) bool { return r.IntN(3) != 0 },
			verify:    func(string, int) bool { return r.IntN(4) != 0 },
			conflict:  func(string, int) bool { return r.IntN(6) == 0 },
		}
		s := New("r", st)
		var journal []Entry
		for step := 0; step < 5000; step++ {
			for _, a := range Next(s) {
				if a.Type == ActWorktree && a.Attempt == 1 {
					checkStartable(t, seed, s, a)
				}
				a := a
				journal = append(journal, Entry{Action: &a})
				s = Issue(s, a)
			}
			inflight := InFlightActions(s)
			if len(inflight) == 0 {
				break
			}
			e := w.respond(inflight[r.IntN(len(inflight))])
			journal = append(journal, Entry{Event: &e})
			s = Apply(s, e)
		}
		if s.Phase != PhaseComplete {
			t.Fatalf("seed %d: ended in phase %s status %s", seed, s.Phase, s.Status)
		}
		replayed := Fold(New("r", st), journal)
		a, _ := json.Marshal(s)
		b, _ := json.Marshal(replayed)
		if string(a) != string(b) {
			t.Fatalf("seed %d: replay differs\nlive:   %s\nreplay: %s", seed, a, b)
		}
	}
}

func checkStartable(t *testing.T, seed uint64, s State, a Action) {
	t.Helper()
	pt, _ := s.Plan.Task(a.TaskID)
	for _, d := range pt.DependsOn {
		if s.Tasks[d].Status != TaskMerged {
			t.Fatalf("seed %d: %s started before dependency %s merged", seed, a.TaskID, d)
		}
	}
	running := 0
	for _, id := range s.Order {
		other := s.Tasks[id]
		if other.Status != TaskRunning {
			continue
		}
		running++
		op, _ := s.Plan.Task(id)
		if ov := plan.Overlap(pt, op); len(ov) > 0 {
			t.Fatalf("seed %d: %s started while %s (overlapping %v) runs", seed, a.TaskID, id, ov)
		}
	}
	if running >= s.Settings.Jobs {
		t.Fatalf("seed %d: %s started with %d running (jobs %d)", seed, a.TaskID, running, s.Settings.Jobs)
	}
}

func TestDesignSpecRunsAfterEveryPlanBeforeTheCritic(t *testing.T) {
	st := settings()
	st.DesignSpec = true
	w := &world{plan: diamond(), critic: []string{"REVISE"}}
	s, journal := run(t, New("r1", st), w, nil)
	if s.Status != StatusDone {
		t.Fatalf("status %s: %s", s.Status, s.Reason)
	}
	var ids []string
	for _, e := range journal {
		if e.Action != nil && (e.Action.Role == RolePlanner || e.Action.Role == RoleCritic || e.Action.Role == RoleDesignSpec) {
			ids = append(ids, e.Action.ID)
		}
	}
	want := []string{"plan/i1", "plan/v1/design-spec", "critique/i1", "plan/i2", "plan/v2/design-spec", "critique/i2"}
	if !reflect.DeepEqual(ids, want) {
		t.Fatalf("order = %v, want %v", ids, want)
	}
}

var runLevelPoints = []string{"research:pre", "research:post", "plan:pre", "critique:pre", "critique:post",
	"execute:pre", "execute:wave:pre", "execute:wave:post", "execute:post", "complete"}

// TestEveryRunLevelPointFiresInOrder: with gates declared at every run-level
// extension point, each fires once where the loop reaches it (the wave
// points once per wave), in loop order, and the run still completes.
func TestEveryRunLevelPointFiresInOrder(t *testing.T) {
	st := settings()
	st.Schedule = "waves"
	st.GatePoints = runLevelPoints
	s, journal := run(t, New("r1", st), &world{plan: diamond()}, nil)
	if s.Status != StatusDone {
		t.Fatalf("status %s: %s", s.Status, s.Reason)
	}
	var got []string
	firstTask, lastTask := -1, -1
	for i, e := range journal {
		if e.Action == nil {
			continue
		}
		switch {
		case e.Action.Type == ActPoint:
			got = append(got, strings.TrimPrefix(e.Action.ID, "point/"))
		case e.Action.TaskID != "":
			if firstTask < 0 {
				firstTask = len(got)
			}
			lastTask = len(got)
		}
		_ = i
	}
	want := []string{"research:pre", "research:post", "plan:pre", "critique:pre", "critique:post", "execute:pre",
		"execute:wave:pre/w0", "execute:wave:post/w0", "execute:wave:pre/w1", "execute:wave:post/w1",
		"execute:wave:pre/w2", "execute:wave:post/w2", "execute:post", "complete"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("points fired\n%v\nwant\n%v", got, want)
	}
	if firstTask != 7 || lastTask != 11 {
		t.Fatalf("tasks ran between points %d and %d, want between execute:wave:pre/w0 and execute:wave:post/w2", firstTask, lastTask)
	}
	// Without gate points the loop issues no point action at all.
	_, plain := run(t, New("r1", settings()), &world{plan: diamond()}, nil)
	for _, e := range plain {
		if e.Action != nil && e.Action.Type == ActPoint {
			t.Fatalf("a run without capability gates fired %s", e.Action.ID)
		}
	}
}

func TestAFailingBlockingPointGateFailsTheRun(t *testing.T) {
	for _, point := range []string{"research:post", "execute:pre", "execute:post", "complete"} {
		st := settings()
		st.GatePoints = runLevelPoints
		s, _ := run(t, New("r1", st), &world{plan: diamond(), pointFails: point}, nil)
		if s.Status != StatusFailed || !strings.Contains(s.Reason, point) {
			t.Fatalf("%s failing: status %s reason %q", point, s.Status, s.Reason)
		}
	}
}

// TestActionOfIDReadsBackEveryActionTheLoopIssues: for every action a run
// issues (with design spec, gate points and waves), the id alone gives back
// its type, role, task and attempt.
func TestActionOfIDReadsBackEveryActionTheLoopIssues(t *testing.T) {
	st := settings()
	st.Schedule, st.DesignSpec, st.GatePoints = "waves", true, runLevelPoints
	st.AutoApprove = false
	w := &world{plan: diamond(), critic: []string{"REVISE"}, gatesPass: func(task string, attempt int) bool { return task != "t2" || attempt > 1 }}
	_, journal := run(t, New("r1", st), w, nil)
	seen := 0
	for _, e := range journal {
		if e.Action == nil {
			continue
		}
		a := *e.Action
		got := ActionOfID(a.ID)
		if got.Type != a.Type || got.Role != a.Role || got.TaskID != a.TaskID || got.Attempt != a.Attempt || got.Point != a.Point {
			t.Fatalf("ActionOfID(%q) = %+v, issued as %+v", a.ID, got, a)
		}
		seen++
	}
	if seen < 30 {
		t.Fatalf("only %d actions checked", seen)
	}
}
