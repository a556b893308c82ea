package gitx

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestResetHardDiffAndGitPath(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	gitEnv := append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x", "GIT_CONFIG_NOSYSTEM=1")
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, gitEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644)
	run("add", "a.txt")
	run("commit", "-qm", "first")
	repo, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	_, base, _ := repo.Head(ctx)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("two\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "new.txt"), []byte("x\n"), 0o644)
	d, err := repo.Diff(ctx, dir, base, 0)
	if err != nil || !strings.Contains(d, "+two") {
		t.Fatalf("diff = %q, %v", d, err)
	}
	if cut, _ := repo.Diff(ctx, dir, base, 10); !strings.Contains(cut, "diff cut at 10") {
		t.Fatalf("cut diff = %q", cut)
	}
	if err := repo.ResetHard(ctx, dir, base); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "one\n" {
		t.Fatalf("a.txt after reset = %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("untracked file survived the reset: %v", err)
	}
	p, err := repo.GitPath("info/exclude")
	if err != nil || p != filepath.Join(dir, ".git", "info", "exclude") {
		t.Fatalf("GitPath = %q, %v", p, err)
	}
}
