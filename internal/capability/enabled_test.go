package capability

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func capOf(id, def string, compat []string, requires ...string) Capability {
	return Capability{ID: id, Default: def, RuntimeCompat: compat, Requires: requires}
}

func ids(cs []Capability) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return strings.Join(out, ",")
}

var allBackends = []string{"api", "claude-code", "codex"}

func TestEnabled(t *testing.T) {
	all := []Capability{
		capOf("zeta", "on", allBackends),
		capOf("alpha", "off", allBackends, "base"),
		capOf("base", "off", allBackends),
		capOf("cc-only", "on", []string{"claude-code"}),
		capOf("needs-cc", "off", allBackends, "cc-only"),
	}
	tests := []struct {
		name       string
		enabled    []string
		backend    string
		wantActive string
		wantNotice []string
	}{
		{"defaults when the list is absent", nil, "api", "zeta", []string{`"cc-only" skipped: it supports the claude-code backend(s), not api`}},
		{"defaults on the compatible backend", nil, "claude-code", "cc-only,zeta", nil},
		{"empty list is authoritative", []string{}, "api", "", nil},
		{"requirements pulled in", []string{"alpha"}, "", "alpha,base", []string{`"base" enabled because "alpha" requires it`}},
		{"requirement skipped skips its dependant", []string{"needs-cc"}, "codex", "", []string{`"cc-only" skipped`, `"needs-cc" skipped: it requires "cc-only" and it was skipped`}},
		{"unknown id noticed", []string{"ghost", "zeta"}, "api", "zeta", []string{`"ghost" is enabled in capabilities.enabled but no capability has that id`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			active, notices := Enabled(all, tt.enabled, tt.backend)
			if got := ids(active); got != tt.wantActive {
				t.Errorf("active = %q, want %q", got, tt.wantActive)
			}
			joined := strings.Join(notices, "\n")
			for _, w := range tt.wantNotice {
				if !strings.Contains(joined, w) {
					t.Errorf("notices lack %q:\n%s", w, joined)
				}
			}
			if len(tt.wantNotice) == 0 && len(notices) > 0 {
				t.Errorf("unexpected notices: %v", notices)
			}
		})
	}
}

// contributingEverywhere contributes into every role at every point that
// takes contributions, with a text naming the point and role.
func contributingEverywhere(id string, compat []string) Capability {
	c := Capability{ID: id, Default: "on", RuntimeCompat: compat}
	for _, p := range Points() {
		for _, r := range p.Roles {
			c.Contributions = append(c.Contributions, Contribution{Point: p.Name, Into: r, Text: fmt.Sprintf("%s from %s into %s", id, p.Name, r)})
		}
		c.Gates = append(c.Gates, GateDecl{ID: "g", Point: p.Name, Kind: "attested", Text: id + " at " + p.Name, Mode: "advisory"})
	}
	return c
}

// For every point, a contribution reaches exactly its into role: every
// other role of the vocabulary gets nothing at that point.
func TestContributionsReachOnlyIntoRole(t *testing.T) {
	active := []Capability{contributingEverywhere("cap", allBackends)}
	for _, p := range Points() {
		for r := range RoleFamily() {
			got := Contributions(active, p.Name, r)
			if !slices.Contains(p.Roles, r) {
				if len(got) != 0 {
					t.Errorf("%s: role %s got %v", p.Name, r, got)
				}
				continue
			}
			want := fmt.Sprintf("cap from %s into %s", p.Name, r)
			if len(got) != 1 || got[0].Text != want || got[0].Into != r || got[0].Point != p.Name {
				t.Errorf("%s: role %s got %+v, want one fragment %q", p.Name, r, got, want)
			}
		}
		if g := Gates(active, p.Name); len(g) != 1 || g[0].Text != "cap at "+p.Name {
			t.Errorf("%s: gates %+v", p.Name, g)
		}
	}
}

func TestContributionsOrder(t *testing.T) {
	mk := func(id string, texts ...string) Capability {
		c := Capability{ID: id}
		for _, x := range texts {
			c.Contributions = append(c.Contributions, Contribution{Point: "plan:pre", Into: "planner", Text: x})
		}
		return c
	}
	// Given out of order; capability id first, then declaration order.
	active := []Capability{mk("zz", "z2", "z1"), mk("aa", "a2", "a1")}
	var got []string
	for _, f := range Contributions(active, "plan:pre", "planner") {
		got = append(got, f.Text)
	}
	if strings.Join(got, ",") != "a2,a1,z2,z1" {
		t.Errorf("order = %v", got)
	}
	if ids(active) != "zz,aa" {
		t.Error("Contributions reordered its input")
	}
}

// A capability the backend cannot run leaves every point's fragments and
// gates byte-identical to a run without it; so does a disabled one.
func TestSkippedCapabilityLeavesPromptsIdentical(t *testing.T) {
	base := contributingEverywhere("base", allBackends)
	ccOnly := contributingEverywhere("cc-only", []string{"claude-code"})
	off := contributingEverywhere("off", allBackends)
	off.Default = "off"
	render := func(active []Capability) string {
		var b strings.Builder
		for _, p := range Points() {
			for _, r := range sortedKeys(RoleFamily()) {
				b.WriteString(Render(Contributions(active, p.Name, r)))
			}
			fmt.Fprintf(&b, "%+v", Gates(active, p.Name))
		}
		return b.String()
	}
	without, _ := Enabled([]Capability{base}, nil, "api")
	with, notices := Enabled([]Capability{base, ccOnly, off}, nil, "api")
	if render(with) != render(without) {
		t.Error("an incompatible or disabled capability changed the prompts")
	}
	if len(notices) != 1 || !strings.Contains(notices[0], `"cc-only" skipped`) {
		t.Errorf("notices = %v", notices)
	}
	// And the compatible backend does see it (the test can fail).
	withCC, _ := Enabled([]Capability{base, ccOnly}, nil, "claude-code")
	if render(withCC) == render(without) {
		t.Error("the compatible backend's prompts do not include the capability")
	}
}

func TestFragmentApplies(t *testing.T) {
	c := Capability{ID: "c", Config: []ConfigKey{{Key: "strict", Type: "bool", Default: true}, {Key: "loose", Type: "bool"}},
		Contributions: []Contribution{
			{Point: "plan:pre", Into: "planner", Text: "always"},
			{Point: "plan:pre", Into: "planner", Text: "full", When: &When{Depth: []string{"full"}}},
			{Point: "plan:pre", Into: "planner", Text: "waves", When: &When{Schedule: []string{"waves"}}},
			{Point: "plan:pre", Into: "planner", Text: "strict", When: &When{Config: "strict"}},
			{Point: "plan:pre", Into: "planner", Text: "loose", When: &When{Config: "loose"}},
		}}
	pick := func(cond Conditions) string {
		var out []string
		for _, f := range Contributions([]Capability{c}, "plan:pre", "planner") {
			if f.Applies(cond) {
				out = append(out, f.Text)
			}
		}
		return strings.Join(out, ",")
	}
	if got := pick(Conditions{Depth: "standard", Schedule: "dag"}); got != "always,strict" {
		t.Errorf("defaults: %s", got)
	}
	if got := pick(Conditions{Depth: "full", Schedule: "waves", Config: map[string]map[string]any{"c": {"strict": false, "loose": true}}}); got != "always,full,waves,loose" {
		t.Errorf("set: %s", got)
	}
}

func TestPointsBefore(t *testing.T) {
	tests := []struct {
		role, phase, schedule string
		want                  string
	}{
		{"researcher", "research", "dag", "research:pre"},
		{"planner", "plan", "dag", "plan:pre"},
		{"design-spec", "plan", "dag", "plan:pre,plan:post"},
		{"critic", "critique", "dag", "critique:pre"},
		{"executor", "execute", "dag", "execute:pre,execute:task:pre"},
		{"executor", "execute", "waves", "execute:pre,execute:wave:pre,execute:task:pre"},
		{"code-reviewer", "execute", "dag", "verify:pre"},
		{"verifier", "verify", "dag", "verify:pre"},
		{"researcher", "plan", "dag", ""},
		{"orchestrator", "init", "dag", ""},
	}
	for _, tt := range tests {
		if got := strings.Join(PointsBefore(tt.role, tt.phase, tt.schedule), ","); got != tt.want {
			t.Errorf("PointsBefore(%s, %s, %s) = %q, want %q", tt.role, tt.phase, tt.schedule, got, tt.want)
		}
	}
}

func TestCheckEnabled(t *testing.T) {
	all, errs := Builtin()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	got := CheckEnabled(all, []string{"security-review", "ghost"}, map[string]map[string]any{"phantom": {"x": 1}, "design-spec": {"x": 1}})
	var msgs []string
	for _, e := range got {
		msgs = append(msgs, e.Error())
	}
	joined := strings.Join(msgs, "\n")
	for _, w := range []string{
		`$.capabilities.enabled[1]: no capability has id "ghost"; use one of design-spec, security-review`,
		`$.capabilities.config.phantom: no capability has id "phantom"`,
		`$.capabilities.config.design-spec.x: capability design-spec has no config key "x"`,
	} {
		if !strings.Contains(joined, w) {
			t.Errorf("missing %q in:\n%s", w, joined)
		}
	}
	if len(got) != 3 {
		t.Errorf("got %d errors", len(got))
	}
}

func TestForDelegation(t *testing.T) {
	active := []Capability{contributingEverywhere("cap", allBackends)}
	var got []string
	for _, f := range ForDelegation(active, "executor", "execute", Conditions{Schedule: "waves", Depth: "standard"}) {
		got = append(got, f.Point)
	}
	if strings.Join(got, ",") != "execute:pre,execute:wave:pre,execute:task:pre" {
		t.Errorf("executor under waves got %v", got)
	}
	if f := ForDelegation(active, "critic", "execute", Conditions{Schedule: "dag"}); len(f) != 0 {
		t.Errorf("critic in execute got %v", f)
	}
	got = nil
	for _, f := range ForDelegation(active, "code-reviewer", "execute", Conditions{Schedule: "dag"}) {
		got = append(got, f.Point+"/"+f.Into)
	}
	if strings.Join(got, ",") != "verify:pre/code-reviewer" {
		t.Errorf("code-reviewer got %v", got)
	}
}
