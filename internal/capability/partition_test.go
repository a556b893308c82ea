package capability

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sluice-run/sluice/internal/delegate"
)

func TestCheckPartitionAcceptsOwnFamily(t *testing.T) {
	decls := []Declaration{
		{Source: "a", Step: "research", Roles: []string{"researcher"}},
		{Source: "b", Step: "plan", Roles: []string{"planner", "architect", "design-spec"}},
		{Source: "c", Step: "plan", Roles: []string{"architect"}}, // a strict subset
		{Source: "d", Step: "critique", Roles: []string{"critic"}},
		{Source: "e", Step: "execute", Roles: []string{"executor", "test-designer"}},
		{Source: "f", Step: "verify", Roles: []string{"verifier", "code-reviewer", "linting"}},
		{Source: "g", Step: "init", Roles: []string{"orchestrator"}},
	}
	if err := CheckPartition(decls); err != nil {
		t.Fatalf("CheckPartition: %v", err)
	}
}

// Each rejection rule: the message names the offending role and the step.
func TestCheckPartitionRejects(t *testing.T) {
	tests := []struct {
		name string
		decl Declaration
		want []string // besides role and step
	}{
		{"role outside its step's family", Declaration{Source: "x.json", Step: "execute", Roles: []string{"planner"}}, []string{"planning family", "execution family"}},
		{"foreign role at a planning step", Declaration{Source: "x.json", Step: "critique", Roles: []string{"verifier"}}, []string{"execution family", "planning family"}},
		{"role outside the vocabulary", Declaration{Source: "x.json", Step: "plan", Roles: []string{"wizard"}}, []string{"not a role in the vocabulary"}},
		{"unknown step fails closed", Declaration{Source: "x.json", Step: "deploy", Roles: []string{"executor"}}, []string{"not a loop step"}},
		{"contribution into the orchestrator", Declaration{Source: "x.json", Step: "execute", Roles: []string{"orchestrator"}, Contribution: true}, []string{"host, not an agent"}},
		{"orchestrator declared at an execution step", Declaration{Source: "x.json", Step: "execute", Roles: []string{"orchestrator"}}, []string{"orchestration family"}},
		{"case-sensitive role", Declaration{Source: "x.json", Step: "execute", Roles: []string{"Executor"}}, []string{"not a role in the vocabulary"}},
		{"case-sensitive step", Declaration{Source: "x.json", Step: "Execute", Roles: []string{"executor"}}, []string{"not a loop step"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckPartition([]Declaration{tt.decl})
			if err == nil {
				t.Fatal("CheckPartition accepted it")
			}
			if !errors.Is(err, ErrPartition) {
				t.Errorf("error does not wrap ErrPartition: %v", err)
			}
			msg := err.Error()
			for _, w := range append([]string{`role "` + tt.decl.Roles[0] + `"`, `step "` + tt.decl.Step + `"`, "x.json"}, tt.want...) {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q:\n%s", w, msg)
				}
			}
		})
	}
}

func TestCheckPartitionReportsEveryOffender(t *testing.T) {
	err := CheckPartition([]Declaration{
		{Source: "one", Step: "execute", Roles: []string{"executor", "critic", "researcher"}},
		{Source: "two", Step: "review", Roles: []string{"verifier"}},
	})
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	for _, w := range []string{`one: role "critic" at step "execute"`, `one: role "researcher" at step "execute"`, `two: role "verifier" at step "review"`, "3 offenders"} {
		if !strings.Contains(msg, w) {
			t.Errorf("message lacks %q:\n%s", w, msg)
		}
	}
	if strings.Contains(msg, `role "executor"`) {
		t.Errorf("an admissible role was reported:\n%s", msg)
	}
	// Offenders are reported in input order, not sorted.
	if i, j := strings.Index(msg, `"critic"`), strings.Index(msg, `"researcher"`); i > j {
		t.Errorf("offenders not in input order:\n%s", msg)
	}
}

// The fixture is deliberately unsorted, in both the slice and its roles: an
// in-place sort of either would change it, which a sorted fixture cannot
// show.
func TestCheckPartitionDoesNotMutate(t *testing.T) {
	decls := []Declaration{
		{Source: "z", Step: "verify", Roles: []string{"verifier", "linting", "code-reviewer"}},
		{Source: "m", Step: "execute", Roles: []string{"test-designer", "planner", "executor"}},
		{Source: "a", Step: "plan", Roles: []string{"planner", "design-spec", "architect"}},
		{Source: "q", Step: "nowhere", Roles: []string{"zed", "alpha"}},
	}
	want := make([]Declaration, len(decls))
	for i, d := range decls {
		want[i] = d
		want[i].Roles = slices.Clone(d.Roles)
	}
	if sort.SliceIsSorted(decls, func(i, j int) bool { return decls[i].Source < decls[j].Source }) {
		t.Fatal("fixture must be unsorted")
	}
	_ = CheckPartition(decls)
	if !reflect.DeepEqual(decls, want) {
		t.Errorf("CheckPartition changed its input:\ngot  %+v\nwant %+v", decls, want)
	}
}

// RoleFamily and RoleAgent are parallel tables over one domain: every role
// with an agent has a family and every role with a family has an agent,
// except the orchestrator, which is the host and has no agent file.
func TestRoleTablesParity(t *testing.T) {
	fam, ag := RoleFamily(), RoleAgent()
	for r := range fam {
		if _, ok := ag[r]; !ok && r != RoleOrchestrator {
			t.Errorf("role %q has a family but no agent", r)
		}
	}
	for r := range ag {
		if _, ok := fam[r]; !ok {
			t.Errorf("role %q has an agent but no family", r)
		}
	}
	if _, ok := ag[RoleOrchestrator]; ok {
		t.Error("the orchestrator must have no agent: it is the host")
	}
	if fam[RoleOrchestrator] != FamilyOrchestration {
		t.Errorf("orchestrator family = %q", fam[RoleOrchestrator])
	}
	// The agent roles are exactly the roles sluice delegates to, and each
	// names a built-in agent file that exists.
	got := sortedKeys(ag)
	want := slices.Clone(delegate.Roles())
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("RoleAgent roles = %v, delegate.Roles() = %v", got, want)
	}
	for r, file := range ag {
		if _, err := os.Stat(filepath.Join("..", "agents", "builtin", file)); err != nil {
			t.Errorf("role %s: built-in agent file: %v", r, err)
		}
	}
}

func TestStepFamiliesOnePerStep(t *testing.T) {
	counts := map[string]int{}
	for _, f := range StepFamily() {
		counts[f]++
	}
	for _, f := range []string{FamilyOrchestration, FamilyPlanning, FamilyExecution} {
		if counts[f] == 0 {
			t.Errorf("no step admits the %s family", f)
		}
	}
}

// The point table itself obeys the partition: every role a point lets a
// contribution into is admitted by the point's step.
func TestPointsObeyPartition(t *testing.T) {
	var decls []Declaration
	for _, p := range Points() {
		decls = append(decls, Declaration{Source: p.Name, Step: p.Step, Roles: p.Roles, Contribution: true})
	}
	if err := CheckPartition(decls); err != nil {
		t.Fatal(err)
	}
}

func TestAgentDeclarations(t *testing.T) {
	root := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".claude/agents/reviewer.md", "---\nname: reviewer\nrole: code-reviewer\n---\nReview.\n")
	write(".claude/agents/helper.md", "---\nname: helper\n---\nA specialist without a role.\n")
	write(".sluice/agents/boss.md", "---\nrole: executor\nsteps: [plan]\n---\nPlan and execute.\n")
	write(".sluice/agents/wizard.md", "---\nrole: wizard\n---\nMagic.\n")
	decls, errs := AgentDeclarations(root, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `wizard.md: role "wizard": not a role sluice delegates to`) {
		t.Errorf("errs = %v", errs)
	}
	if len(decls) != 2 || decls[0].Step != "verify" || decls[1].Step != "plan" {
		t.Fatalf("decls = %+v", decls)
	}
	err := CheckPartition(decls)
	if err == nil || !strings.Contains(err.Error(), `boss.md: role "executor" at step "plan"`) || strings.Contains(err.Error(), "reviewer.md") {
		t.Errorf("CheckPartition = %v", err)
	}
}
