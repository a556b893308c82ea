package delegate

import "github.com/sluice-run/sluice/internal/plan"

// SampleFeature is the feature of seed 001's example run.
const SampleFeature = "Add a search endpoint with pagination"

// SampleTask is seed 001's example task, with per-task enforcement: what
// `sluice agents show --composed` and the delegation tests compose.
func SampleTask() *plan.Task {
	return &plan.Task{
		ID:          "task-003",
		Title:       "Add search API endpoint with pagination",
		Description: "Create GET /api/search endpoint that accepts query, page, and page_size parameters. Returns paginated results matching the query. Use existing handler pattern from users.ts.",
		DependsOn:   []string{"task-001"},
		FilesToModify: []string{
			"src/api/handlers/search.ts",
			"src/types/api.ts",
			"src/config/routes.ts",
		},
		FilesToRead: []string{
			"src/api/handlers/users.ts",
			"src/services/searchService.ts",
			"src/middleware/auth.ts",
		},
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

// SampleResearch is a research result for SampleFeature.
func SampleResearch() *ResearchOutput {
	return &ResearchOutput{
		ContextMap: ContextMap{
			PrimaryFiles: []PrimaryFile{
				{Path: "src/api/handlers/users.ts", Role: "handler pattern to copy", KeyExports: []string{"listUsers"}},
				{Path: "src/services/searchService.ts", Role: "search backend", KeyExports: []string{"search"}},
			},
			PatternsToFollow: []Pattern{
				{Pattern: "zod schema per handler", ExampleFile: "src/api/handlers/users.ts", Description: "parse req.query with a zod schema, 400 on failure"},
			},
		},
		Findings: Findings{
			ArchitectureNotes: "Express handlers registered in src/config/routes.ts behind auth middleware.",
			Constraints:       []string{"must use the existing auth middleware"},
		},
		PassesCompleted: 2,
		Confidence:      "high",
	}
}
