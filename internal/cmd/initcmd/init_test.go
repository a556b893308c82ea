package initcmd

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/contract"
	"github.com/sluice-run/sluice/internal/grid"
	"github.com/sluice-run/sluice/internal/resolve"
	"github.com/sluice-run/sluice/internal/ui"
)

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@sluice.invalid",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@sluice.invalid", "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// goRepo makes a committed Go repository.
func goRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":      "module example.com/fixture\n\ngo 1.22\n",
		"add.go":      "package fixture\n\nfunc Add(a, b int) int { return a + b }\n",
		"add_test.go": "package fixture\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"no\")\n\t}\n}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "init", "-q")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "fixture")
	return dir
}

func runInit(t *testing.T, dir string, opts Options) (stdout, stderr string, err error) {
	t.Helper()
	io, _, out, errOut := ui.Test()
	f := &cmdutil.Factory{
		IO:     io,
		Getenv: func(string) string { return "" },
		Getwd:  func() (string, error) { return dir, nil },
	}
	err = Run(context.Background(), f, opts)
	return out.String(), errOut.String(), err
}

// commandClauses maps each command clause id of g to its command.
func commandClauses(g *grid.Grid) map[string]string {
	m := map[string]string{}
	for _, a := range g.Arrows {
		for _, c := range a.Clauses {
			if c.Kind == contract.KindCommand {
				m[c.ID] = c.Command
			}
		}
	}
	return m
}

// assertResolvedGates checks that every fixed command clause of the grid
// runs exactly the resolved command of the gate it names.
func assertResolvedGates(t *testing.T, root string, g *grid.Grid) {
	t.Helper()
	res, err := resolve.Resolve(context.Background(), root, resolve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Primary != "go" {
		t.Fatalf("%s resolved as %q, want go", root, res.Primary)
	}
	n := 0
	for _, a := range g.Arrows {
		for _, c := range a.Clauses {
			if c.Kind != contract.KindCommand || !c.Fixed {
				continue
			}
			e, err := contract.ParseEval(c.Kind, c.Eval)
			if err != nil {
				t.Fatal(err)
			}
			want := res.Gates[e.Name].Command
			if want == "" || c.Command != want {
				t.Errorf("clause %s runs %q, want the resolved %s gate %q", c.ID, c.Command, e.Name, want)
			}
			n++
		}
	}
	if n != 7 {
		t.Errorf("%d fixed command clauses, want 7", n)
	}
}

func TestInitGoRepo(t *testing.T) {
	dir := goRepo(t)
	out, _, err := runInit(t, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"wrote .sluice/config.yaml", "wrote .sluice/grid.v1.yaml"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	g, err := grid.Load(filepath.Join(dir, ".sluice"))
	if err != nil {
		t.Fatal(err)
	}
	assertResolvedGates(t, dir, g)
	if cmds := commandClauses(g); cmds["test"] != "go test ./..." || cmds["lint"] != "go vet ./..." {
		t.Errorf("Go gates in the grid: %v", cmds)
	}

	// A second run writes nothing.
	cfgBefore, _ := os.ReadFile(filepath.Join(dir, ".sluice", "config.yaml"))
	out, _, err = runInit(t, dir, Options{})
	if err != nil || !strings.Contains(out, "unchanged .sluice/grid.v1.yaml") || !strings.Contains(out, "kept .sluice/config.yaml") {
		t.Fatalf("second init: %v\n%s", err, out)
	}
	if cfgAfter, _ := os.ReadFile(filepath.Join(dir, ".sluice", "config.yaml")); string(cfgAfter) != string(cfgBefore) {
		t.Error("second init changed config.yaml")
	}
	if _, err := os.Stat(filepath.Join(dir, ".sluice", "grid.v2.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("second init wrote grid.v2.yaml (stat: %v)", err)
	}
}

func TestInitChangedConfigWritesV2(t *testing.T) {
	dir := goRepo(t)
	if _, _, err := runInit(t, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	cfg := "gates:\n  commands:\n    lint: staticcheck ./...\n"
	if err := os.WriteFile(filepath.Join(dir, ".sluice", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := runInit(t, dir, Options{})
	if err != nil || !strings.Contains(out, "wrote .sluice/grid.v2.yaml") {
		t.Fatalf("init after a config change: %v\n%s", err, out)
	}
	g, err := grid.Load(filepath.Join(dir, ".sluice"))
	if err != nil {
		t.Fatal(err)
	}
	if g.Version != 2 || commandClauses(g)["lint"] != "staticcheck ./..." {
		t.Errorf("current grid v%d lint %q", g.Version, commandClauses(g)["lint"])
	}
}

func TestInitRefusesDroppedFixedClause(t *testing.T) {
	dir := goRepo(t)
	os.MkdirAll(filepath.Join(dir, ".sluice"), 0o755)
	cfg := "gates:\n  commands:\n    typecheck: \"\"\n"
	if err := os.WriteFile(filepath.Join(dir, ".sluice", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := runInit(t, dir, Options{})
	if !errors.Is(err, grid.ErrFixedClause) || !strings.Contains(err.Error(), "typecheck, merged-builds") ||
		!strings.Contains(err.Error(), ".sluice/config.yaml") {
		t.Fatalf("err = %v, want ErrFixedClause naming typecheck, merged-builds and the config file", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".sluice", grid.CurrentFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused config wrote a grid (stat grid.current: %v)", err)
	}
}

func TestInitOutsideGit(t *testing.T) {
	_, _, err := runInit(t, t.TempDir(), Options{})
	if err == nil || !strings.Contains(err.Error(), "git") {
		t.Errorf("err = %v, want one about the missing git repository", err)
	}
}

// TestInitThisRepository runs init on a clone of sluice's own repository: the
// grid's command clauses are this repository's resolved Go gates.
func TestInitThisRepository(t *testing.T) {
	src, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(src, ".git")); err != nil {
		t.Skipf("%s is not a git checkout", src)
	}
	dir := filepath.Join(t.TempDir(), "sluice")
	git(t, filepath.Dir(dir), "clone", "-q", "--no-hardlinks", src, dir)
	if _, _, err := runInit(t, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	g, err := grid.Load(filepath.Join(dir, ".sluice"))
	if err != nil {
		t.Fatal(err)
	}
	assertResolvedGates(t, dir, g)
}
