package capability

import "slices"

// Point is a loop extension point: a place in the loop where the host
// (engine + reducer) evaluates the gates capabilities declare there and
// hands their contributions to the delegations of the roles listed.
type Point struct {
	Name string
	// Step is the loop step the point belongs to (its family bounds Roles).
	Step string
	// Roles are the agent roles that delegate at this point, the only
	// roles a contribution here may go into. Empty means the point takes
	// gates only: no delegation happens there for a contribution to reach.
	Roles []string
	// Phases are the loop phases in which those delegations happen. The
	// integrator's per-task review and verification run while the loop is
	// in its execute phase, so verify:pre lists both execute and verify.
	Phases []string
	// WavesOnly marks a point that fires only under the waves schedule.
	WavesOnly bool
	// Fires says when the host fires the point, for documentation.
	Fires string
}

// Points returns every extension point in firing order. The slice and its
// Roles are fresh on every call.
func Points() []Point {
	return []Point{
		{Name: "research:pre", Step: StepResearch, Roles: []string{"researcher"}, Phases: []string{"research"},
			Fires: "when the research phase starts; its contributions reach every researcher delegation"},
		{Name: "research:post", Step: StepResearch, Phases: []string{"research"},
			Fires: "when research output is accepted, before planning; gates only"},
		{Name: "plan:pre", Step: StepPlan, Roles: []string{"planner", "architect", "design-spec"}, Phases: []string{"plan"},
			Fires: "when the plan phase starts; its contributions reach every planner, architect and design-spec delegation of the plan step"},
		{Name: "plan:post", Step: StepPlan, Roles: []string{"design-spec"}, Phases: []string{"plan"},
			Fires: "after each planner delegation succeeds, before critique: the host runs one delegation of each role contributed into here (design-spec) on the new plan and records its document as a run artifact"},
		{Name: "critique:pre", Step: StepCritique, Roles: []string{"critic"}, Phases: []string{"critique"},
			Fires: "when a critique starts; its contributions reach every critic delegation"},
		{Name: "critique:post", Step: StepCritique, Phases: []string{"critique"},
			Fires: "when a critique is accepted (approval or revision follows); gates only"},
		{Name: "execute:pre", Step: StepExecute, Roles: []string{"executor", "test-designer"}, Phases: []string{"execute"},
			Fires: "once when the execute phase starts, before the first worktree; its contributions reach every executor and test-designer delegation"},
		{Name: "execute:wave:pre", Step: StepExecute, Roles: []string{"executor", "test-designer"}, Phases: []string{"execute"}, WavesOnly: true,
			Fires: "under the waves schedule, when a wave starts; its contributions reach the executor and test-designer delegations of every wave"},
		{Name: "execute:task:pre", Step: StepExecute, Roles: []string{"executor", "test-designer"}, Phases: []string{"execute"},
			Fires: "when a task's worktree is ready, before its executor; its contributions reach every task's executor and test-designer delegations"},
		{Name: "execute:task:post", Step: StepExecute, Phases: []string{"execute"},
			Fires: "when a task's executor has finished, with the task's quality gates; gates only"},
		{Name: "execute:wave:post", Step: StepExecute, Phases: []string{"execute"}, WavesOnly: true,
			Fires: "under the waves schedule, when every task of a wave is terminal, before the next wave; gates only"},
		{Name: "execute:post", Step: StepExecute, Phases: []string{"execute"},
			Fires: "once when every task is terminal, before final verification; gates only"},
		{Name: "verify:pre", Step: StepVerify, Roles: []string{"code-reviewer", "verifier", "linting"}, Phases: []string{"execute", "verify"},
			Fires: "before a task's review and verification; its contributions reach every code-reviewer, verifier and linting delegation"},
		{Name: "verify:post", Step: StepVerify, Phases: []string{"execute", "verify"},
			Fires: "after a task's verifier passes, before it is merged; gates only (a blocking failure fails the attempt)"},
		{Name: "complete", Step: StepComplete, Phases: []string{"complete"},
			Fires: "when the run completes, after final verification; gates only (advisory in effect: nothing is left to block)"},
	}
}

// PointNames returns the names of every extension point in firing order.
func PointNames() []string {
	ps := Points()
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// LookupPoint returns the point named name.
func LookupPoint(name string) (Point, bool) {
	for _, p := range Points() {
		if p.Name == name {
			return p, true
		}
	}
	return Point{}, false
}

// PointsBefore returns, in firing order, the points whose contributions go
// into a delegation of role made while the loop is in phase, under
// schedule ("dag" or "waves"): the pre points of the role's step, and for
// design-spec in the plan phase also plan:post, the point its delegation
// runs at. The wave point is included only under the waves schedule. A
// role that does not delegate in phase gets nil.
func PointsBefore(role, phase, schedule string) []string {
	var out []string
	for _, p := range Points() {
		if !slices.Contains(p.Roles, role) || !slices.Contains(p.Phases, phase) {
			continue
		}
		if p.WavesOnly && schedule != "waves" {
			continue
		}
		out = append(out, p.Name)
	}
	return out
}
