package contract

import (
	"fmt"
	"strings"
	"testing"
)

func TestRolesParse(t *testing.T) {
	roles, err := Roles()
	if err != nil {
		t.Fatalf("the embedded role contracts do not parse: %v", err)
	}
	var names []string
	for _, r := range roles {
		names = append(names, r.Name)
		if r.Purpose == "" || len(r.Preconditions) == 0 {
			t.Errorf("%s: empty purpose or preconditions", r.Name)
		}
		if len(r.Exit.Clauses) == 0 {
			t.Errorf("%s: no exit-gate clauses", r.Name)
		}
		for _, c := range r.Exit.Clauses {
			if !c.Fixed || c.Arrow != r.Exit.Name {
				t.Errorf("%s: clause %s: fixed=%v arrow=%q", r.Name, c.ID, c.Fixed, c.Arrow)
			}
			if _, ok := DepthRank(c.Depth); !ok {
				t.Errorf("%s: clause %s: depth %q", r.Name, c.ID, c.Depth)
			}
			if _, err := ParseEval(c.Kind, c.Eval); err != nil {
				t.Errorf("%s: clause %s: %v", r.Name, c.ID, err)
			}
		}
	}
	if got, want := strings.Join(names, ","), strings.Join(RoleNames(), ","); got != want {
		t.Errorf("roles = %s, want %s", got, want)
	}
}

// describe renders an arrow compactly so the whole diamond can be compared
// against DESIGN §2 in one assertion.
func describe(a Arrow) string {
	var cs []string
	for _, c := range a.Clauses {
		cs = append(cs, fmt.Sprintf("%s/%s/%s/%s", c.ID, c.Kind, c.Eval, c.Depth))
	}
	return fmt.Sprintf("%s adv=%s att=%s bound=%d pertask=%v [%s]", a.Name, a.Adversarial, a.Attester, a.Bound, a.PerTask, strings.Join(cs, " "))
}

func TestArrowsFollowDesign(t *testing.T) {
	arrows, err := Arrows()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"analyst->architect adv=none att=none bound=1 pertask=false [" +
			"research-valid/artifact/artifact:research-output/lightweight " +
			"primary-file-found/artifact/artifact:primary-files/lightweight]",
		"architect->implementer adv=critic att=critic bound=3 pertask=false [" +
			"critique-resolved/attested/attest:critic/standard " +
			"plan-schema-valid/artifact/artifact:plan-schema/lightweight " +
			"plan-has-tasks/artifact/artifact:plan-tasks/lightweight " +
			"plan-dag-acyclic/artifact/artifact:plan-dag/lightweight " +
			"tasks-have-criteria/artifact/artifact:plan-criteria/lightweight " +
			"file-conflicts-ordered/artifact/artifact:plan-file-conflicts/lightweight]",
		"implementer->integrator adv=code-reviewer att=verifier bound=2 pertask=true [" +
			"review-resolved/attested/attest:code-reviewer/standard " +
			"format/command/gate:format/lightweight " +
			"lint/command/gate:lint/lightweight " +
			"typecheck/command/gate:typecheck/lightweight " +
			"test/command/gate:test/lightweight " +
			"full-suite-per-task/command/gate:test:tree/full " +
			"executor-complete/artifact/artifact:executor-complete/lightweight " +
			"criteria-confirmed/artifact/artifact:criteria-evidence/lightweight " +
			"verifier-pass/attested/attest:verifier/lightweight]",
		"integrator->done adv=none att=none bound=0 pertask=false [" +
			"merged-builds/command/gate:typecheck:tree/lightweight " +
			"full-suite/command/gate:test:tree/lightweight]",
	}
	if len(arrows) != len(want) {
		t.Fatalf("got %d arrows, want %d", len(arrows), len(want))
	}
	for i, a := range arrows {
		if got := describe(a); got != want[i] {
			t.Errorf("arrow %d:\n got %s\nwant %s", i, got, want[i])
		}
		if a.Name != ArrowNames()[i] {
			t.Errorf("arrow %d is %s, want %s", i, a.Name, ArrowNames()[i])
		}
	}
}

func TestApplies(t *testing.T) {
	cases := []struct {
		clause, run string
		want        bool
	}{
		{DepthLightweight, DepthLightweight, true},
		{DepthLightweight, DepthFull, true},
		{DepthStandard, DepthLightweight, false},
		{DepthStandard, DepthStandard, true},
		{DepthFull, DepthStandard, false},
		{DepthFull, DepthFull, true},
		{"deep", DepthFull, false},
		{DepthLightweight, "", false},
	}
	for _, c := range cases {
		if got := Applies(c.clause, c.run); got != c.want {
			t.Errorf("Applies(%q, %q) = %v, want %v", c.clause, c.run, got, c.want)
		}
	}
}

func TestParseEval(t *testing.T) {
	good := []struct {
		kind, eval string
		want       Eval
	}{
		{KindCommand, "gate:format", Eval{"gate", "format", ScopeChanged}},
		{KindCommand, "gate:test:tree", Eval{"gate", "test", ScopeTree}},
		{KindArtifact, "artifact:plan-dag", Eval{"artifact", "plan-dag", ""}},
		{KindAttested, "attest:verifier", Eval{"attest", "verifier", ""}},
	}
	for _, c := range good {
		got, err := ParseEval(c.kind, c.eval)
		if err != nil || got != c.want {
			t.Errorf("ParseEval(%q, %q) = %+v, %v; want %+v", c.kind, c.eval, got, err, c.want)
		}
	}
	bad := [][2]string{
		{KindCommand, "gate:standards"},
		{KindCommand, "gate:build"},
		{KindCommand, "gate:test:all"},
		{KindCommand, "artifact:plan-dag"},
		{KindArtifact, "gate:test"},
		{KindAttested, "artifact:x"},
		{KindAttested, "attest:"},
		{"magic", "gate:test"},
		{KindCommand, "gate"},
	}
	for _, c := range bad {
		if _, err := ParseEval(c[0], c[1]); err == nil {
			t.Errorf("ParseEval(%q, %q) succeeded, want an error", c[0], c[1])
		}
	}
}

const goodRole = `# Analyst

## Purpose

Researches.

## Entry preconditions

- The request is recorded.

## Exit arrow

| Arrow | Adversarial | Attester | Remediation | Bound | Per task |
|---|---|---|---|---|---|
| analyst->architect | none | none | retry | 1 | no |

## Exit gate

| # | Clause | Kind | Eval | Depth |
|---|---|---|---|---|
| research-valid | The ` + "`research_output`" + ` is valid | artifact | artifact:research-output | lightweight |
`

func TestParseRoleGood(t *testing.T) {
	r, err := ParseRole("analyst", []byte(goodRole))
	if err != nil {
		t.Fatal(err)
	}
	if r.Purpose != "Researches." || len(r.Preconditions) != 1 || r.Preconditions[0] != "The request is recorded." {
		t.Errorf("purpose %q preconditions %q", r.Purpose, r.Preconditions)
	}
	want := Clause{Arrow: "analyst->architect", ID: "research-valid", Text: "The research_output is valid",
		Kind: "artifact", Eval: "artifact:research-output", Depth: "lightweight", Fixed: true}
	if len(r.Exit.Clauses) != 1 || r.Exit.Clauses[0] != want {
		t.Errorf("clauses = %+v, want [%+v]", r.Exit.Clauses, want)
	}
}

func TestParseRoleErrors(t *testing.T) {
	cases := []struct {
		name, old, new, wantErr string
	}{
		{"bad kind", "| artifact | artifact:research-output", "| proof | artifact:research-output", `kind "proof"`},
		{"bad depth", "| lightweight |\n", "| deep |\n", `depth "deep"`},
		{"no gate table", goodRole[strings.Index(goodRole, "| # |"):], "", `section "Exit gate"`},
		{"wrong header", "| # | Clause | Kind | Eval | Depth |", "| # | Clause | Kind | Eval | Level |", "table header"},
		{"missing cell", "| lightweight |\n", "|\n", `depth ""`},
		{"bad id", "| research-valid |", "| Research Valid |", `clause id "Research Valid"`},
		{"wrong title", "# Analyst", "# Architect", "does not name the role"},
		{"unknown section", "## Purpose", "## Goals", `unknown section "Goals"`},
		{"wrong arrow", "| analyst->architect |", "| architect->implementer |", "must be analyst->"},
		{"bad bound", "| retry | 1 |", "| retry | many |", `bound "many"`},
		{"wrong attester", "| artifact | artifact:research-output", "| attested | attest:verifier", `attested by "verifier"`},
		{"no preconditions", "- The request is recorded.\n", "", "Entry preconditions"},
		{"duplicate id", "| lightweight |\n", "| lightweight |\n| research-valid | again | artifact | artifact:x | full |\n", "appears twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(goodRole, c.old, c.new, 1)
			if src == goodRole {
				t.Fatalf("replacement %q did not apply", c.old)
			}
			_, err := ParseRole("analyst", []byte(src))
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, c.wantErr)
			}
		})
	}
}

func TestSource(t *testing.T) {
	src, err := Source(Integrator)
	if err != nil || !strings.Contains(string(src), "## Exit gate") {
		t.Errorf("Source(integrator) = %d bytes, %v", len(src), err)
	}
	if _, err := Source("auditor"); err == nil || !strings.Contains(err.Error(), "analyst") {
		t.Errorf("Source(auditor) err = %v, want one naming the fixed roles", err)
	}
}
