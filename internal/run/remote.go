package run

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluice-run/sluice/internal/engine/local"
	"github.com/sluice-run/sluice/internal/gitx"
	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/store"
)

// remoteSync carries a run's branches and files between clones through a
// git remote, for runs started with --remote: workers then need a clone
// of the repository, not the starter's path. Everything a later action
// needs travels as git refs on the remote:
//
//   - refs/heads/sluice/<run>: the run branch; the starter pushes it, a
//     worker pushes each merge (fast-forward only, merges are serialized);
//   - refs/heads/sluice/<run>-tasks/<task>-a<n>: a task attempt's work,
//     committed and pushed when its executor finishes;
//   - refs/sluice/<run>/files/<owner>: the run files one clone wrote
//     (meta.json, artifacts, transcripts), as a commit of their own.
//
// A worker fetches before each action and publishes after it; the starter
// collects the run branch and every clone's files when the workflow ends.
type remoteSync struct {
	repo   *gitx.Repo
	remote string
	runID  string
	// owner names this clone's files ref.
	owner string
	now   func() time.Time
	// mu keeps one files push at a time per clone.
	mu sync.Mutex
	// pulled names the files this clone took from others: it publishes
	// only its own, so an old copy never wins over a newer one. It is
	// kept in pulledFile in the clone's copy of the run, so a worker that
	// restarts knows them too. Guarded by mu.
	pulled map[string]bool
	// worktrees holds a lock per task worktree, under locksMu.
	locksMu   sync.Mutex
	worktrees map[string]*sync.Mutex
	// integration is held by the actions that move or read this clone's
	// run-branch worktree, so catching it up never pulls it from under a
	// merge running beside it.
	integration sync.Mutex
}

func (r *remoteSync) branch() string { return loop.IntegrationBranch(r.runID) }

// tracking is the remote-tracking ref of a branch on the remote.
func (r *remoteSync) tracking(branch string) string {
	return "refs/remotes/" + r.remote + "/" + branch
}

// filesPrefix is where the clones' files refs live on the remote, and
// where this clone makes its own before pushing it.
func (r *remoteSync) filesPrefix() string { return "refs/sluice/" + r.runID + "/files/" }

// fetchedFiles is where a fetch puts the remote's files refs: apart from
// this clone's own, which a fetch (forced, pruning) must never move
// between its commit and its push.
func (r *remoteSync) fetchedFiles() string {
	return "refs/sluice-fetched/" + r.remote + "/" + r.runID + "/files/"
}

// fetch brings the run branch, every task branch and every clone's files
// ref from the remote.
func (r *remoteSync) fetch(ctx context.Context) error {
	b := r.branch()
	err := r.repo.Fetch(ctx, r.remote,
		"+refs/heads/"+b+":"+r.tracking(b),
		"+refs/heads/"+b+"-tasks/*:"+r.tracking(b+"-tasks/*"),
		"+"+r.filesPrefix()+"*:"+r.fetchedFiles()+"*")
	if err != nil {
		return fmt.Errorf("bring run %s from the git remote %s (was the run started with --remote, and can this clone reach the remote?): %w", r.runID, r.remote, err)
	}
	return nil
}

// head is the run branch on the remote, as last fetched.
func (r *remoteSync) head(ctx context.Context) (string, error) {
	sha, err := r.repo.RefSHA(ctx, r.tracking(r.branch()))
	if err == nil && sha == "" {
		err = fmt.Errorf("the git remote %s has no branch %s", r.remote, r.branch())
	}
	return sha, err
}

// catchUp moves the run branch, checked out in worktree, to the remote's.
func (r *remoteSync) catchUp(ctx context.Context, worktree string) error {
	want, err := r.head(ctx)
	if err != nil {
		return err
	}
	have, err := r.repo.RefSHA(ctx, "refs/heads/"+r.branch())
	if err != nil || have == want {
		return err
	}
	return r.repo.ResetHard(ctx, worktree, want)
}

// checkoutTask makes path a worktree of the task attempt's branch at the
// remote's commit of it, or at base when nothing was pushed yet.
func (r *remoteSync) checkoutTask(ctx context.Context, path, branch, base string) error {
	want, err := r.repo.RefSHA(ctx, r.tracking(branch))
	if err != nil {
		return err
	}
	if want == "" {
		want = base
	}
	if want == "" {
		return fmt.Errorf("task branch %s: neither the remote nor the run's state says where it starts", branch)
	}
	if _, err := os.Stat(filepath.Join(path, ".git")); err != nil {
		// Not checked out here: the branch (if this clone has one, from an
		// earlier action) can be moved freely.
		if err := r.repo.SetBranch(ctx, branch, want); err != nil {
			return err
		}
	}
	if err := r.repo.AddWorktree(ctx, path, branch, want); err != nil {
		return err
	}
	return r.repo.ResetHard(ctx, path, want)
}

// push publishes local branches (refspecs) on the remote.
func (r *remoteSync) push(ctx context.Context, refspecs ...string) error {
	if err := r.repo.Push(ctx, r.remote, refspecs...); err != nil {
		return fmt.Errorf("publish run %s on the git remote %s: %w", r.runID, r.remote, err)
	}
	return nil
}

// runFiles are the files of a run directory that travel: meta.json, the
// artifacts and the transcripts (never the journal, which only the
// starter writes).
func runFiles(dir string) ([]string, error) {
	var names []string
	if _, err := os.Stat(filepath.Join(dir, metaFile)); err == nil {
		names = append(names, metaFile)
	}
	for _, sub := range []string{"artifacts", "transcripts"} {
		err := filepath.WalkDir(filepath.Join(dir, sub), func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".tmp-") {
				return err
			}
			rel, err := filepath.Rel(dir, p)
			names = append(names, filepath.ToSlash(rel))
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("list the run files in %s: %w", dir, err)
		}
	}
	sort.Strings(names)
	return names, nil
}

// pushFiles publishes the run files of dir as this clone's files ref.
func (r *remoteSync) pushFiles(ctx context.Context, dir string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	all, err := runFiles(dir)
	if err != nil {
		return err
	}
	r.loadPulled(dir)
	var names []string
	for _, n := range all {
		if !r.pulled[n] {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil
	}
	ref := r.filesPrefix() + r.owner
	id := gitx.Identity{Name: "sluice", Email: "sluice@localhost", When: r.now()}
	if _, err := r.repo.CommitFiles(ctx, ref, dir, names, "run "+r.runID+": files of "+r.owner, id); err != nil {
		return err
	}
	return r.push(ctx, "+"+ref+":"+ref)
}

// pullFiles writes the run files of every clone's files ref into run, the
// oldest ref first. A worker only adds files it lacks; the starter
// (overwrite) takes every artifact and transcript, a later publication
// winning, but keeps its own meta.json.
func (r *remoteSync) pullFiles(ctx context.Context, run *store.Run, overwrite bool) error {
	dir := run.Dir()
	refs, err := r.repo.Refs(ctx, r.fetchedFiles())
	if err != nil {
		return err
	}
	for _, ref := range refs {
		if !overwrite && ref.Name == r.fetchedFiles()+r.owner {
			continue // this clone's own files
		}
		var bad string
		files, err := r.repo.Files(ctx, ref.SHA, func(name string) bool {
			if !travels(name) {
				bad = name
				return false
			}
			_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name)))
			return err != nil || (overwrite && name != metaFile)
		})
		if err != nil {
			return err
		}
		if bad != "" {
			name := r.filesPrefix() + strings.TrimPrefix(ref.Name, r.fetchedFiles())
			return fmt.Errorf("%s on the git remote %s holds %q, which is not a run file; remove the ref with `git push %s :%s`", name, r.remote, bad, r.remote, name)
		}
		for name, data := range files {
			if err := run.WriteFile(filepath.FromSlash(name), data); err != nil {
				return err
			}
			if !overwrite {
				if err := r.markPulled(dir, name); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// pulledFile lists, in a worker's copy of a run, the files it took from
// other clones, a name a line.
const pulledFile = ".pulled"

// loadPulled reads the pulled files' names once; mu is held.
func (r *remoteSync) loadPulled(dir string) {
	if r.pulled != nil {
		return
	}
	r.pulled = map[string]bool{}
	data, _ := os.ReadFile(filepath.Join(dir, pulledFile))
	for _, name := range strings.Split(string(data), "\n") {
		if name != "" {
			r.pulled[name] = true
		}
	}
}

// markPulled records that name came from another clone.
func (r *remoteSync) markPulled(dir, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loadPulled(dir)
	if r.pulled[name] {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(dir, pulledFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = f.WriteString(name + "\n")
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		return fmt.Errorf("record that %s came from another worker: %w", name, err)
	}
	r.pulled[name] = true
	return nil
}

// travels says whether a path may be written into a run directory from a
// remote: the run files, and nothing outside the directory.
func travels(name string) bool {
	// Git accepts "." and ".." tree entries, so a name is taken only when
	// it is already clean: "artifacts/../log.jsonl" must not reach the
	// journal.
	if path.Clean(name) != name || !filepath.IsLocal(filepath.FromSlash(name)) {
		return false
	}
	for _, part := range strings.Split(name, "/") {
		if part == "." || part == ".." || part == "" {
			return false
		}
	}
	return name == metaFile || strings.HasPrefix(name, "artifacts/") || strings.HasPrefix(name, "transcripts/")
}

// publishRun puts a starting (or resuming) run on the remote: the run
// branch, unless the remote is ahead (a resumed run's workers pushed
// merges), in which case the local one catches up; and meta.json.
func (r *remoteSync) publishRun(ctx context.Context, integration, runDir string) error {
	remote, err := r.repo.RemoteRef(ctx, r.remote, "refs/heads/"+r.branch())
	if err != nil {
		return fmt.Errorf("run %s: %w", r.runID, err)
	}
	if remote == "" {
		if err := r.push(ctx, "refs/heads/"+r.branch()+":refs/heads/"+r.branch()); err != nil {
			return err
		}
	} else {
		if err := r.fetch(ctx); err != nil {
			return err
		}
		if err := r.catchUp(ctx, integration); err != nil {
			return err
		}
	}
	return r.pushFiles(ctx, runDir)
}

// collect brings what the workers did into the starter's repository: the
// run branch and every clone's artifacts and transcripts.
func (r *remoteSync) collect(ctx context.Context, integration string, run *store.Run) error {
	if err := r.fetch(ctx); err != nil {
		return err
	}
	if err := r.catchUp(ctx, integration); err != nil {
		return fmt.Errorf("bring the run branch of run %s from the git remote %s: %w", r.runID, r.remote, err)
	}
	return r.pullFiles(ctx, run, true)
}

// prune deletes from the remote what only the run's workers needed, once
// the starter has collected it: the task branches and the files refs. The
// run branch stays. It is tidying: a failure leaves refs behind, no more.
func (r *remoteSync) prune(ctx context.Context) {
	var gone []string
	// The remote's names of what this clone fetched.
	for fetched, remote := range map[string]string{
		r.fetchedFiles():                   r.filesPrefix(),
		r.tracking(r.branch() + "-tasks/"): "refs/heads/" + r.branch() + "-tasks/",
	} {
		refs, err := r.repo.Refs(ctx, fetched)
		if err != nil {
			return
		}
		for _, ref := range refs {
			gone = append(gone, ":"+remote+strings.TrimPrefix(ref.Name, fetched))
		}
	}
	if len(gone) > 0 && r.push(ctx, gone...) == nil {
		_ = r.fetch(ctx) // prunes this clone's copies of them
	}
}

// syncedExecutor runs actions in a clone: before each it fetches the run
// and brings the worktree the action works in to the remote's state; after
// it, it publishes what the action made. Only the reducer's view of the
// run crosses machines, so each worker works in its own paths.
type syncedExecutor struct {
	// x writes into this clone's copy of the run directory (x.Run).
	x    *local.Executor
	sync *remoteSync
}

// Execute is TryExecute for callers that cannot retry: a failure to sync
// fails the action.
func (e *syncedExecutor) Execute(ctx context.Context, s loop.State, a loop.Action) loop.Event {
	ev, err := e.TryExecute(ctx, s, a)
	if err == nil {
		return ev
	}
	if a.Type == loop.ActDelegate {
		return loop.Event{Type: loop.EvDelegationFail, Reason: "sync_failed", Detail: err.Error(), Usage: ev.Usage}
	}
	return loop.Event{Type: loop.EvActionError, Detail: err.Error()}
}

// TryExecute runs a; an error means the clone could not be brought up to
// date or could not publish the result, and the action should run again
// (here or on another worker) rather than count as the attempt's failure.
func (e *syncedExecutor) TryExecute(ctx context.Context, s loop.State, a loop.Action) (loop.Event, error) {
	r := e.sync
	if err := r.fetch(ctx); err != nil {
		return loop.Event{}, err
	}
	if err := r.pullFiles(ctx, e.x.Run, false); err != nil {
		return loop.Event{}, err
	}
	path := e.x.TaskWorktree(a.TaskID, a.Attempt)
	if a.TaskID == "" || a.Type == loop.ActWorktree || a.Type == loop.ActMerge {
		r.integration.Lock()
		defer r.integration.Unlock()
	}
	if a.TaskID != "" {
		// Two tries of one action can meet on a worker (one Temporal
		// gave up on, still running): they take turns in the worktree.
		defer r.lockWorktree(path)()
	}
	switch {
	case a.TaskID == "", a.Type == loop.ActWorktree:
		// Research, planning, baseline, final verification and points read
		// the run branch; a task forks from it.
		if err := r.catchUp(ctx, e.x.Integration); err != nil {
			return loop.Event{}, err
		}
	default:
		t := s.Tasks[a.TaskID]
		if t == nil {
			return loop.Event{}, fmt.Errorf("action %s: the run's state has no task %s", a.ID, a.TaskID)
		}
		if a.Type == loop.ActMerge {
			if err := r.catchUp(ctx, e.x.Integration); err != nil {
				return loop.Event{}, err
			}
		}
		if err := r.checkoutTask(ctx, path, a.Branch, t.Base); err != nil {
			return loop.Event{}, err
		}
		// The state names the worktree of the worker that made it.
		s = withWorktree(s, a.TaskID, path)
	}
	ev := e.x.Execute(ctx, s, a)
	// Publishing is tried a few times before the action is given up: a
	// completed delegation run again costs its tokens twice.
	switch {
	case a.Role == loop.RoleExecutor && ev.Type == loop.EvDelegationDone:
		// The executor's edits must outlive this clone: commit them as the
		// gates stage would, and publish the task branch.
		if _, _, err := e.x.Repo.CommitAll(ctx, path, local.TaskCommitMessage(s, a.TaskID, a.Attempt), e.x.Identity); err != nil {
			return ev, err
		}
		if err := retry(ctx, func() error { return r.push(ctx, "+refs/heads/"+a.Branch+":refs/heads/"+a.Branch) }); err != nil {
			return ev, err
		}
	case a.Type == loop.ActMerge && ev.Type == loop.EvMerged:
		// Fast-forward only: merges are serialized, so a refusal means
		// this clone is stale, and the retry merges on the new head.
		if err := retry(ctx, func() error { return r.push(ctx, "refs/heads/"+r.branch()+":refs/heads/"+r.branch()) }); err != nil {
			return ev, err
		}
		_ = r.push(ctx, ":refs/heads/"+a.Branch) // its work is on the run branch now
	}
	if err := retry(ctx, func() error { return r.pushFiles(ctx, e.x.Run.Dir()) }); err != nil {
		return ev, err
	}
	return ev, nil
}

// retry runs publish up to three times, a second and then two apart.
func retry(ctx context.Context, publish func() error) error {
	wait := time.Second
	for try := 1; ; try++ {
		err := publish()
		if err == nil || try == 3 {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// lockWorktree takes this clone's lock on a task worktree and returns its
// release.
func (r *remoteSync) lockWorktree(path string) (unlock func()) {
	r.locksMu.Lock()
	if r.worktrees == nil {
		r.worktrees = map[string]*sync.Mutex{}
	}
	l := r.worktrees[path]
	if l == nil {
		l = &sync.Mutex{}
		r.worktrees[path] = l
	}
	r.locksMu.Unlock()
	l.Lock()
	return l.Unlock
}

// withWorktree is s with the task's worktree at path, leaving s as it is.
func withWorktree(s loop.State, taskID, path string) loop.State {
	tasks := make(map[string]*loop.TaskState, len(s.Tasks))
	for id, t := range s.Tasks {
		tasks[id] = t
	}
	c := *s.Tasks[taskID]
	c.Worktree = path
	tasks[taskID] = &c
	s.Tasks = tasks
	return s
}
