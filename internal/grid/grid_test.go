package grid

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-run/sluice/internal/config"
	"github.com/sluice-run/sluice/internal/contract"
)

var goGates = map[string]string{
	"format":    "gofmt -l {files}",
	"lint":      "go vet ./...",
	"typecheck": "go build ./...",
	"test":      "go test ./...",
}

func roles(t testing.TB) []contract.Role {
	t.Helper()
	r, err := contract.Roles()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func build(t testing.TB, in Input) *Grid {
	t.Helper()
	g, err := Build(roles(t), in)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func ids(cs []Clause) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func TestBuildCommandsFromGates(t *testing.T) {
	g := build(t, Input{Gates: goGates})
	want := map[string]string{
		"format":              "gofmt -l {files}",
		"lint":                "go vet ./...",
		"typecheck":           "go build ./...",
		"test":                "go test ./...",
		"full-suite-per-task": "go test ./...",
		"merged-builds":       "go build ./...",
		"full-suite":          "go test ./...",
	}
	got := map[string]string{}
	for _, a := range g.Arrows {
		for _, c := range a.Clauses {
			if c.Kind == contract.KindCommand {
				got[c.ID] = c.Command
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("command clauses = %v, want %v", got, want)
	}
	for id, cmd := range want {
		if got[id] != cmd {
			t.Errorf("clause %s runs %q, want %q", id, got[id], cmd)
		}
	}
	if g.Gates["standards"].Source != SourceUnset || g.Gates["test"].Source != SourceResolved {
		t.Errorf("gate sources: %+v", g.Gates)
	}
	if g.Depth != contract.DepthStandard || g.SeverityThreshold != SeverityMajor {
		t.Errorf("defaults: depth %q threshold %q", g.Depth, g.SeverityThreshold)
	}
	if g.Remediation != (Remediation{ResearchRetries: 1, CriticMaxIterations: 3, TaskRetries: 2}) {
		t.Errorf("remediation = %+v", g.Remediation)
	}
	if s := g.Arrow(contract.ArrowIntegratorDone).Clauses[0].Scope; s != contract.ScopeTree {
		t.Errorf("merged-builds scope %q, want tree", s)
	}
	if len(g.Unset()) != 0 {
		t.Errorf("Unset() = %v, want none", g.Unset())
	}
}

func TestClausesByDepth(t *testing.T) {
	g := build(t, Input{Gates: goGates, Extra: []config.Clause{
		{Arrow: contract.ArrowImplementerIntegrator, ID: "migrations-reversible", Kind: "command", Command: "make check-migrations", Depth: "full"},
	}})
	arrow := contract.ArrowImplementerIntegrator
	light := ids(g.Clauses(arrow, contract.DepthLightweight))
	std := ids(g.Clauses(arrow, contract.DepthStandard))
	full := ids(g.Clauses(arrow, contract.DepthFull))
	if slices.Contains(light, "review-resolved") || !slices.Contains(std, "review-resolved") {
		t.Errorf("the code review must start at standard: lightweight %v, standard %v", light, std)
	}
	if slices.Contains(std, "full-suite-per-task") || !slices.Contains(full, "full-suite-per-task") {
		t.Errorf("the per-task full suite must start at full: standard %v, full %v", std, full)
	}
	if !slices.Contains(full, "migrations-reversible") || slices.Contains(std, "migrations-reversible") {
		t.Errorf("project clause at depth full: standard %v, full %v", std, full)
	}
	for _, must := range []string{"format", "lint", "typecheck", "test", "criteria-confirmed", "executor-complete", "verifier-pass"} {
		if !slices.Contains(light, must) {
			t.Errorf("lightweight lacks %s: %v", must, light)
		}
	}
	if len(full) != len(g.Arrow(arrow).Clauses) {
		t.Errorf("full depth must apply every clause: %v", full)
	}
	if g.Clauses("implementer->done", contract.DepthFull) != nil || g.Clauses(arrow, "deep") != nil {
		t.Error("unknown arrow or depth must give no clauses")
	}
}

func TestBuildExtra(t *testing.T) {
	g := build(t, Input{Gates: goGates, Extra: []config.Clause{
		{Arrow: contract.ArrowImplementerIntegrator, ID: "license-headers", Kind: "command", Command: "./scripts/check-license {files}"},
		{Arrow: contract.ArrowArchitectImplementer, ID: "api-compat", Kind: "attested", Text: "No public API is removed"},
		{Arrow: contract.ArrowIntegratorDone, ID: "e2e", Kind: "command", Command: "make e2e", Depth: "standard"},
	}})
	last := func(arrow string) Clause {
		cs := g.Arrow(arrow).Clauses
		return cs[len(cs)-1]
	}
	if c := last(contract.ArrowImplementerIntegrator); c.ID != "license-headers" || c.Fixed || c.Eval != "exec" ||
		c.Scope != contract.ScopeChanged || c.Depth != contract.DepthLightweight || c.Text == "" {
		t.Errorf("per-task command clause = %+v", c)
	}
	if c := last(contract.ArrowArchitectImplementer); c.ID != "api-compat" || c.Eval != "attest:critic" || c.Command != "" {
		t.Errorf("attested clause = %+v", c)
	}
	if c := last(contract.ArrowIntegratorDone); c.ID != "e2e" || c.Scope != contract.ScopeTree || c.Depth != "standard" {
		t.Errorf("integrator command clause = %+v", c)
	}
}

func TestBuildRefuses(t *testing.T) {
	cases := []struct {
		name    string
		in      Input
		want    []string
		isFixed bool
	}{
		{"blank fixed gate", Input{Gates: goGates, Overrides: map[string]string{"test": "  "}},
			[]string{"gates.commands.test", "test", "full-suite-per-task", "full-suite"}, true},
		{"no-op fixed gate", Input{Gates: goGates, Overrides: map[string]string{"format": "true"}},
			[]string{"gates.commands.format", "format"}, true},
		{"reuse fixed id", Input{Gates: goGates, Extra: []config.Clause{
			{Arrow: contract.ArrowImplementerIntegrator, ID: "test", Kind: "command", Command: "go test ./pkg/..."}}},
			[]string{"fixed clause test"}, true},
		{"weaken fixed clause", Input{Gates: goGates, Extra: []config.Clause{
			{Arrow: contract.ArrowImplementerIntegrator, ID: "criteria-confirmed", Kind: "attested", Text: "looks fine"}}},
			[]string{"weaken fixed clause criteria-confirmed", "artifact"}, true},
		{"remove fixed clause", Input{Gates: goGates, Extra: []config.Clause{
			{Arrow: contract.ArrowIntegratorDone, ID: "full-suite", Kind: "none"}}},
			[]string{"fixed clause full-suite"}, true},
		{"unknown arrow", Input{Gates: goGates, Extra: []config.Clause{
			{Arrow: "implementer->done", ID: "x", Kind: "command", Command: "make"}}},
			[]string{`"implementer->done"`, "analyst->architect, architect->implementer, implementer->integrator, integrator->done"}, false},
		{"unknown gate override", Input{Gates: goGates, Overrides: map[string]string{"build": "make"}},
			[]string{"gates.commands.build", "format, lint, typecheck, test, standards"}, false},
		{"artifact extra", Input{Extra: []config.Clause{
			{Arrow: contract.ArrowAnalystArchitect, ID: "x", Kind: "artifact"}}}, []string{"built in"}, false},
		{"attested without attester", Input{Extra: []config.Clause{
			{Arrow: contract.ArrowIntegratorDone, ID: "x", Kind: "attested", Text: "ok"}}},
			[]string{"no model to attest", "architect->implementer or implementer->integrator"}, false},
		{"command without command", Input{Extra: []config.Clause{
			{Arrow: contract.ArrowIntegratorDone, ID: "x", Kind: "command"}}}, []string{"needs a command"}, false},
		{"duplicate extra", Input{Extra: []config.Clause{
			{Arrow: contract.ArrowIntegratorDone, ID: "x", Kind: "command", Command: "a"},
			{Arrow: contract.ArrowIntegratorDone, ID: "x", Kind: "command", Command: "b"}}}, []string{`gates.extra[1] (id "x")`, "already defined"}, false},
		{"bad depth", Input{Depth: "deep"}, []string{`run.depth "deep"`}, false},
		{"critic above contract", Input{CriticMaxIterations: 5}, []string{"critic_max_iterations 5", "at most 3"}, false},
		{"retries above contract", Input{TaskRetries: 3}, []string{"task_retries 3", "at most 2"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Build(roles(t), c.in)
			if err == nil {
				t.Fatal("Build succeeded, want an error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if errors.Is(err, ErrFixedClause) != c.isFixed {
				t.Errorf("errors.Is(err, ErrFixedClause) = %v, want %v", !c.isFixed, c.isFixed)
			}
		})
	}
}

func TestBuildOverridesAndBounds(t *testing.T) {
	g := build(t, Input{Gates: goGates, Overrides: map[string]string{"lint": "golangci-lint run", "standards": ""},
		CriticMaxIterations: 1, TaskRetries: 1, Depth: "full"})
	if g.Gates["lint"] != (Gate{Command: "golangci-lint run", Source: SourceConfig}) {
		t.Errorf("lint gate = %+v", g.Gates["lint"])
	}
	if c := g.Clauses(contract.ArrowImplementerIntegrator, "full"); c[2].ID != "lint" || c[2].Command != "golangci-lint run" {
		t.Errorf("lint clause = %+v", c[2])
	}
	if g.Remediation.CriticMaxIterations != 1 || g.Arrow(contract.ArrowArchitectImplementer).Bound != 1 || g.Remediation.TaskRetries != 1 {
		t.Errorf("bounds = %+v", g.Remediation)
	}
}

func TestUnset(t *testing.T) {
	g := build(t, Input{Gates: map[string]string{"format": "gofmt -l {files}", "test": "go test ./..."}})
	want := []string{"lint: lint", "typecheck: typecheck, merged-builds"}
	if !slices.Equal(g.Unset(), want) {
		t.Errorf("Unset() = %q, want %q", g.Unset(), want)
	}
}

func TestWriteLoadVersions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".sluice")
	g1 := build(t, Input{Gates: goGates})
	path, created, err := Write(dir, g1)
	if err != nil || !created || filepath.Base(path) != "grid.v1.yaml" || g1.Version != 1 || !strings.HasPrefix(g1.Hash, "sha256:") {
		t.Fatalf("first Write = %s, %v, %v (version %d hash %q)", path, created, err, g1.Version, g1.Hash)
	}
	assertCurrent(t, dir, "grid.v1.yaml")

	loaded, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if same, _ := equal(loaded, g1); !same || loaded.Version != 1 || loaded.Hash != g1.Hash {
		t.Errorf("loaded grid differs from the written one")
	}

	// The same input writes nothing.
	again := build(t, Input{Gates: goGates})
	path, created, err = Write(dir, again)
	if err != nil || created || filepath.Base(path) != "grid.v1.yaml" || again.Version != 1 {
		t.Fatalf("unchanged Write = %s, %v, %v", path, created, err)
	}
	if n, _ := maxVersion(dir); n != 1 {
		t.Errorf("unchanged Write left version %d", n)
	}

	// A changed gate command writes v2 and moves grid.current.
	v1, _ := os.ReadFile(filepath.Join(dir, "grid.v1.yaml"))
	g2 := build(t, Input{Gates: goGates, Overrides: map[string]string{"lint": "golangci-lint run"}})
	path, created, err = Write(dir, g2)
	if err != nil || !created || filepath.Base(path) != "grid.v2.yaml" {
		t.Fatalf("changed Write = %s, %v, %v", path, created, err)
	}
	assertCurrent(t, dir, "grid.v2.yaml")
	if after, _ := os.ReadFile(filepath.Join(dir, "grid.v1.yaml")); string(after) != string(v1) {
		t.Error("grid.v1.yaml changed when v2 was written")
	}
	if cur, err := Load(dir); err != nil || cur.Gates["lint"].Command != "golangci-lint run" {
		t.Errorf("Load after v2 = %v, %v", cur, err)
	}
	if old, err := LoadFile(filepath.Join(dir, "grid.v1.yaml")); err != nil || old.Gates["lint"].Command != "go vet ./..." {
		t.Errorf("LoadFile(v1) = %v, %v", old, err)
	}
}

func assertCurrent(t *testing.T, dir, want string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, CurrentFile))
	if err != nil || strings.TrimSpace(string(b)) != want {
		t.Errorf("grid.current = %q, %v; want %s", b, err, want)
	}
}

// edit rewrites a grid file as a person with an editor would.
func edit(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), old, new, 1)
	if s == string(b) {
		t.Fatalf("%q not in %s", old, path)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadRefusesHandEdit(t *testing.T) {
	for _, c := range []struct{ name, old, new string }{
		{"command", "command: go test ./...", "command: go test ./internal/..."},
		{"depth", "depth: full\n", "depth: standard\n"},
		{"comment", "# Written by", "# Rewritten by"},
		{"hash line", "hash: sha256:", "hash: sha256:0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path, _, err := Write(dir, build(t, Input{Gates: goGates}))
			if err != nil {
				t.Fatal(err)
			}
			edit(t, path, c.old, c.new)
			_, err = Load(dir)
			if !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "sluice init") {
				t.Fatalf("Load of an edited grid = %v; want ErrTampered naming %s and sluice init", err, path)
			}
			// init again writes a fresh version that loads.
			path2, created, err := Write(dir, build(t, Input{Gates: goGates}))
			if err != nil || !created || filepath.Base(path2) != "grid.v2.yaml" {
				t.Fatalf("Write after tampering = %s, %v, %v", path2, created, err)
			}
			if _, err := Load(dir); err != nil {
				t.Errorf("Load after rewriting = %v", err)
			}
		})
	}
}

// TestLoadRefusesResealedEdit: an edit whose hash was recomputed still fails
// when it changes a fixed clause.
func TestLoadRefusesResealedEdit(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(g *Grid)
		want   string
	}{
		{"drop clause", func(g *Grid) {
			a := g.Arrow(contract.ArrowIntegratorDone)
			a.Clauses = a.Clauses[:1]
		}, "fixed clause full-suite is missing"},
		{"weaken kind", func(g *Grid) {
			g.Arrow(contract.ArrowImplementerIntegrator).Clauses[1].Kind = contract.KindAttested
		}, "fixed clause format differs"},
		{"raise depth", func(g *Grid) {
			g.Arrow(contract.ArrowImplementerIntegrator).Clauses[4].Depth = contract.DepthFull
		}, "fixed clause test differs"},
		{"command drift", func(g *Grid) {
			g.Arrow(contract.ArrowImplementerIntegrator).Clauses[4].Command = "true"
		}, `clause test runs "true"`},
		{"raise bound", func(g *Grid) { g.Arrow(contract.ArrowImplementerIntegrator).Bound = 9 }, "bound 9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			g := build(t, Input{Gates: goGates})
			c.mutate(g)
			g.Version = 1
			data, _, err := encode(g)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "grid.v1.yaml"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, CurrentFile), []byte("grid.v1.yaml\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = Load(dir)
			if !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Load = %v; want ErrTampered containing %q", err, c.want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); !errors.Is(err, ErrNoGrid) || !strings.Contains(err.Error(), "sluice init") {
		t.Errorf("Load without a grid = %v, want ErrNoGrid", err)
	}
	os.WriteFile(filepath.Join(dir, CurrentFile), []byte("../../etc/passwd\n"), 0o644)
	if _, err := Load(dir); !errors.Is(err, ErrTampered) {
		t.Errorf("Load of a bad grid.current = %v, want ErrTampered", err)
	}
	os.WriteFile(filepath.Join(dir, CurrentFile), []byte("grid.v7.yaml\n"), 0o644)
	if _, err := Load(dir); !errors.Is(err, ErrNoGrid) {
		t.Errorf("Load of a missing version = %v, want ErrNoGrid", err)
	}
	// A file renamed to another version is refused.
	path, _, err := Write(t.TempDir(), build(t, Input{Gates: goGates}))
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(filepath.Dir(path), "grid.v3.yaml")
	if err := os.Rename(path, moved); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(moved); !errors.Is(err, ErrTampered) {
		t.Errorf("LoadFile of a renamed version = %v, want ErrTampered", err)
	}
}
