package agents

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-run/sluice/internal/delegate"
	"github.com/sluice-run/sluice/internal/plan"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// render lays a prompt out in request order, each part headed by its kind.
func render(p Prompt) string {
	var b strings.Builder
	for i, part := range p.System {
		fmt.Fprintf(&b, "===== system part %d (cache=%v) =====\n%s\n", i, part.Cache, part.Text)
	}
	fmt.Fprintf(&b, "===== user message: delegation =====\n%s", p.Message)
	return b.String()
}

// TestComposedExecutorGolden pins the whole executor prompt for a sample
// task: the stable prefix (agent prompt, instructions, a contribution, the
// cache mark on its end) and then the volatile delegation.
func TestComposedExecutorGolden(t *testing.T) {
	reg, _, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	task := &plan.Task{
		ID: "task-002", Title: "Validate page_size in the search handler",
		Description:        "In internal/api/search.go reject page_size outside 1..100 as users.go does.",
		DependsOn:          []string{"task-001"},
		FilesToModify:      []string{"internal/api/search.go", "internal/api/search_test.go"},
		FilesToRead:        []string{"internal/api/users.go"},
		AcceptanceCriteria: []string{"go test ./internal/api -run TestSearchPageSize passes", "page_size=101 returns 400 with {\"error\": \"page_size must be between 1 and 100\"}"},
		EstimatedEffort:    plan.EffortSmall,
		SpecificationAdherence: plan.SpecificationAdherence{
			RequiredPatterns: []string{"table-driven tests"}, ForbiddenPatterns: []string{"panic on bad input"},
		},
		FailureModes: []string{"page_size=0 is accepted"},
	}
	p, err := Compose(reg.ForRole(delegate.RoleExecutor), "Run gofmt on every Go file you touch.",
		[]Contribution{{Capability: "security", Into: delegate.RoleExecutor, Text: "Never log request bodies."}},
		delegate.Input{FeatureName: "Add a search endpoint with pagination", RunDir: ".sluice/runs/r1",
			StateSummary: "Phase: execute, Task: task-002 (1/3 done)", Task: task})
	if err != nil {
		t.Fatal(err)
	}
	got := render(p)
	path := filepath.Join("testdata", "executor_composed.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (go test -update creates it): %v", err)
	}
	if got != string(want) {
		t.Errorf("composed executor prompt differs from %s (go test -update if intended):\n%s", path, got)
	}
	system := 0
	for _, part := range p.System {
		system += Tokens(part.Text)
	}
	t.Logf("typical executor delegation: system %d tokens (cached prefix) + delegation %d tokens = %d", system, Tokens(p.Message), system+Tokens(p.Message))
}
