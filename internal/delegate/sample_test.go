package delegate

import "github.com/sluice-run/sluice/internal/plan"

func sampleExecutorResult(t *plan.Task) *ExecutorOutput {
	out := &ExecutorOutput{
		Status:        StatusComplete,
		FilesModified: append([]string(nil), t.FilesToModify...),
		Summary:       "Created the search endpoint following the users.ts handler pattern with zod validation.",
		Warnings:      []string{"Search does exact matching; full-text search may be needed later"},
	}
	for i, c := range t.AcceptanceCriteria {
		out.AcceptanceCriteriaConfirmation = append(out.AcceptanceCriteriaConfirmation, Confirmation{
			Criterion: c, Met: true, Evidence: "src/api/handlers/search.ts:" + string(rune('1'+i)) + "0 and search.test.ts",
		})
	}
	return out
}

func sampleInput(role string) Input {
	t := SampleTask()
	in := Input{
		Role:               role,
		FeatureName:        SampleFeature,
		FeatureDescription: "A paginated GET /api/search endpoint behind auth, validated with zod.",
		StateSummary:       "Phase: execute, Task: task-003 (2/7 done), implementing search handler",
		RunDir:             ".sluice/runs/20261130-001",
		Task:               t,
		Research:           SampleResearch(),
	}
	if role == RoleVerifier {
		in.StateSummary = "Phase: verify, Task: task-003, executor reported COMPLETE, awaiting verification"
		in.ExecutorResult = sampleExecutorResult(t)
		in.GateResults = []GateSummary{
			{Name: "format", Command: "npx prettier --check src/api/handlers/search.ts", Passed: true},
			{Name: "test", Command: "npx vitest run src/api", Passed: false, OutputTail: "FAIL src/api/search.test.ts > rejects page_size 101   \nexpected 400, got 500\n"},
		}
	}
	return in
}
