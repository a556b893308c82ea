package agents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-run/sluice/internal/capability"
	"github.com/sluice-run/sluice/internal/delegate"
	"github.com/sluice-run/sluice/internal/model"
	"github.com/sluice-run/sluice/internal/plan"
	"github.com/sluice-run/sluice/internal/tools"
)

// toolSpecs returns the real tool specs a role gets from the tools package.
func toolSpecs(t *testing.T, readOnly bool) []model.Tool {
	t.Helper()
	ts, err := tools.New(tools.Options{Root: t.TempDir(), ReadOnly: readOnly})
	if err != nil {
		t.Fatal(err)
	}
	specs := make([]model.Tool, len(ts))
	for i, x := range ts {
		specs[i] = x.Spec()
	}
	return specs
}

// TestBuiltinTokenBudget fails if any built-in agent's prompt, with its
// output contract and the descriptions of its tools, exceeds Budget tokens
// (bytes/4), and logs the table of sizes.
func TestBuiltinTokenBudget(t *testing.T) {
	builtins, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-14s %7s %9s %11s %7s   %13s\n", "agent", "prompt", "contract", "tool descs", "total", "(tool schemas)")
	for _, a := range builtins {
		specs := toolSpecs(t, a.ReadOnly())
		for _, name := range a.Tools {
			found := false
			for _, s := range specs {
				found = found || s.Name == name
			}
			if !found {
				t.Errorf("%s: tool %q is not offered by the tools package to a role with ReadOnly=%v", a.Name, name, a.ReadOnly())
			}
		}
		s, err := Footprint(a, specs)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&table, "%-14s %7d %9d %11d %7d   %13d\n", a.Name, s.Prompt, s.Contract, s.ToolDescriptions, s.Total(), s.ToolSchemas)
		if s.Total() > Budget {
			t.Errorf("%s: %d tokens, over the budget of %d", a.Name, s.Total(), Budget)
		}
	}
	t.Log(table.String())
}

func TestBuiltinDefinitions(t *testing.T) {
	builtins, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if len(builtins) != len(delegate.Roles()) {
		t.Fatalf("%d built-in agents for %d roles", len(builtins), len(delegate.Roles()))
	}
	for _, a := range builtins {
		if a.Name != a.Role || a.Description == "" || a.Prompt == "" || len(a.Tools) == 0 {
			t.Errorf("%s: incomplete definition %+v", a.Role, a)
		}
		switch a.Tier {
		case TierFast, TierStandard, TierDeep:
		default:
			t.Errorf("%s: tier %q", a.Name, a.Tier)
		}
		if !strings.Contains(a.Prompt, "submit_result") {
			t.Errorf("%s: the prompt does not say when to stop (call submit_result)", a.Name)
		}
		if !strings.Contains(a.Prompt, "grep") {
			t.Errorf("%s: the prompt gives no tool-efficiency guidance", a.Name)
		}
		writes := a.Role == delegate.RoleExecutor || a.Role == delegate.RoleTestDesigner
		if a.ReadOnly() == writes {
			t.Errorf("%s: ReadOnly = %v; only the executor and test-designer write", a.Name, a.ReadOnly())
		}
		if !writes && !strings.Contains(a.Prompt, "never change files") && !strings.Contains(a.Prompt, "Never edit files") &&
			!strings.Contains(a.Prompt, "Never write or edit files") && !strings.Contains(a.Prompt, "edit files") {
			t.Errorf("%s: a read-only role's prompt does not forbid writing", a.Name)
		}
	}
	reg, _, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"TODO", "stubs", "skip, disable or weaken a test", "every error case", "verbatim"} {
		if !strings.Contains(reg.ForRole(delegate.RoleExecutor).Prompt, want) {
			t.Errorf("executor prompt lacks the anti-laziness rule %q", want)
		}
	}
	for _, want := range []string{"trust nothing", "TODO, stub, placeholder or skipped test", "PASS only when every criterion is met"} {
		if !strings.Contains(reg.ForRole(delegate.RoleVerifier).Prompt, want) {
			t.Errorf("verifier prompt lacks %q", want)
		}
	}
	for _, want := range []string{"depends_on", "files_to_modify", "disjoint", "acceptance_criteria", "checkable with evidence"} {
		if !strings.Contains(reg.ForRole(delegate.RolePlanner).Prompt, want) {
			t.Errorf("planner prompt does not teach %q", want)
		}
	}
}

// TestExampleResultsAreValid decodes the compact example in each prompt
// that shows a whole result, so an example never teaches an invalid one.
func TestExampleResultsAreValid(t *testing.T) {
	builtins, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range builtins {
		for _, line := range strings.Split(a.Prompt, "\n") {
			if !strings.HasPrefix(line, "{") {
				continue
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &obj); err != nil {
				t.Errorf("%s: example is not JSON: %v\n%s", a.Name, err, line)
				continue
			}
			_, isTask := obj["acceptance_criteria"]
			_, isConfirmation := obj["criterion"]
			if isTask || isConfirmation {
				continue // a fragment, checked below
			}
			if _, err := delegate.Decode(a.Role, json.RawMessage(line)); err != nil {
				t.Errorf("%s: example result is invalid: %v", a.Name, err)
			}
		}
	}
	reg, _, _ := Load("")
	planner := reg.ForRole(delegate.RolePlanner).Prompt
	i := strings.Index(planner, `{"id":`)
	line, _, _ := strings.Cut(planner[i:], "\n")
	var task plan.Task
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&task); err != nil {
		t.Fatalf("planner example task: %v", err)
	}
	p := plan.Plan{Tasks: []plan.Task{{ID: "task-001", Title: "t", Description: "d", AcceptanceCriteria: []string{"x"}}, task}}
	if probs := plan.Validate(&p); len(probs) > 0 {
		t.Errorf("planner example task is invalid: %v", probs)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOverrideChangesPromptOnly: an override in .claude/agents replaces the
// executor's prompt; its schema, checks and tools stay those of the role.
func TestOverrideChangesPromptOnly(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, ".claude/agents/our-executor.md"), "---\nname: our-executor\ndescription: House executor\nrole: executor\ntools: Read, Write, Bash\nmodel: opus\n---\nYou implement tasks the ACME way. Always run make check.\n")
	builtinReg, _, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	reg, warns, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	got, base := reg.ForRole(delegate.RoleExecutor), builtinReg.ForRole(delegate.RoleExecutor)
	if got.Prompt != "You implement tasks the ACME way. Always run make check." || got.Name != "our-executor" || got.Source != ".claude/agents/our-executor.md" {
		t.Fatalf("override not applied: %+v", got)
	}
	if strings.Join(got.Tools, ",") != strings.Join(base.Tools, ",") {
		t.Errorf("override changed the tools: %v, want %v", got.Tools, base.Tools)
	}
	if len(warns) != 1 || !strings.Contains(warns[0].Message, "tools ignored") {
		t.Errorf("warnings = %v, want one about the ignored tools", warns)
	}
	if reg.ForRole(delegate.RoleVerifier).Source != SourceBuiltin {
		t.Error("an executor override changed the verifier")
	}

	// The contract is the role's, not the agent's: the same schema, and the
	// same result is rejected the same way.
	s1, err := delegate.Schema(got.Role)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := delegate.Schema(base.Role)
	if !bytes.Equal(s1, s2) {
		t.Error("the override changed the output schema")
	}
	task := &plan.Task{ID: "t1", Title: "t", Description: "d", AcceptanceCriteria: []string{"make check passes", "README documents --fast"}}
	raw := json.RawMessage(`{"status":"COMPLETE","files_modified":["a.go"],"acceptance_criteria_confirmation":[{"criterion":"make check passes","met":true,"evidence":"make check: ok"}],"summary":"s"}`)
	_, errOverride := delegate.Validate(got.Role, raw, task)
	_, errBuiltin := delegate.Validate(base.Role, raw, task)
	if errOverride == nil || errBuiltin == nil || errOverride.Error() != errBuiltin.Error() {
		t.Errorf("checks differ: override %v, built-in %v", errOverride, errBuiltin)
	}
	// The composed request differs in the prompt only.
	in := delegate.Input{FeatureName: "f", RunDir: "r", Task: task}
	p1, err := Compose(got, "", nil, in)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := Compose(base, "", nil, in)
	if p1.Message != p2.Message || p1.System[0].Text == p2.System[0].Text {
		t.Error("the override should change the system prompt and nothing else")
	}
}

func TestOverridePrecedenceAndWarnings(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, ".claude/agents/a.md"), "---\nrole: critic\n---\nclaude critic\n")
	writeFile(t, filepath.Join(root, ".sluice/agents/b.md"), "---\nrole: critic\ntier: deep\n---\nsluice critic\n")
	writeFile(t, filepath.Join(root, ".sluice/agents/c.md"), "---\nrole: critic\n---\nsecond sluice critic\n")
	writeFile(t, filepath.Join(root, ".claude/agents/go-expert.md"), "---\nname: go-expert\ndescription: a specialist\n---\nI know Go.\n")
	writeFile(t, filepath.Join(root, ".claude/agents/poet.md"), "---\nrole: poet\n---\nverse\n")
	writeFile(t, filepath.Join(root, ".claude/agents/broken.md"), "no front matter here\n")
	writeFile(t, filepath.Join(root, ".claude/agents/empty.md"), "---\nrole: planner\n---\n\n")
	writeFile(t, filepath.Join(root, ".claude/agents/tier.md"), "---\nrole: linting\ntier: huge\n---\nlint it\n")
	writeFile(t, filepath.Join(root, ".claude/agents/notes.txt"), "ignored")
	reg, warns, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.ForRole(delegate.RoleCritic); got.Prompt != "sluice critic" || got.Source != ".sluice/agents/b.md" || got.Name != "b" {
		t.Errorf("critic = %+v, want .sluice/agents/b.md to win", got)
	}
	if got := reg.ForRole(delegate.RoleLinting); got.Prompt != "lint it" || got.Tier != TierFast {
		t.Errorf("linting = %+v, want the override with the built-in tier", got)
	}
	if reg.ForRole(delegate.RolePlanner).Source != SourceBuiltin {
		t.Error("an empty override replaced the planner")
	}
	var all []string
	for _, w := range warns {
		all = append(all, w.String())
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{
		".claude/agents/a.md: shadowed by .sluice/agents/b.md",
		".sluice/agents/c.md: skipped: .sluice/agents/b.md already overrides role critic",
		`.claude/agents/poet.md: skipped: role "poet" is not an agent role`,
		".claude/agents/broken.md: skipped: no front matter",
		".claude/agents/empty.md: skipped: the override has no prompt",
		`.claude/agents/tier.md: tier "huge" ignored`,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings lack %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "go-expert") {
		t.Errorf("a file without a role key was treated as an override:\n%s", joined)
	}
	if a, ok := reg.Lookup("b"); !ok || a.Role != delegate.RoleCritic {
		t.Errorf("Lookup by override name: %+v %v", a, ok)
	}
	if a, ok := reg.Lookup(delegate.RoleVerifier); !ok || a.Name != "verifier" {
		t.Errorf("Lookup by role: %+v %v", a, ok)
	}
	if len(reg.All()) != len(delegate.Roles()) {
		t.Errorf("All has %d agents", len(reg.All()))
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "go-reviewer.md")
	writeFile(t, path, "---\ndescription: Reviews Go\ntools:\n  - read_file\n  - grep\n---\nReview Go code.\n")
	a, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "go-reviewer" || a.Prompt != "Review Go code." || strings.Join(a.Tools, ",") != "read_file,grep" || a.Source != path {
		t.Errorf("LoadFile = %+v", a)
	}
	writeFile(t, path, "---\nname: x\n")
	if _, err := LoadFile(path); err == nil || !strings.Contains(err.Error(), "not closed") {
		t.Errorf("unclosed front matter: err = %v", err)
	}
	writeFile(t, path, "---\nname: x\n---\n")
	if _, err := LoadFile(path); err == nil || !strings.Contains(err.Error(), "no prompt") {
		t.Errorf("empty prompt: err = %v", err)
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.md")); err == nil {
		t.Error("missing file loaded")
	}
}

func twoTasks() (*plan.Task, *plan.Task) {
	a := &plan.Task{ID: "task-001", Title: "Add the search handler", Description: "In internal/api/search.go.",
		FilesToModify: []string{"internal/api/search.go"}, AcceptanceCriteria: []string{"go test ./internal/api -run TestSearch passes"}}
	b := &plan.Task{ID: "task-002", Title: "Document search", Description: "In README.md.",
		FilesToModify: []string{"README.md"}, AcceptanceCriteria: []string{"README.md has a Search section"}, ReviewDepth: plan.DepthLightweight}
	return a, b
}

// TestSharedCachePrefix: two tasks' delegations share the tools and the
// system prompt byte for byte, and differ only in the delegation message,
// which comes last.
func TestSharedCachePrefix(t *testing.T) {
	reg, _, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	exec := reg.ForRole(delegate.RoleExecutor)
	contribs := []Contribution{
		{Capability: "security", Into: delegate.RoleExecutor, Text: "Never log secrets."},
		{Capability: "docs", Into: delegate.RoleExecutor, Text: "Update CHANGELOG.md."},
		{Capability: "perf", Into: delegate.RoleVerifier, Text: "Run the benchmarks."},
	}
	instructions := "Use gofmt. Tests use testscript."
	specs := toolSpecs(t, exec.ReadOnly())
	ta, tb := twoTasks()
	var reqs [2][]byte
	var msgs [2]string
	for i, task := range []*plan.Task{ta, tb} {
		p, err := Compose(exec, instructions, contribs, delegate.Input{FeatureName: "Add search", RunDir: ".sluice/runs/r1", Task: task})
		if err != nil {
			t.Fatal(err)
		}
		req := p.Request("claude-test", specs, 4096)
		req.Messages = nil
		prefix, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		reqs[i], msgs[i] = prefix, p.Message
		for _, part := range p.System {
			if strings.Contains(part.Text, task.ID) {
				t.Errorf("task %s appears in the system prompt: the prefix would not be shared", task.ID)
			}
		}
		if full := p.Request("m", specs, 1); full.Messages[len(full.Messages)-1].Content[0].Text != p.Message {
			t.Error("the delegation is not the last message")
		}
	}
	if !bytes.Equal(reqs[0], reqs[1]) {
		t.Errorf("the stable prefixes differ:\n%s\n%s", reqs[0], reqs[1])
	}
	if msgs[0] == msgs[1] {
		t.Error("two tasks got the same delegation")
	}
}

func TestSystemLayout(t *testing.T) {
	a := Agent{Name: "x", Role: delegate.RoleVerifier, Prompt: "PROMPT"}
	parts := System(a, "  INSTR \n", []Contribution{
		{Capability: "zeta", Into: delegate.RoleVerifier, Text: "Z"},
		{Capability: "alpha", Into: delegate.RoleVerifier, Text: "A\n"},
		{Capability: "other", Into: delegate.RoleExecutor, Text: "not mine"},
		{Capability: "blank", Into: delegate.RoleVerifier, Text: "  "},
	})
	var texts []string
	for i, p := range parts {
		texts = append(texts, p.Text)
		if p.Cache != (i == len(parts)-1) {
			t.Errorf("part %d: Cache = %v; only the last part is marked", i, p.Cache)
		}
	}
	want := []string{"PROMPT", "# Project instructions\n\nINSTR", "<capability name=\"zeta\">\nZ\n</capability>", "<capability name=\"alpha\">\nA\n</capability>"}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("parts = %q\nwant %q", texts, want)
	}
	only := System(a, "", nil)
	if len(only) != 1 || !only[0].Cache {
		t.Errorf("prompt only: %+v", only)
	}
}

func TestTokens(t *testing.T) {
	for s, want := range map[string]int{"": 0, "a": 1, "abcd": 1, "abcde": 2, strings.Repeat("x", 6000): 1500} {
		if got := Tokens(s); got != want {
			t.Errorf("Tokens(%d bytes) = %d, want %d", len(s), got, want)
		}
	}
}

// TestContributionBlockMatchesCapabilityRender keeps System's block format
// and capability.Render's in step, for callers that build prompts either way.
func TestContributionBlockMatchesCapabilityRender(t *testing.T) {
	frag := capability.Fragment{Capability: "security", Into: delegate.RoleExecutor, Text: "Never log secrets."}
	parts := System(Agent{Role: delegate.RoleExecutor, Prompt: "P"}, "", []Contribution{{Capability: frag.Capability, Into: frag.Into, Text: frag.Text}})
	if got, want := parts[len(parts)-1].Text, capability.Render([]capability.Fragment{frag}); got != want {
		t.Errorf("System block %q != capability.Render %q", got, want)
	}
}

func TestUseSpecialistReplacesOnlyTheBuiltinPrompt(t *testing.T) {
	root := t.TempDir()
	reg, _, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	spec := Agent{Name: "go-reviewer", Prompt: "Review Go code like a gopher.", Tools: []string{"write_file"}, Source: "plugins/go/agents/go-reviewer.md"}
	if !reg.UseSpecialist("code-reviewer", spec) {
		t.Fatal("the specialist was not taken over the built-in")
	}
	got := reg.ForRole("code-reviewer")
	builtin, _ := reg.Builtin("code-reviewer")
	if got.Prompt != spec.Prompt || got.Role != "code-reviewer" || !slices.Equal(got.Tools, builtin.Tools) {
		t.Fatalf("specialist = %+v, want its prompt with the role's fixed tools %v", got, builtin.Tools)
	}

	// A project override of the role wins over a manifest's specialist.
	dir := filepath.Join(root, ".claude", "agents")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mine.md"), []byte("---\nname: mine\nrole: code-reviewer\n---\nThe project's reviewer.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, _, err = Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if reg.UseSpecialist("code-reviewer", spec) || !strings.Contains(reg.ForRole("code-reviewer").Prompt, "The project's reviewer.") {
		t.Fatalf("the project override must win: %+v", reg.ForRole("code-reviewer"))
	}
}
