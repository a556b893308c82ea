// Package gitx is sluice's git layer. It shells out to the real git binary,
// serializes every operation that changes shared repository metadata (refs,
// worktree registrations, the object store's packs) behind one mutex per
// Repo, and never modifies the user's own branch, index or working tree
// except in Apply, which the user asks for explicitly.
package gitx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Sentinel errors callers branch on.
var (
	// ErrNotRepo means the directory is not inside a git working tree.
	ErrNotRepo = errors.New("not a git repository")
	// ErrNoCommits means HEAD does not name a commit yet.
	ErrNoCommits = errors.New("repository has no commits")
	// ErrNoBranch means a named branch does not exist.
	ErrNoBranch = errors.New("no such branch")
	// ErrBranchExists means a branch exists and points somewhere else.
	ErrBranchExists = errors.New("branch already exists")
	// ErrDirty means a working tree has uncommitted changes.
	ErrDirty = errors.New("working tree has uncommitted changes")
	// ErrDetached means HEAD is not on a branch.
	ErrDetached = errors.New("HEAD is detached")
)

// Error is a failed git invocation: the command, where it ran, and what git
// said on stderr.
type Error struct {
	Dir    string
	Args   []string
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		return fmt.Sprintf("git %s (in %s): %v", strings.Join(e.Args, " "), e.Dir, e.Err)
	}
	return fmt.Sprintf("git %s (in %s): %v: %s", strings.Join(e.Args, " "), e.Dir, e.Err, msg)
}

func (e *Error) Unwrap() error { return e.Err }

// ConflictError is returned by Merge and Apply when the merge stopped on
// conflicts. The merge has been aborted: the target worktree is clean again.
type ConflictError struct {
	Files  []string // conflicted paths, sorted
	Output string   // what git merge printed
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("merge conflict in %s", strings.Join(e.Files, ", "))
}

// Identity is the author and committer of the commits sluice makes. Fixing
// name, email and time makes a commit a pure function of its tree, parents and
// message, so two runs with the same inputs produce the same commit hashes.
type Identity struct {
	Name  string
	Email string
	When  time.Time
}

func (id Identity) env() ([]string, error) {
	if id.Name == "" || id.Email == "" {
		return nil, errors.New("git identity needs a name and an email")
	}
	// git's raw date format "<unix seconds> <+hhmm>" is parsed exactly, with
	// no locale or time-zone guessing.
	date := fmt.Sprintf("%d %s", id.When.Unix(), id.When.Format("-0700"))
	return []string{
		"GIT_AUTHOR_NAME=" + id.Name,
		"GIT_AUTHOR_EMAIL=" + id.Email,
		"GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=" + id.Name,
		"GIT_COMMITTER_EMAIL=" + id.Email,
		"GIT_COMMITTER_DATE=" + date,
	}, nil
}

// RunBranch is the integration branch of a run: sluice/<run-id>.
func RunBranch(runID string) string { return "sluice/" + runID }

// TaskBranch is the branch a task's worktree works on. It lives outside
// sluice/<run-id>/ because git cannot have both a ref and a directory of refs
// with the same name.
func TaskBranch(runID, taskID string) string { return "sluice-task/" + runID + "/" + taskID }

// Repo is a git repository opened at the top level of one of its working
// trees (the one the user works in).
type Repo struct {
	root string
	// mu serializes every operation that writes shared metadata: refs,
	// worktree registrations, merges. git's own *.lock files make a
	// concurrent writer fail instead of wait; one mutex makes it wait.
	mu sync.Mutex
}

// Open finds the top level of the working tree containing dir.
func Open(ctx context.Context, dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open git repository %s: %w", dir, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("open git repository %s: %w", dir, err)
	}
	out, err := git(ctx, abs, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%s: %w (run sluice inside a git working tree, or `git init` one): %v", abs, ErrNotRepo, err)
	}
	root := strings.TrimSpace(out)
	if root == "" {
		return nil, fmt.Errorf("%s: %w (it has no working tree)", abs, ErrNotRepo)
	}
	if _, err := git(ctx, root, nil, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err != nil {
		return nil, fmt.Errorf("%s: %w: make a first commit, then run sluice again", root, ErrNoCommits)
	}
	return &Repo{root: root}, nil
}

// Root is the top level of the working tree the Repo was opened in.
func (r *Repo) Root() string { return r.root }

// Head returns the user's current branch (empty when detached) and the
// commit HEAD names.
func (r *Repo) Head(ctx context.Context) (branch, sha string, err error) {
	sha, err = r.revParse(ctx, r.root, "HEAD^{commit}")
	if err != nil {
		return "", "", err
	}
	out, err := git(ctx, r.root, nil, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) && exitCode(ge.Err) == 1 {
			return "", sha, nil // detached
		}
		return "", "", err
	}
	return strings.TrimSpace(out), sha, nil
}

// BranchSHA returns the commit a local branch points to, or ErrNoBranch.
func (r *Repo) BranchSHA(ctx context.Context, name string) (string, error) {
	out, err := git(ctx, r.root, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+name+"^{commit}")
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) && exitCode(ge.Err) == 1 {
			return "", fmt.Errorf("branch %q: %w", name, ErrNoBranch)
		}
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// CreateBranch creates branch name at fromSHA. It succeeds without change if
// the branch already points there and returns ErrBranchExists if it points
// elsewhere.
func (r *Repo) CreateBranch(ctx context.Context, name, fromSHA string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.createBranchLocked(ctx, name, fromSHA)
}

func (r *Repo) createBranchLocked(ctx context.Context, name, fromSHA string) error {
	want, err := r.revParse(ctx, r.root, fromSHA+"^{commit}")
	if err != nil {
		return fmt.Errorf("create branch %q: %w", name, err)
	}
	have, err := r.BranchSHA(ctx, name)
	switch {
	case err == nil && have == want:
		return nil
	case err == nil:
		return fmt.Errorf("create branch %q at %s: %w at %s", name, short(want), ErrBranchExists, short(have))
	case !errors.Is(err, ErrNoBranch):
		return err
	}
	_, err = git(ctx, r.root, nil, "branch", "--no-track", name, want)
	return err
}

// DeleteBranch force-deletes a local branch; a missing branch is not an error.
func (r *Repo) DeleteBranch(ctx context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deleteBranchLocked(ctx, name)
}

func (r *Repo) deleteBranchLocked(ctx context.Context, name string) error {
	if _, err := r.BranchSHA(ctx, name); errors.Is(err, ErrNoBranch) {
		return nil
	}
	_, err := git(ctx, r.root, nil, "branch", "-D", name)
	return err
}

type worktree struct {
	path     string
	branch   string // short name; empty when detached
	prunable bool
}

func (r *Repo) worktrees(ctx context.Context) ([]worktree, error) {
	out, err := git(ctx, r.root, nil, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, err
	}
	var list []worktree
	var cur *worktree
	for _, field := range strings.Split(out, "\x00") {
		switch {
		case strings.HasPrefix(field, "worktree "):
			list = append(list, worktree{path: strings.TrimPrefix(field, "worktree ")})
			cur = &list[len(list)-1]
		case cur == nil:
		case strings.HasPrefix(field, "branch "):
			cur.branch = strings.TrimPrefix(strings.TrimPrefix(field, "branch "), "refs/heads/")
		case field == "prunable" || strings.HasPrefix(field, "prunable "):
			cur.prunable = true
		}
	}
	return list, nil
}

// samePath compares two paths after resolving symlinks where possible (a
// temp dir under a symlinked /tmp is registered by its resolved path).
func samePath(a, b string) bool {
	return canonical(a) == canonical(b)
}

func canonical(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	// The path may not exist yet: resolve its parent.
	dir, base := filepath.Split(p)
	if r, err := filepath.EvalSymlinks(filepath.Clean(dir)); err == nil {
		return filepath.Join(r, base)
	}
	return p
}

// AddWorktree checks branch out in a new worktree at path, creating the
// branch at baseSHA if it does not exist. It is idempotent so a run can
// resume after a crash: a worktree already registered at path for branch is
// reused as it is; a registration whose directory is gone is pruned; a
// directory at path that git does not know as a worktree (a crash between
// mkdir and registration) is removed and the worktree added again. An
// existing branch is reused only if baseSHA is one of its ancestors, so a
// stale branch from elsewhere is never silently adopted.
func (r *Repo) AddWorktree(ctx context.Context, path, branch, baseSHA string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("add worktree %s: %w", path, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()

	list, err := r.worktrees(ctx)
	if err != nil {
		return fmt.Errorf("add worktree %s: %w", abs, err)
	}
	for _, wt := range list {
		if !samePath(wt.path, abs) {
			continue
		}
		if !wt.prunable && isWorktreeDir(abs) {
			if wt.branch != branch {
				return fmt.Errorf("add worktree %s for branch %q: the directory is already a worktree on branch %q; remove it first", abs, branch, wt.branch)
			}
			return nil
		}
		// Registered but the directory is gone or broken: forget it.
		if err := os.RemoveAll(abs); err != nil {
			return fmt.Errorf("add worktree %s: remove broken worktree directory: %w", abs, err)
		}
		if _, err := git(ctx, r.root, nil, "worktree", "prune"); err != nil {
			return fmt.Errorf("add worktree %s: %w", abs, err)
		}
	}
	if _, err := os.Stat(abs); err == nil {
		// Present on disk but unknown to git: left over from an interrupted
		// add. Its contents belong to no commit, so it is safe to discard.
		if err := os.RemoveAll(abs); err != nil {
			return fmt.Errorf("add worktree %s: remove unregistered directory: %w", abs, err)
		}
		if _, err := git(ctx, r.root, nil, "worktree", "prune"); err != nil {
			return fmt.Errorf("add worktree %s: %w", abs, err)
		}
	}

	if _, err := r.BranchSHA(ctx, branch); err == nil {
		ok, err := r.isAncestor(ctx, baseSHA, "refs/heads/"+branch)
		if err != nil {
			return fmt.Errorf("add worktree %s: %w", abs, err)
		}
		if !ok {
			return fmt.Errorf("add worktree %s: branch %q exists and does not contain %s; delete it or choose another name: %w", abs, branch, short(baseSHA), ErrBranchExists)
		}
	} else if !errors.Is(err, ErrNoBranch) {
		return err
	} else if err := r.createBranchLocked(ctx, branch, baseSHA); err != nil {
		return fmt.Errorf("add worktree %s: %w", abs, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return fmt.Errorf("add worktree %s: %w", abs, err)
	}
	if _, err := git(ctx, r.root, nil, "worktree", "add", "--quiet", abs, branch); err != nil {
		return fmt.Errorf("add worktree %s: %w", abs, err)
	}
	return nil
}

func isWorktreeDir(path string) bool {
	fi, err := os.Stat(filepath.Join(path, ".git"))
	return err == nil && !fi.IsDir()
}

// AddDetachedWorktree checks rev out, detached, in a new worktree at path
// (which must not exist): a read-only view of another commit, such as the
// base a T0 baseline is evaluated on. Remove it with RemoveWorktree.
func (r *Repo) AddDetachedWorktree(ctx context.Context, path, rev string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("add worktree %s: %w", path, err)
	}
	sha, err := r.revParse(ctx, r.root, rev+"^{commit}")
	if err != nil {
		return fmt.Errorf("add worktree %s at %s: %w", abs, rev, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := git(ctx, r.root, nil, "worktree", "add", "--quiet", "--detach", abs, sha); err != nil {
		return fmt.Errorf("add worktree %s at %s: %w", abs, rev, err)
	}
	return nil
}

// RemoveWorktree removes the worktree at path, discarding its uncommitted
// changes. A path that is not a worktree (or does not exist) is not an
// error. The worktree's branch is kept; see DeleteBranch.
func (r *Repo) RemoveWorktree(ctx context.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("remove worktree %s: %w", path, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	list, err := r.worktrees(ctx)
	if err != nil {
		return fmt.Errorf("remove worktree %s: %w", abs, err)
	}
	for _, wt := range list {
		if samePath(wt.path, abs) && !wt.prunable {
			// Twice --force: also removes a locked worktree.
			if _, err := git(ctx, r.root, nil, "worktree", "remove", "--force", "--force", wt.path); err != nil {
				return fmt.Errorf("remove worktree %s: %w", abs, err)
			}
			return nil
		}
	}
	if err := os.RemoveAll(abs); err != nil {
		return fmt.Errorf("remove worktree %s: %w", abs, err)
	}
	if _, err := git(ctx, r.root, nil, "worktree", "prune"); err != nil {
		return fmt.Errorf("remove worktree %s: %w", abs, err)
	}
	return nil
}

// CommitAll stages every change in worktree (including new and deleted
// files) and commits it as id with message. changed is false, and sha is the
// unchanged HEAD, when there was nothing to commit. Hooks do not run: the
// quality gates are sluice's checks, and hooks would make commits depend on
// the machine.
func (r *Repo) CommitAll(ctx context.Context, worktree, message string, id Identity) (sha string, changed bool, err error) {
	env, err := id.env()
	if err != nil {
		return "", false, fmt.Errorf("commit in %s: %w", worktree, err)
	}
	// Staging writes only this worktree's private index and loose objects
	// (written atomically by git), so it runs outside the mutex.
	if _, err := git(ctx, worktree, nil, "add", "--all"); err != nil {
		return "", false, fmt.Errorf("commit in %s: %w", worktree, err)
	}
	staged, err := exits1(git(ctx, worktree, nil, "diff", "--cached", "--quiet"))
	if err != nil {
		return "", false, fmt.Errorf("commit in %s: %w", worktree, err)
	}
	if !staged {
		head, err := r.revParse(ctx, worktree, "HEAD")
		return head, false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := git(ctx, worktree, env, "commit", "--quiet", "--no-verify", "--cleanup=verbatim", "-m", message); err != nil {
		return "", false, fmt.Errorf("commit in %s: %w", worktree, err)
	}
	sha, err = r.revParse(ctx, worktree, "HEAD")
	return sha, true, err
}

// ChangedFiles lists the files added, modified, renamed or type-changed
// between baseSHA and the worktree's HEAD (deleted files excluded), sorted,
// relative to the worktree root.
func (r *Repo) ChangedFiles(ctx context.Context, worktree, baseSHA string) ([]string, error) {
	out, err := git(ctx, worktree, nil, "diff", "--name-only", "-z", "--no-renames", "--diff-filter=ACMT", baseSHA, "HEAD", "--")
	if err != nil {
		return nil, fmt.Errorf("changed files in %s since %s: %w", worktree, short(baseSHA), err)
	}
	return splitZ(out), nil
}

// DirtyFiles lists the files in worktree that differ from its HEAD: modified
// or added tracked files and untracked files that are not ignored; deleted
// files excluded; sorted.
func (r *Repo) DirtyFiles(ctx context.Context, worktree string) ([]string, error) {
	tracked, err := git(ctx, worktree, nil, "diff", "HEAD", "--name-only", "-z", "--no-renames", "--diff-filter=ACMT", "--")
	if err != nil {
		return nil, fmt.Errorf("changed files in %s: %w", worktree, err)
	}
	untracked, err := git(ctx, worktree, nil, "ls-files", "-z", "--others", "--exclude-standard", "--", ".", excludeSluice)
	if err != nil {
		return nil, fmt.Errorf("untracked files in %s: %w", worktree, err)
	}
	return dedupSorted(append(splitZ(tracked), splitZ(untracked)...)), nil
}

// TrackedFiles lists the files tracked at the worktree's index, sorted.
func (r *Repo) TrackedFiles(ctx context.Context, worktree string) ([]string, error) {
	out, err := git(ctx, worktree, nil, "ls-files", "-z")
	if err != nil {
		return nil, fmt.Errorf("tracked files in %s: %w", worktree, err)
	}
	return dedupSorted(splitZ(out)), nil
}

// TreeHash returns the hash of rev's tree.
func (r *Repo) TreeHash(ctx context.Context, rev string) (string, error) {
	return r.revParse(ctx, r.root, rev+"^{tree}")
}

// WorkTreeHash returns the hash of the tree the worktree's files would form
// if everything (tracked and untracked, not ignored, outside .sluice) were
// committed, without touching the worktree's index: it stages into a
// temporary index kept in the worktree's git directory (a temporary file
// elsewhere might lie inside the worktree and end up in its own tree). It
// is a cache key for the worktree's current content.
func (r *Repo) WorkTreeHash(ctx context.Context, worktree string) (string, error) {
	gitDir, err := git(ctx, worktree, nil, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return "", fmt.Errorf("tree hash of %s: %w", worktree, err)
	}
	tmp, err := os.CreateTemp(strings.TrimSpace(gitDir), "sluice-index-*")
	if err != nil {
		return "", fmt.Errorf("tree hash of %s: %w", worktree, err)
	}
	name := tmp.Name()
	tmp.Close()
	os.Remove(name) // git wants to create the index itself
	defer os.Remove(name)
	env := []string{"GIT_INDEX_FILE=" + name}
	if _, err := git(ctx, worktree, env, "read-tree", "HEAD"); err != nil {
		return "", fmt.Errorf("tree hash of %s: %w", worktree, err)
	}
	if _, err := git(ctx, worktree, env, "add", "--all"); err != nil {
		return "", fmt.Errorf("tree hash of %s: %w", worktree, err)
	}
	// An exclude pathspec on add fails when .sluice is also ignored, so
	// drop it from the temporary index afterwards instead.
	if _, err := git(ctx, worktree, env, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", ".sluice"); err != nil {
		return "", fmt.Errorf("tree hash of %s: %w", worktree, err)
	}
	out, err := git(ctx, worktree, env, "write-tree")
	if err != nil {
		return "", fmt.Errorf("tree hash of %s: %w", worktree, err)
	}
	return strings.TrimSpace(out), nil
}

// excludeSluice is a pathspec leaving out sluice's own directory (runs,
// caches, worktrees) when a repository does not ignore it.
const excludeSluice = ":(exclude,top).sluice"

// IsClean reports whether worktree has no staged or unstaged changes and no
// untracked, non-ignored files. sluice's own .sluice directory is ignored.
func (r *Repo) IsClean(ctx context.Context, worktree string) (bool, error) {
	out, err := git(ctx, worktree, nil, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", ".", excludeSluice)
	if err != nil {
		return false, fmt.Errorf("status of %s: %w", worktree, err)
	}
	return out == "", nil
}

func (r *Repo) trackedClean(ctx context.Context, worktree string) (bool, error) {
	out, err := git(ctx, worktree, nil, "status", "--porcelain=v1", "-z", "--untracked-files=no")
	if err != nil {
		return false, fmt.Errorf("status of %s: %w", worktree, err)
	}
	return out == "", nil
}

// Merge merges taskBranch into the branch checked out in integrationWorktree
// with a merge commit (--no-ff: each task is one merge commit whose second
// parent is the task's branch, so history shows what each task contributed
// and a task can be reverted as a unit). On conflict it aborts the merge,
// leaving the worktree clean, and returns *ConflictError.
func (r *Repo) Merge(ctx context.Context, integrationWorktree, taskBranch, message string, id Identity) (string, error) {
	env, err := id.env()
	if err != nil {
		return "", fmt.Errorf("merge %s: %w", taskBranch, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.mergeLocked(ctx, integrationWorktree, env, "--no-ff", "--no-verify", "-m", message, "refs/heads/"+taskBranch); err != nil {
		return "", fmt.Errorf("merge %s into %s: %w", taskBranch, integrationWorktree, err)
	}
	return r.revParse(ctx, integrationWorktree, "HEAD")
}

func (r *Repo) mergeLocked(ctx context.Context, dir string, env []string, args ...string) error {
	out, err := gitCombined(ctx, dir, env, append([]string{"merge"}, args...)...)
	if err == nil {
		return nil
	}
	// Unmerged paths mean a conflict; anything else is a refusal (dirty
	// tree, unknown branch) that left no merge in progress.
	files, lerr := git(ctx, dir, nil, "diff", "--name-only", "-z", "--diff-filter=U")
	if lerr == nil && files != "" {
		if _, aerr := git(ctx, dir, nil, "merge", "--abort"); aerr != nil {
			return fmt.Errorf("abort conflicted merge: %w", aerr)
		}
		return &ConflictError{Files: dedupSorted(splitZ(files)), Output: out}
	}
	if _, serr := git(ctx, dir, nil, "rev-parse", "--verify", "--quiet", "MERGE_HEAD"); serr == nil {
		if _, aerr := git(ctx, dir, nil, "merge", "--abort"); aerr != nil {
			return fmt.Errorf("%w; abort merge: %v", err, aerr)
		}
	}
	return err
}

// Applied says what Apply did.
type Applied struct {
	Branch      string // the user's branch that moved
	From, To    string // its commit before and after
	FastForward bool   // true: moved without a merge commit
	UpToDate    bool   // true: the branch already contained the run
}

// Apply brings runBranch into the user's current branch: a fast-forward when
// the current branch has not moved since the run forked, otherwise a merge
// commit made with the user's own git identity. It refuses when tracked files
// have uncommitted changes or HEAD is detached. On conflict the merge is
// aborted and *ConflictError returned, leaving the user's tree as it was.
func (r *Repo) Apply(ctx context.Context, runBranch string) (Applied, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	runSHA, err := r.BranchSHA(ctx, runBranch)
	if err != nil {
		return Applied{}, fmt.Errorf("apply %s: %w", runBranch, err)
	}
	branch, head, err := r.Head(ctx)
	if err != nil {
		return Applied{}, fmt.Errorf("apply %s: %w", runBranch, err)
	}
	if branch == "" {
		return Applied{}, fmt.Errorf("apply %s: %w: check out the branch to apply the run to, then run sluice apply again", runBranch, ErrDetached)
	}
	clean, err := r.trackedClean(ctx, r.root)
	if err != nil {
		return Applied{}, fmt.Errorf("apply %s: %w", runBranch, err)
	}
	if !clean {
		return Applied{}, fmt.Errorf("apply %s onto %s: %w; commit or stash them first, then run sluice apply again", runBranch, branch, ErrDirty)
	}
	res := Applied{Branch: branch, From: head}
	contained, err := r.isAncestor(ctx, runSHA, head)
	if err != nil {
		return Applied{}, fmt.Errorf("apply %s: %w", runBranch, err)
	}
	if contained {
		res.To, res.UpToDate = head, true
		return res, nil
	}
	ff, err := r.isAncestor(ctx, head, runSHA)
	if err != nil {
		return Applied{}, fmt.Errorf("apply %s: %w", runBranch, err)
	}
	if ff {
		res.FastForward = true
		if err := r.mergeLocked(ctx, r.root, nil, "--ff-only", "--quiet", runSHA); err != nil {
			return Applied{}, fmt.Errorf("apply %s onto %s: %w", runBranch, branch, err)
		}
	} else {
		msg := fmt.Sprintf("Merge sluice run branch %s", runBranch)
		if err := r.mergeLocked(ctx, r.root, nil, "--no-ff", "--quiet", "-m", msg, "refs/heads/"+runBranch); err != nil {
			return Applied{}, fmt.Errorf("apply %s onto %s: %w", runBranch, branch, err)
		}
	}
	res.To, err = r.revParse(ctx, r.root, "HEAD")
	return res, err
}

// isAncestor reports whether commit a is an ancestor of (or equal to) b.
func (r *Repo) isAncestor(ctx context.Context, a, b string) (bool, error) {
	return exits1Inverse(git(ctx, r.root, nil, "merge-base", "--is-ancestor", a, b))
}

// exits1 maps a command that exits 1 to report "yes" (git diff --quiet
// style) to a boolean; any other failure stays an error.
func exits1(_ string, err error) (bool, error) {
	if err == nil {
		return false, nil
	}
	var ge *Error
	if errors.As(err, &ge) && exitCode(ge.Err) == 1 {
		return true, nil
	}
	return false, err
}

// exits1Inverse is exits1 for commands whose exit 0 means "yes".
func exits1Inverse(out string, err error) (bool, error) {
	no, err := exits1(out, err)
	return !no && err == nil, err
}

func (r *Repo) revParse(ctx context.Context, dir, rev string) (string, error) {
	out, err := git(ctx, dir, nil, "rev-parse", "--verify", "--quiet", rev)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", rev, err)
	}
	return strings.TrimSpace(out), nil
}

// baseConfig pins settings that would make sluice's git operations depend on
// the user's configuration or race with each other: no hooks, no signing
// prompts, no background gc during a run, no reused conflict resolutions.
var baseConfig = []string{
	"-c", "core.hooksPath=" + os.DevNull,
	"-c", "commit.gpgSign=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
	"-c", "rerere.enabled=false",
	"-c", "merge.autoStash=false",
	"-c", "core.quotePath=false",
}

func command(ctx context.Context, dir string, env []string, args []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append(append([]string{}, baseConfig...), args...)...)
	cmd.Dir = dir
	// GIT_OPTIONAL_LOCKS=0 stops read commands (status, diff) from
	// refreshing and rewriting an index as a side effect.
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0", "GIT_MERGE_AUTOEDIT=no", "LC_ALL=C")
	cmd.Env = append(cmd.Env, env...)
	// On cancellation, interrupt rather than kill: git removes its lock
	// files on SIGINT, so a cancelled run leaves no stale .lock behind.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// git runs git in dir and returns stdout; a failure is an *Error carrying
// stderr.
func git(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	return gitInput(ctx, dir, env, nil, args...)
}

// gitCombined runs git with stdout and stderr interleaved, for commands
// whose human-readable report spans both (merge).
func gitCombined(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := command(ctx, dir, env, args)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), &Error{Dir: dir, Args: args, Stderr: out.String(), Err: err}
	}
	return out.String(), nil
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

func splitZ(s string) []string {
	var out []string
	for _, f := range strings.Split(s, "\x00") {
		if f != "" {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

func dedupSorted(in []string) []string {
	sort.Strings(in)
	out := in[:0]
	for i, s := range in {
		if i == 0 || s != in[i-1] {
			out = append(out, s)
		}
	}
	return out
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
