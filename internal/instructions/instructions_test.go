package instructions

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadOrderGlobalFirstProjectLast(t *testing.T) {
	global, project := t.TempDir(), t.TempDir()
	write(t, filepath.Join(global, "CLAUDE.md"), "global claude")
	write(t, filepath.Join(global, "AGENTS.md"), "global agents")
	write(t, filepath.Join(project, "CLAUDE.md"), "project claude")
	write(t, filepath.Join(project, "AGENTS.md"), "project agents")
	write(t, filepath.Join(project, ".claude", "CLAUDE.md"), "project dot-claude")

	set, err := Load(project, global, 0)
	if err != nil {
		t.Fatal(err)
	}
	text := set.Text()
	order := []string{"global claude", "global agents", "project claude", "project agents", "project dot-claude"}
	last := -1
	for _, s := range order {
		i := strings.Index(text, s)
		if i < 0 {
			t.Fatalf("%q missing from:\n%s", s, text)
		}
		if i < last {
			t.Errorf("%q is out of order in:\n%s", s, text)
		}
		last = i
	}
	files := set.Files()
	if len(files) != 5 {
		t.Fatalf("got %d files, want 5", len(files))
	}
	if files[0].Scope != ScopeGlobal || files[0].Path != filepath.Join(global, "CLAUDE.md") {
		t.Errorf("first file = %+v, want the global CLAUDE.md by absolute path", files[0])
	}
	// Project paths are relative so every worktree composes the same text.
	if files[4].Scope != ScopeProject || files[4].Path != ".claude/CLAUDE.md" {
		t.Errorf("last file = %+v, want the project .claude/CLAUDE.md by relative path", files[4])
	}
	if !strings.Contains(text, `<instructions source=".claude/CLAUDE.md" scope="project">`) {
		t.Errorf("block header missing from:\n%s", text)
	}
	if strings.Contains(text, project) {
		t.Errorf("project text names the worktree path %s, which breaks prompt caching across worktrees", project)
	}
	if set.Tokens() != (len(text)+3)/4 {
		t.Errorf("Tokens() = %d, want %d", set.Tokens(), (len(text)+3)/4)
	}
}

func TestLoadSkipsMissingEmptyAndDuplicates(t *testing.T) {
	project := t.TempDir()
	write(t, filepath.Join(project, "CLAUDE.md"), "same rules\n")
	write(t, filepath.Join(project, ".claude", "CLAUDE.md"), "   \n")
	// AGENTS.md is commonly a symlink to CLAUDE.md; it must not be loaded twice.
	if err := os.Symlink("CLAUDE.md", filepath.Join(project, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	set, err := Load(project, filepath.Join(t.TempDir(), "absent"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(set.Files()); n != 1 {
		t.Errorf("loaded %d files, want 1: %+v", n, set.Files())
	}
	if strings.Count(set.Text(), "same rules") != 1 {
		t.Errorf("text repeats the instructions:\n%s", set.Text())
	}
}

func TestLoadNothing(t *testing.T) {
	set, err := Load(t.TempDir(), "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if set.Text() != "" || set.Tokens() != 0 || len(set.Files()) != 0 {
		t.Errorf("empty project gave %q (%d tokens)", set.Text(), set.Tokens())
	}
}

func TestLoadOverBudgetNamesEveryFile(t *testing.T) {
	global, project := t.TempDir(), t.TempDir()
	write(t, filepath.Join(global, "AGENTS.md"), strings.Repeat("g", 400))
	write(t, filepath.Join(project, "CLAUDE.md"), strings.Repeat("p", 4000))

	_, err := Load(project, global, 500)
	var be *BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("err = %v, want *BudgetError", err)
	}
	if len(be.Files) != 2 || be.Budget != 500 || be.Total <= 500 {
		t.Errorf("BudgetError = %+v", be)
	}
	msg := err.Error()
	for _, want := range []string{filepath.Join(global, "AGENTS.md"), "CLAUDE.md (project)", "budget of 500"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if be.Files[1].Tokens < 1000 {
		t.Errorf("project file tokens = %d, want at least 1000 for 4000 bytes", be.Files[1].Tokens)
	}

	// The same files fit a larger budget.
	if _, err := Load(project, global, 2000); err != nil {
		t.Errorf("within budget: %v", err)
	}
}

func TestLoadDirectoryIsAnError(t *testing.T) {
	project := t.TempDir()
	if err := os.Mkdir(filepath.Join(project, "CLAUDE.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Load(project, "", 0)
	if err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("err = %v, want a directory error", err)
	}
}
