package agents

import (
	"github.com/sluice-run/sluice/internal/delegate"
	"github.com/sluice-run/sluice/internal/plan"
)

// SampleInput is a typical delegation of role in a run implementing seed
// 001's example feature, for showing what agents are sent.
func SampleInput(role string) delegate.Input {
	t := delegate.SampleTask()
	in := delegate.Input{
		Role:               role,
		FeatureName:        delegate.SampleFeature,
		FeatureDescription: "A paginated GET /api/search endpoint behind auth, validated with zod.",
		RunDir:             ".sluice/runs/sample",
		Research:           delegate.SampleResearch(),
		WorkspaceRoot:      ".",
		Constraints:        []string{"must use the existing auth middleware"},
	}
	switch role {
	case delegate.RoleResearcher:
		in.Research = nil
		in.FeatureDescription = ""
		in.StateSummary = "Phase: research, 0/0 tasks, starting fresh"
		in.Complexity = "medium"
		in.FocusAreas = []string{"handler patterns in src/api/handlers/", "route registration"}
	case delegate.RolePlanner, delegate.RoleArchitect, delegate.RoleDesignSpec:
		in.StateSummary = "Phase: plan, research complete"
	case delegate.RoleCritic:
		in.StateSummary = "Phase: critique, iteration 1/3, reviewing plan"
		in.Plan = &plan.Plan{Goal: delegate.SampleFeature, Tasks: []plan.Task{*t}}
		in.Iteration, in.MaxIterations = 1, 3
	default:
		in.Task = t
		in.StateSummary = "Phase: execute, Task: task-003 (2/7 done)"
		if role != delegate.RoleExecutor && role != delegate.RoleTestDesigner {
			in.StateSummary = "Phase: verify, Task: task-003, executor reported COMPLETE"
			res := &delegate.ExecutorOutput{Status: delegate.StatusComplete, FilesModified: t.FilesToModify,
				Summary: "Created the search endpoint following the users.ts handler pattern with zod validation."}
			for _, c := range t.AcceptanceCriteria {
				res.AcceptanceCriteriaConfirmation = append(res.AcceptanceCriteriaConfirmation,
					delegate.Confirmation{Criterion: c, Met: true, Evidence: "src/api/handlers/search.ts and search.test.ts"})
			}
			in.ExecutorResult = res
			in.GateResults = []delegate.GateSummary{{Name: "test", Command: "npx vitest run src/api", Passed: true}}
		}
	}
	return in
}
