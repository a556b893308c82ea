package agents

import (
	"github.com/sluice-run/sluice/internal/delegate"
	"github.com/sluice-run/sluice/internal/plan"
)

const sampleFeature = "Add a search endpoint with pagination"

// sampleTask is seed 001's example task.
func sampleTask() *plan.Task {
	return &plan.Task{
		ID:            "task-003",
		Title:         "Add search API endpoint with pagination",
		Description:   "Create GET /api/search endpoint that accepts query, page, and page_size parameters. Returns paginated results matching the query. Use existing handler pattern from users.ts.",
		DependsOn:     []string{"task-001"},
		FilesToModify: []string{"src/api/handlers/search.ts", "src/types/api.ts", "src/config/routes.ts"},
		FilesToRead:   []string{"src/api/handlers/users.ts", "src/services/searchService.ts", "src/middleware/auth.ts"},
		AcceptanceCriteria: []string{
			"GET /api/search?q=test&page=1&page_size=10 returns 200 with { results: [], total: number, page: number }",
			"Missing query parameter returns 400 with { error: 'Query parameter q is required' }",
			"page_size > 100 returns 400 with { error: 'page_size must be between 1 and 100' }",
			"Route registered in src/config/routes.ts with auth middleware",
		},
		EstimatedEffort: "medium",
		ReviewDepth:     plan.DepthStandard,
		SpecificationAdherence: plan.SpecificationAdherence{
			RequiredPatterns:  []string{"Use zod for input validation", "Follow handler pattern from users.ts"},
			ForbiddenPatterns: []string{"DO NOT use raw SQL — use Prisma ORM"},
			TechChoices:       []string{"Zod validation (not Joi, not Yup)"},
		},
		FailureModes: []string{"page_size above 100 reaches the database and returns 500"},
	}
}

func sampleResearch() *delegate.ResearchOutput {
	return &delegate.ResearchOutput{
		ContextMap: delegate.ContextMap{
			PrimaryFiles: []delegate.PrimaryFile{
				{Path: "src/api/handlers/users.ts", Role: "handler pattern to copy", KeyExports: []string{"listUsers"}},
				{Path: "src/services/searchService.ts", Role: "search backend", KeyExports: []string{"search"}},
			},
			PatternsToFollow: []delegate.Pattern{{Pattern: "zod schema per handler", ExampleFile: "src/api/handlers/users.ts"}},
		},
		Findings:        delegate.Findings{ArchitectureNotes: "Express handlers registered in src/config/routes.ts behind auth middleware."},
		PassesCompleted: 2,
		Confidence:      "high",
	}
}

// SampleInput is a typical delegation of role in a run implementing seed
// 001's example feature, for showing what agents are sent.
func SampleInput(role string) delegate.Input {
	t := sampleTask()
	in := delegate.Input{
		Role:               role,
		FeatureName:        sampleFeature,
		FeatureDescription: "A paginated GET /api/search endpoint behind auth, validated with zod.",
		RunDir:             ".sluice/runs/sample",
		Research:           sampleResearch(),
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
		in.Plan = &plan.Plan{Goal: sampleFeature, Tasks: []plan.Task{*t}}
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
