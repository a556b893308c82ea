package gitx

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	// Tests must not depend on the machine's git configuration.
	home, err := os.MkdirTemp("", "gitx-home-")
	if err != nil {
		panic(err)
	}
	for k, v := range map[string]string{
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_GLOBAL":   os.DevNull,
		"HOME":                home,
		"GIT_AUTHOR_NAME":     "user",
		"GIT_AUTHOR_EMAIL":    "user@example.invalid",
		"GIT_COMMITTER_NAME":  "user",
		"GIT_COMMITTER_EMAIL": "user@example.invalid",
	} {
		os.Setenv(k, v)
	}
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

var testID = Identity{Name: "sluice", Email: "sluice@example.invalid", When: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newRepo makes a repository with one commit on main and opens it.
func newRepo(t *testing.T) (*Repo, string) {
	t.Helper()
	dir := t.TempDir()
	run(t, dir, "init", "-q", "-b", "main")
	write(t, filepath.Join(dir, "a.txt"), "one\ntwo\nthree\n")
	write(t, filepath.Join(dir, ".gitignore"), ".sluice/\n")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "initial")
	r, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return r, r.Root()
}

// snapshot hashes everything the user owns: every file of the working tree
// (outside .sluice and .git), the index, HEAD, and the user's branch ref.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && (rel == ".sluice" || rel == ".git") {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		snap[rel] = fmt.Sprintf("%x", sha256.Sum256(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{".git/index", ".git/HEAD"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		snap[f] = fmt.Sprintf("%x", sha256.Sum256(b))
	}
	snap["refs/heads/main"] = run(t, root, "rev-parse", "refs/heads/main")
	snap["index entries"] = run(t, root, "ls-files", "--stage")
	return snap
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	r, root := newRepo(t)
	sub := filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	r2, err := Open(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Root() != r.Root() {
		t.Errorf("Open(subdir).Root() = %q, want %q", r2.Root(), r.Root())
	}

	if _, err := Open(ctx, t.TempDir()); !errors.Is(err, ErrNotRepo) {
		t.Errorf("Open(plain dir) = %v, want ErrNotRepo", err)
	}
	empty := t.TempDir()
	run(t, empty, "init", "-q")
	if _, err := Open(ctx, empty); !errors.Is(err, ErrNoCommits) {
		t.Errorf("Open(repo without commits) = %v, want ErrNoCommits", err)
	}
}

func TestHeadAndBranches(t *testing.T) {
	ctx := context.Background()
	r, root := newRepo(t)
	branch, sha, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if branch != "main" || sha != run(t, root, "rev-parse", "HEAD") {
		t.Fatalf("Head = %q %q", branch, sha)
	}
	if err := r.CreateBranch(ctx, "sluice/r1", sha); err != nil {
		t.Fatal(err)
	}
	if err := r.CreateBranch(ctx, "sluice/r1", sha); err != nil {
		t.Fatalf("CreateBranch at the same commit again: %v", err)
	}
	got, err := r.BranchSHA(ctx, "sluice/r1")
	if err != nil || got != sha {
		t.Fatalf("BranchSHA = %q, %v; want %q", got, err, sha)
	}
	write(t, filepath.Join(root, "b.txt"), "b")
	run(t, root, "add", "b.txt")
	run(t, root, "commit", "-q", "-m", "second")
	_, sha2, _ := r.Head(ctx)
	if err := r.CreateBranch(ctx, "sluice/r1", sha2); !errors.Is(err, ErrBranchExists) {
		t.Fatalf("CreateBranch at another commit = %v, want ErrBranchExists", err)
	}
	if _, err := r.BranchSHA(ctx, "nope"); !errors.Is(err, ErrNoBranch) {
		t.Fatalf("BranchSHA(missing) = %v, want ErrNoBranch", err)
	}
	if err := r.DeleteBranch(ctx, "sluice/r1"); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteBranch(ctx, "sluice/r1"); err != nil {
		t.Fatalf("DeleteBranch(missing) = %v", err)
	}
	run(t, root, "checkout", "-q", "--detach")
	if b, _, err := r.Head(ctx); err != nil || b != "" {
		t.Fatalf("Head when detached = %q, %v", b, err)
	}
}

// TestParallelRun does a whole run's worth of operations from 8 goroutines
// (worktree per task, commit, merge onto the integration branch, remove)
// and checks that no git lock race surfaced, every task landed, and the
// user's branch, index and working tree are byte-identical afterwards.
func TestParallelRun(t *testing.T) {
	ctx := context.Background()
	r, root := newRepo(t)
	write(t, filepath.Join(root, "user-edit.txt"), "uncommitted user work\n")
	write(t, filepath.Join(root, "a.txt"), "one\ntwo (user's unstaged edit)\nthree\n")
	before := snapshot(t, root)

	_, base, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	integ := filepath.Join(root, ".sluice", "worktrees", "r1", "_integration")
	if err := r.AddWorktree(ctx, integ, RunBranch("r1"), base); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				wt := filepath.Join(root, ".sluice", "worktrees", "r1", fmt.Sprintf("t%d", i))
				branch := TaskBranch("r1", fmt.Sprintf("t%d", i))
				if err := r.AddWorktree(ctx, wt, branch, base); err != nil {
					return err
				}
				name := fmt.Sprintf("task %d.txt", i)
				if err := os.WriteFile(filepath.Join(wt, name), []byte(name), 0o644); err != nil {
					return err
				}
				if _, changed, err := r.CommitAll(ctx, wt, "task "+name, testID); err != nil || !changed {
					return fmt.Errorf("commit: changed=%v err=%v", changed, err)
				}
				files, err := r.ChangedFiles(ctx, wt, base)
				if err != nil {
					return err
				}
				if !slices.Equal(files, []string{name}) {
					return fmt.Errorf("ChangedFiles = %q, want [%q]", files, name)
				}
				if _, err := r.Merge(ctx, integ, branch, "merge "+branch, testID); err != nil {
					return err
				}
				if err := r.RemoveWorktree(ctx, wt); err != nil {
					return err
				}
				return r.DeleteBranch(ctx, branch)
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	for i := range n {
		if _, err := os.Stat(filepath.Join(integ, fmt.Sprintf("task %d.txt", i))); err != nil {
			t.Errorf("integration worktree lacks task %d's file: %v", i, err)
		}
	}
	if got := run(t, integ, "rev-list", "--count", "--merges", "HEAD"); got != fmt.Sprint(n) {
		t.Errorf("integration branch has %s merge commits, want %d", got, n)
	}
	if err := r.RemoveWorktree(ctx, integ); err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, root)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("user's %s changed during the run", k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("run created %s in the user's tree", k)
		}
	}
	if b, _, _ := r.Head(ctx); b != "main" {
		t.Errorf("user's branch is %q after the run, want main", b)
	}
}

func TestMergeConflictAborts(t *testing.T) {
	ctx := context.Background()
	r, root := newRepo(t)
	_, base, _ := r.Head(ctx)
	integ := filepath.Join(root, ".sluice", "worktrees", "r", "_integration")
	if err := r.AddWorktree(ctx, integ, "sluice/r", base); err != nil {
		t.Fatal(err)
	}
	for _, task := range []string{"x", "y"} {
		wt := filepath.Join(root, ".sluice", "worktrees", "r", task)
		if err := r.AddWorktree(ctx, wt, TaskBranch("r", task), base); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(wt, "a.txt"), "one\n"+task+"\nthree\n")
		if _, _, err := r.CommitAll(ctx, wt, "task "+task, testID); err != nil {
			t.Fatal(err)
		}
	}
	first, err := r.Merge(ctx, integ, TaskBranch("r", "x"), "merge x", testID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Merge(ctx, integ, TaskBranch("r", "y"), "merge y", testID)
	var ce *ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("second merge = %v, want *ConflictError", err)
	}
	if !slices.Equal(ce.Files, []string{"a.txt"}) {
		t.Errorf("conflict files = %q, want [a.txt]", ce.Files)
	}
	if !strings.Contains(ce.Output, "CONFLICT") {
		t.Errorf("conflict output lacks git's report: %q", ce.Output)
	}
	clean, err := r.IsClean(ctx, integ)
	if err != nil || !clean {
		t.Errorf("integration worktree clean after abort = %v, %v", clean, err)
	}
	if head := run(t, integ, "rev-parse", "HEAD"); head != first {
		t.Errorf("integration HEAD moved on a failed merge: %s, want %s", head, first)
	}
	// The merge after the conflict works: the worktree is usable again.
	wt := filepath.Join(root, ".sluice", "worktrees", "r", "z")
	if err := r.AddWorktree(ctx, wt, TaskBranch("r", "z"), first); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wt, "z.txt"), "z")
	r.CommitAll(ctx, wt, "z", testID)
	if _, err := r.Merge(ctx, integ, TaskBranch("r", "z"), "merge z", testID); err != nil {
		t.Fatalf("merge after an aborted conflict: %v", err)
	}
}

func TestAddWorktreeIdempotent(t *testing.T) {
	ctx := context.Background()
	r, root := newRepo(t)
	_, base, _ := r.Head(ctx)
	wt := filepath.Join(root, ".sluice", "worktrees", "r", "t1")
	if err := r.AddWorktree(ctx, wt, TaskBranch("r", "t1"), base); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wt, "wip.txt"), "work in progress")
	if err := r.AddWorktree(ctx, wt, TaskBranch("r", "t1"), base); err != nil {
		t.Fatalf("re-adding an existing worktree: %v", err)
	}
	if _, err := os.Stat(filepath.Join(wt, "wip.txt")); err != nil {
		t.Fatalf("re-adding discarded the worktree's work: %v", err)
	}
	if err := r.AddWorktree(ctx, wt, TaskBranch("r", "other"), base); err == nil {
		t.Fatal("adding a worktree for another branch at an occupied path succeeded")
	}

	// A committed task survives a crash that lost the directory: the branch
	// keeps its commit and the worktree is re-created from it.
	sha, _, err := r.CommitAll(ctx, wt, "wip", testID)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(wt); err != nil {
		t.Fatal(err)
	}
	if err := r.AddWorktree(ctx, wt, TaskBranch("r", "t1"), base); err != nil {
		t.Fatalf("re-adding after the directory vanished: %v", err)
	}
	if head := run(t, wt, "rev-parse", "HEAD"); head != sha {
		t.Errorf("re-created worktree at %s, want the branch's commit %s", head, sha)
	}

	// A directory git does not know (interrupted add) is repaired.
	stray := filepath.Join(root, ".sluice", "worktrees", "r", "t2")
	write(t, filepath.Join(stray, "junk"), "left over")
	if err := r.AddWorktree(ctx, stray, TaskBranch("r", "t2"), base); err != nil {
		t.Fatalf("adding over an unregistered directory: %v", err)
	}
	if !isWorktreeDir(stray) {
		t.Error("repaired path is not a worktree")
	}
	// A registration whose .git file was lost is repaired too.
	os.Remove(filepath.Join(stray, ".git"))
	if err := r.AddWorktree(ctx, stray, TaskBranch("r", "t2"), base); err != nil {
		t.Fatalf("adding over a broken worktree: %v", err)
	}
	if got := run(t, stray, "rev-parse", "--abbrev-ref", "HEAD"); got != TaskBranch("r", "t2") {
		t.Errorf("repaired worktree is on %q", got)
	}

	// An existing branch that does not contain the base is not adopted.
	run(t, root, "branch", "unrelated", base)
	other := filepath.Join(root, ".sluice", "worktrees", "r", "t3")
	if err := r.AddWorktree(ctx, other, "unrelated", sha); !errors.Is(err, ErrBranchExists) {
		t.Errorf("AddWorktree on a branch lacking the base = %v, want ErrBranchExists", err)
	}

	if err := r.RemoveWorktree(ctx, wt); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wt); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("worktree directory still exists after removal: %v", err)
	}
	if err := r.RemoveWorktree(ctx, wt); err != nil {
		t.Errorf("removing a missing worktree: %v", err)
	}
}

func TestCommitAllDeterministic(t *testing.T) {
	ctx := context.Background()
	var shas []string
	for range 2 {
		r, root := newRepo(t)
		// Both repos must start from the same commit for the hashes to be
		// comparable; the initial commit used the test environment's
		// identity with the current time, so rebuild it deterministically.
		run(t, root, "checkout", "-q", "--orphan", "fixed")
		if _, _, err := r.CommitAll(ctx, root, "base", testID); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(root, "new file.txt"), "content\n")
		os.Remove(filepath.Join(root, "a.txt"))
		sha, changed, err := r.CommitAll(ctx, root, "change", testID)
		if err != nil || !changed {
			t.Fatalf("CommitAll = %v, %v", changed, err)
		}
		again, changed, err := r.CommitAll(ctx, root, "nothing", testID)
		if err != nil || changed || again != sha {
			t.Fatalf("CommitAll with nothing to commit = %q, %v, %v; want %q, false", again, changed, err, sha)
		}
		shas = append(shas, sha)
	}
	if shas[0] != shas[1] {
		t.Errorf("same inputs gave different commits: %s and %s", shas[0], shas[1])
	}
	if _, _, err := (&Repo{}).CommitAll(ctx, t.TempDir(), "m", Identity{}); err == nil {
		t.Error("CommitAll without an identity succeeded")
	}
}

func TestChangedAndDirtyFiles(t *testing.T) {
	ctx := context.Background()
	r, root := newRepo(t)
	write(t, filepath.Join(root, "old name.txt"), "a long enough file to be detected as a rename\n")
	write(t, filepath.Join(root, "gone.txt"), "x")
	run(t, root, "add", "-A")
	run(t, root, "commit", "-q", "-m", "more")
	_, base, _ := r.Head(ctx)

	write(t, filepath.Join(root, "a.txt"), "changed\n")
	write(t, filepath.Join(root, `it's "new".go`), "package x\n")
	os.Remove(filepath.Join(root, "gone.txt"))
	run(t, root, "mv", "old name.txt", "new name.txt")
	dirty, err := r.DirtyFiles(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a.txt", `it's "new".go`, "new name.txt"}
	if !slices.Equal(dirty, want) {
		t.Errorf("DirtyFiles = %q, want %q", dirty, want)
	}
	if _, _, err := r.CommitAll(ctx, root, "edit", testID); err != nil {
		t.Fatal(err)
	}
	changed, err := r.ChangedFiles(ctx, root, base)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(changed, want) {
		t.Errorf("ChangedFiles = %q, want %q", changed, want)
	}
	tracked, err := r.TrackedFiles(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tracked, []string{".gitignore", "a.txt", `it's "new".go`, "new name.txt"}) {
		t.Errorf("TrackedFiles = %q", tracked)
	}
}

func TestTreeHashes(t *testing.T) {
	ctx := context.Background()
	r, root := newRepo(t)
	tree, err := r.TreeHash(ctx, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if want := run(t, root, "rev-parse", "HEAD^{tree}"); tree != want {
		t.Fatalf("TreeHash = %s, want %s", tree, want)
	}
	indexBefore, _ := os.ReadFile(filepath.Join(root, ".git", "index"))
	clean, err := r.WorkTreeHash(ctx, root)
	if err != nil || clean != tree {
		t.Fatalf("WorkTreeHash of a clean tree = %s, %v; want %s", clean, err, tree)
	}
	write(t, filepath.Join(root, "untracked.txt"), "u")
	dirty, err := r.WorkTreeHash(ctx, root)
	if err != nil || dirty == tree {
		t.Fatalf("WorkTreeHash with an untracked file = %s, %v; want a new hash", dirty, err)
	}
	// Neither sluice's own directory nor a temp dir inside the tree (the
	// index is staged outside it) changes the hash.
	write(t, filepath.Join(root, ".sluice", "cache", "x.json"), "{}")
	os.Remove(filepath.Join(root, ".gitignore"))
	t.Setenv("TMPDIR", filepath.Join(root, "tmp"))
	os.Mkdir(filepath.Join(root, "tmp"), 0o755)
	run(t, root, "add", ".gitignore")
	run(t, root, "commit", "-q", "-m", "no ignore file")
	tree, _ = r.TreeHash(ctx, "HEAD")
	dirty, _ = r.WorkTreeHash(ctx, root)
	if again, _ := r.WorkTreeHash(ctx, root); again != dirty {
		t.Errorf("WorkTreeHash is not stable: %s then %s", dirty, again)
	}
	files, err := r.DirtyFiles(ctx, root)
	if err != nil || !slices.Equal(files, []string{"untracked.txt"}) {
		t.Errorf("DirtyFiles = %q, %v; want only untracked.txt (not .sluice)", files, err)
	}
	indexBefore, _ = os.ReadFile(filepath.Join(root, ".git", "index"))
	if _, err := r.WorkTreeHash(ctx, root); err != nil {
		t.Fatal(err)
	}
	indexAfter, _ := os.ReadFile(filepath.Join(root, ".git", "index"))
	if string(indexBefore) != string(indexAfter) {
		t.Error("WorkTreeHash modified the user's index")
	}
	if ok, _ := r.IsClean(ctx, root); ok {
		t.Error("IsClean with an untracked file = true")
	}
	os.Remove(filepath.Join(root, "untracked.txt"))
	os.Remove(filepath.Join(root, "tmp"))
	if ok, err := r.IsClean(ctx, root); !ok || err != nil {
		t.Errorf("IsClean with only .sluice content = %v, %v", ok, err)
	}
}

func TestApply(t *testing.T) {
	ctx := context.Background()
	r, root := newRepo(t)
	_, base, _ := r.Head(ctx)
	integ := filepath.Join(root, ".sluice", "worktrees", "r", "_integration")
	if err := r.AddWorktree(ctx, integ, "sluice/r", base); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(integ, "feature.txt"), "feature\n")
	runSHA, _, err := r.CommitAll(ctx, integ, "feature", testID)
	if err != nil {
		t.Fatal(err)
	}

	// Dirty tracked file: refused, nothing touched.
	write(t, filepath.Join(root, "a.txt"), "dirty\n")
	before := snapshot(t, root)
	if _, err := r.Apply(ctx, "sluice/r"); !errors.Is(err, ErrDirty) || !strings.Contains(err.Error(), "commit or stash") {
		t.Fatalf("Apply on a dirty tree = %v, want ErrDirty saying to commit or stash", err)
	}
	after := snapshot(t, root)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("refused Apply changed %s", k)
		}
	}
	run(t, root, "checkout", "--", "a.txt")

	if _, err := r.Apply(ctx, "sluice/nope"); !errors.Is(err, ErrNoBranch) {
		t.Errorf("Apply of a missing run = %v, want ErrNoBranch", err)
	}

	// Fast-forward.
	res, err := r.Apply(ctx, "sluice/r")
	if err != nil {
		t.Fatal(err)
	}
	if !res.FastForward || res.To != runSHA || res.Branch != "main" || res.From != base {
		t.Errorf("Apply = %+v, want a fast-forward of main to %s", res, runSHA)
	}
	if b, err := os.ReadFile(filepath.Join(root, "feature.txt")); err != nil || string(b) != "feature\n" {
		t.Errorf("feature.txt after apply = %q, %v", b, err)
	}
	if res, err := r.Apply(ctx, "sluice/r"); err != nil || !res.UpToDate {
		t.Errorf("second Apply = %+v, %v; want up to date", res, err)
	}

	// The user moved on: a merge commit.
	write(t, filepath.Join(root, "mine.txt"), "mine\n")
	run(t, root, "add", "mine.txt")
	run(t, root, "commit", "-q", "-m", "mine")
	write(t, filepath.Join(integ, "more.txt"), "more\n")
	if _, _, err := r.CommitAll(ctx, integ, "more", testID); err != nil {
		t.Fatal(err)
	}
	res, err = r.Apply(ctx, "sluice/r")
	if err != nil {
		t.Fatal(err)
	}
	if res.FastForward || res.UpToDate {
		t.Errorf("Apply after the user committed = %+v, want a merge", res)
	}
	if parents := strings.Fields(run(t, root, "rev-list", "--parents", "-n1", "HEAD")); len(parents) != 3 {
		t.Errorf("HEAD after apply has parents %q, want a merge commit", parents[1:])
	}

	// A conflict is aborted and reported; the user's tree is as it was.
	write(t, filepath.Join(root, "a.txt"), "user\n")
	run(t, root, "commit", "-q", "-am", "user edit")
	write(t, filepath.Join(integ, "a.txt"), "run\n")
	if _, _, err := r.CommitAll(ctx, integ, "run edit", testID); err != nil {
		t.Fatal(err)
	}
	before = snapshot(t, root)
	_, err = r.Apply(ctx, "sluice/r")
	var ce *ConflictError
	if !errors.As(err, &ce) || !slices.Equal(ce.Files, []string{"a.txt"}) {
		t.Fatalf("conflicting Apply = %v, want a ConflictError on a.txt", err)
	}
	after = snapshot(t, root)
	// git merge --abort rewrites the index file with fresh stat data; its
	// entries (compared below via ls-files) are what must be unchanged.
	delete(before, ".git/index")
	for k, v := range before {
		if after[k] != v {
			t.Errorf("aborted Apply changed %s", k)
		}
	}
}

func TestCancelledContext(t *testing.T) {
	r, root := newRepo(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := r.Head(ctx)
	if err == nil {
		t.Fatal("Head with a cancelled context succeeded")
	}
	var ge *Error
	if !errors.As(err, &ge) || !strings.Contains(err.Error(), "git rev-parse") || ge.Dir != root {
		t.Errorf("error %v does not name the git command and directory", err)
	}
}

func TestAddDetachedWorktree(t *testing.T) {
	ctx := context.Background()
	r, root := newRepo(t)
	_, base, _ := r.Head(ctx)
	write(t, filepath.Join(root, "a.txt"), "later\n")
	run(t, root, "commit", "-q", "-am", "later")
	wt := filepath.Join(t.TempDir(), "base")
	if err := r.AddDetachedWorktree(ctx, wt, base); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "a.txt")); string(b) != "one\ntwo\nthree\n" {
		t.Errorf("detached worktree has a.txt = %q, want the base version", b)
	}
	if got := run(t, wt, "rev-parse", "HEAD"); got != base {
		t.Errorf("detached worktree at %s, want %s", got, base)
	}
	if err := r.RemoveWorktree(ctx, wt); err != nil {
		t.Fatal(err)
	}
	if err := r.AddDetachedWorktree(ctx, wt, "no-such-rev"); err == nil || !strings.Contains(err.Error(), "no-such-rev") {
		t.Errorf("AddDetachedWorktree(bad rev) = %v", err)
	}
}
