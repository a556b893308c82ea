package delegate

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-run/sluice/internal/plan"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (run go test -update if the change is intended)\n--- got ---\n%s", name, path, got)
	}
}

func TestComposeGolden(t *testing.T) {
	retry := sampleInput(RoleExecutor)
	retry.PreviousFailure = &PreviousFailure{
		AttemptNumber:    2,
		FailureReport:    "Verifier found page_size validation missing",
		SpecificFailures: []string{"page_size > 100 returns 500 instead of 400"},
		FixInstructions:  "Add zod validation for page_size: z.number().min(1).max(100)",
	}
	p := &plan.Plan{Goal: "Add a search endpoint with pagination", Tasks: []plan.Task{*SampleTask()}}
	cases := map[string]Input{
		"executor":       sampleInput(RoleExecutor),
		"executor_retry": retry,
		"verifier":       sampleInput(RoleVerifier),
		"researcher": {Role: RoleResearcher, FeatureName: "Add a search endpoint with pagination", RunDir: ".sluice/runs/20261130-001",
			Complexity: "medium", FocusAreas: []string{"handler patterns in src/api/handlers/"}, WorkspaceRoot: "/work/app"},
		"planner": {Role: RolePlanner, FeatureName: "Add a search endpoint with pagination", RunDir: ".sluice/runs/20261130-001",
			Research: SampleResearch(), Constraints: []string{"must use existing auth system"},
			RevisionFeedback: &RevisionFeedback{Iteration: 1, Objection: "No task covers pagination limits", SuggestedFix: "Add a criterion for page_size > 100", PreviousPlan: p}},
		"critic": {Role: RoleCritic, FeatureName: "Add a search endpoint with pagination", RunDir: ".sluice/runs/20261130-001",
			Plan: p, Iteration: 2, MaxIterations: 3, Research: SampleResearch(),
			PreviousObjections: []plan.Critique{{Iteration: 1, Verdict: "REVISE", Objection: "No task covers pagination limits", Category: "gap", Severity: "major", Resolved: true}}},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Compose(in)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name, got)
		})
	}
}

// TestComposeFourParts checks that executor and verifier delegations carry
// all four parts of seed 001, in order, with the checklist verbatim and the
// task's own additions.
func TestComposeFourParts(t *testing.T) {
	for _, role := range []string{RoleExecutor, RoleVerifier} {
		t.Run(role, func(t *testing.T) {
			msg, err := Compose(sampleInput(role))
			if err != nil {
				t.Fatal(err)
			}
			last := -1
			for _, part := range []string{"base_params:", role + "_params:", AntiLazinessChecklist, "### Task-Specific Enforcement",
				"- [ ] Required: Use zod for input validation", "- [ ] Prevent this failure mode: page_size above 100",
				"specification_adherence:", "submit_result"} {
				i := strings.Index(msg, part)
				if i < 0 {
					t.Fatalf("delegation lacks %q:\n%s", part, msg)
				}
				if i < last {
					t.Errorf("%q is out of order", part)
				}
				last = i
			}
			doc := parseYAMLSections(t, msg)
			base := doc["base_params"].(map[string]any)
			for _, k := range []string{"task_id", "feature_name", "feature_description", "current_phase", "current_state_summary", "plan_path", "state_path", "log_path"} {
				if _, ok := base[k]; !ok {
					t.Errorf("base_params lacks %s", k)
				}
			}
			if len(base) != 8 {
				t.Errorf("base_params has %d fields, want 8", len(base))
			}
			if base["plan_path"] != ".sluice/runs/20261130-001/plan.yaml" || base["log_path"] != ".sluice/runs/20261130-001/log.jsonl" {
				t.Errorf("paths do not point into the run dir: %v", base)
			}
			params := doc[role+"_params"].(map[string]any)
			td := params["task_definition"].(map[string]any)
			if n := len(td["acceptance_criteria"].([]any)); n != 4 {
				t.Errorf("task_definition has %d criteria, want 4", n)
			}
		})
	}
}

// parseYAMLSections reads the YAML sections of a delegation back, skipping
// the Markdown checklist, so tests can assert on values.
func parseYAMLSections(t *testing.T, msg string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, sec := range strings.Split(msg, "# --- ")[1:] {
		title, body, _ := strings.Cut(sec, " ---\n")
		if title == "Anti-Laziness Checklist" || title == "Result" {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("section %s is not YAML: %v\n%s", title, err, body)
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestComposeFeatureNameVerbatim(t *testing.T) {
	for _, name := range []string{
		"Add search: q=\"x\" & page_size<=100",
		"  leading spaces, trailing spaces  ",
		"multi\nline request\n\twith a tab\n",
		"- looks like a list",
		"null",
		"yes",
		"# not a comment",
	} {
		in := sampleInput(RoleExecutor)
		in.FeatureName = name
		msg, err := Compose(in)
		if err != nil {
			t.Fatal(err)
		}
		base := parseYAMLSections(t, msg)["base_params"].(map[string]any)
		if got, _ := base["feature_name"].(string); got != name {
			t.Errorf("feature_name %q came back as %q", name, base["feature_name"])
		}
	}
}

func TestComposeDeterministic(t *testing.T) {
	a, err := Compose(sampleInput(RoleVerifier))
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		b, err := Compose(sampleInput(RoleVerifier))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal([]byte(a), []byte(b)) {
			t.Fatal("two compositions of the same input differ")
		}
	}
}

func TestComposeNullsBeforeTaskPhases(t *testing.T) {
	msg, err := Compose(Input{Role: RoleResearcher, FeatureName: "x", RunDir: "r"})
	if err != nil {
		t.Fatal(err)
	}
	base := parseYAMLSections(t, msg)["base_params"].(map[string]any)
	if v, ok := base["task_id"]; !ok || v != nil {
		t.Errorf("task_id = %v, want null during research", v)
	}
	if base["current_phase"] != "research" {
		t.Errorf("current_phase = %v", base["current_phase"])
	}
	if strings.Contains(msg, "Anti-Laziness") {
		t.Error("researcher delegation carries the executor checklist")
	}
}

func TestComposeRejectsIncompleteInput(t *testing.T) {
	noCriteria := SampleTask()
	noCriteria.AcceptanceCriteria = nil
	cases := []struct {
		name string
		in   Input
		want string
	}{
		{"unknown role", Input{Role: "poet", FeatureName: "x", RunDir: "r"}, "poet"},
		{"no feature", Input{Role: RoleResearcher, RunDir: "r"}, "FeatureName"},
		{"executor without task", Input{Role: RoleExecutor, FeatureName: "x", RunDir: "r"}, "Task"},
		{"verifier without executor result", Input{Role: RoleVerifier, FeatureName: "x", RunDir: "r", Task: SampleTask()}, "ExecutorResult"},
		{"critic without plan", Input{Role: RoleCritic, FeatureName: "x", RunDir: "r"}, "Plan"},
		{"task without criteria", Input{Role: RoleExecutor, FeatureName: "x", RunDir: "r", Task: noCriteria}, "task-003"},
	}
	for _, c := range cases {
		_, err := Compose(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one naming %q", c.name, err, c.want)
		}
		if c.name != "unknown role" && !errors.Is(err, ErrIncompleteInput) {
			t.Errorf("%s: err is not ErrIncompleteInput", c.name)
		}
	}
}
