package run

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/sluice-run/sluice/internal/engine"
	"github.com/sluice-run/sluice/internal/engine/local"
	"github.com/sluice-run/sluice/internal/engine/temporal"
	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/store"
)

// Engines a run can be driven by.
const (
	EngineLocal    = "local"
	EngineTemporal = "temporal"
)

// TemporalOptions say which Temporal service runs the workflow.
type TemporalOptions struct {
	// HostPort is the frontend address, e.g. 127.0.0.1:7233.
	HostPort  string
	Namespace string
	// TaskQueue is the queue the workers poll (default "sluice").
	TaskQueue string
	// Logger receives the SDK's logs (nil: discarded).
	Logger *slog.Logger
	// Timeouts override the activity timeouts.
	Timeouts temporal.Timeouts
	// Poll is how often the starter reads new journal entries (default
	// 250ms).
	Poll time.Duration
	// ContinueAfter bounds each workflow history to about this many
	// journal entries (zero: temporal.DefaultContinueAfter).
	ContinueAfter int
	// Remote names the git remote through which a run's branches and
	// files travel between the starter and workers in clones of their own
	// (see remoteSync). Empty: every worker shares the starter's path.
	Remote string
}

func (t TemporalOptions) withDefaults() TemporalOptions {
	if t.Namespace == "" {
		t.Namespace = "default"
	}
	if t.TaskQueue == "" {
		t.TaskQueue = temporal.DefaultTaskQueue
	}
	if t.Logger == nil {
		t.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if t.Poll <= 0 {
		t.Poll = 250 * time.Millisecond
	}
	return t
}

func dial(ctx context.Context, t TemporalOptions) (client.Client, error) {
	if t.HostPort == "" {
		return nil, errors.New("no Temporal address: pass --temporal HOST:PORT (e.g. 127.0.0.1:7233)")
	}
	c, err := client.DialContext(ctx, client.Options{HostPort: t.HostPort, Namespace: t.Namespace, Logger: tlog.NewStructuredLogger(t.Logger), DataConverter: temporal.DataConverter()})
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %s): %w", t.HostPort, t.Namespace, err)
	}
	return c, nil
}

// WorkflowID is the id of a run's workflow.
func WorkflowID(runID string) string { return "sluice-" + runID }

// NewExecutor builds the executor of run runID of the repository at
// opts.Root exactly as a local run builds it, for a worker executing the
// actions of a run that another process drives: it takes neither the
// repository's lock nor the run's, and writes artifacts and transcripts
// into the run directory beside the driver. The budget account starts
// empty; set x.Budget from what the run has spent. close releases it.
func NewExecutor(ctx context.Context, runID string, opts Options) (x *local.Executor, close func() error, err error) {
	opts = withDefaults(opts)
	if err := checkRunID(runID); err != nil {
		return nil, nil, err
	}
	p, err := load(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	return p.workerExecutor(ctx, filepath.Join(p.runsDir, runID), opts, false)
}

func checkRunID(runID string) error {
	if runID == "" || filepath.Base(runID) != runID || runID == "." || runID == ".." {
		return fmt.Errorf("run id %q: want the name of a directory in .sluice/runs", runID)
	}
	return nil
}

// workerExecutor builds a worker's executor of the run whose directory (or
// this clone's copy of it, when remote) is dir.
func (p *prepared) workerExecutor(ctx context.Context, dir string, opts Options, remote bool) (*local.Executor, func() error, error) {
	runID := filepath.Base(dir)
	var meta Meta
	data, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err == nil {
		err = json.Unmarshal(data, &meta)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s of run %s (a worker needs the repository and its .sluice/runs on a shared path, or a clone and --remote when the run was started with --remote): %w", metaFile, runID, err)
	}
	if meta.Remote && !remote {
		return nil, nil, fmt.Errorf("run %s shares its branches through a git remote (it was started with --remote): start this worker with --remote NAME, the remote's name in this clone", runID)
	}
	st, err := store.Attach(dir)
	if err != nil {
		return nil, nil, err
	}
	x, _, err := p.newExecutor(ctx, opts, st, meta, meta.Settings)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	x.Budget = local.NewBudget(meta.Settings.Budget, loop.Usage{})
	return x, func() error { return errors.Join(x.Close(), st.Close()) }, nil
}

// executors builds one executor per run (and budget limit) on a worker.
type executors struct {
	opts Options
	p    *prepared
	// remote, when set, is the git remote runs travel through; owner
	// names this worker's files on it.
	remote, owner string
	mu            sync.Mutex
	byKey         map[string]runExecutor
	syncs         map[string]*remoteSync
	// building holds one lock per run, taken while its executor is built.
	building map[string]*sync.Mutex
	close    []func() error
}

// runExecutor is a run's executor on a worker, and what runs actions
// through it (the executor, or a syncedExecutor around it in a clone).
type runExecutor struct {
	x  *local.Executor
	ex engine.Executor
}

func (e *executors) Executor(ctx context.Context, runID string, view loop.State) (engine.Executor, error) {
	if err := checkRunID(runID); err != nil {
		return nil, err
	}
	// A resume may raise the budget: a new limit gets a new account.
	key := fmt.Sprintf("%s|%d|%g", runID, view.Settings.Budget.Tokens, view.Settings.Budget.USD)
	if w, ok := e.cached(key); ok {
		// Other workers' spending reaches this one through the state.
		w.x.Budget.Witness(view.Usage)
		return w.ex, nil
	}
	// One build per run at a time, outside e.mu: building fetches over the
	// network, and other runs' actions must not wait for it.
	e.mu.Lock()
	build := e.building[runID]
	if build == nil {
		build = &sync.Mutex{}
		e.building[runID] = build
	}
	e.mu.Unlock()
	build.Lock()
	defer build.Unlock()
	if w, ok := e.cached(key); ok {
		w.x.Budget.Witness(view.Usage)
		return w.ex, nil
	}
	dir := filepath.Join(e.p.runsDir, runID)
	var rs *remoteSync
	if e.remote != "" {
		// This clone's copy of the run directory: meta.json and the files
		// other workers published (the baseline, for one). Later actions
		// bring it up to date themselves (syncedExecutor).
		dir = filepath.Join(e.p.sluiceDir, "worktrees", runID, "_run")
		// One sync per run and clone, whatever the budget: its locks and
		// its record of pulled files are the clone's.
		e.mu.Lock()
		if rs = e.syncs[runID]; rs == nil {
			rs = &remoteSync{repo: e.p.repo, remote: e.remote, runID: runID, owner: e.owner, now: e.opts.Now}
			e.syncs[runID] = rs
		}
		e.mu.Unlock()
		if err := rs.fetch(ctx); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create this clone's copy of run %s: %w", runID, err)
		}
		// The copy has no journal of its own (the starter keeps it); an
		// empty one makes it a run directory to write artifacts into.
		if f, err := os.OpenFile(filepath.Join(dir, store.JournalFile), os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			f.Close()
		}
		copied, err := store.Attach(dir)
		if err != nil {
			return nil, err
		}
		if err := rs.pullFiles(ctx, copied, false); err != nil {
			return nil, err
		}
	}
	x, closeFn, err := e.p.workerExecutor(ctx, dir, e.opts, e.remote != "")
	if err != nil {
		return nil, err
	}
	x.Budget = local.NewBudget(view.Settings.Budget, view.Usage)
	var ex engine.Executor = x
	e.mu.Lock()
	defer e.mu.Unlock()
	if rs != nil {
		ex = &syncedExecutor{x: x, sync: rs}
	}
	e.byKey[key] = runExecutor{x: x, ex: ex}
	e.close = append(e.close, closeFn)
	return ex, nil
}

func (e *executors) cached(key string) (runExecutor, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w, ok := e.byKey[key]
	return w, ok
}

func (e *executors) closeAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.close {
		_ = c()
	}
}

// Work runs a Temporal worker for the repository at opts.Root until ctx
// ends: it runs the run workflow and executes its actions with real
// components. Every worker of a task queue must see the same repository
// and run directories (one machine, or a shared path).
func Work(ctx context.Context, opts Options, t TemporalOptions) error {
	opts = withDefaults(opts)
	t = t.withDefaults()
	p, err := load(ctx, opts)
	if err != nil {
		return err
	}
	where := "runs share this repository's path"
	if t.Remote != "" {
		// Checked before polling: a worker that cannot reach the remote
		// must not take actions it cannot carry out.
		if _, err := p.repo.RemoteRef(ctx, t.Remote, "HEAD"); err != nil {
			return fmt.Errorf("--remote %s: this clone cannot reach it (name a remote of `git remote -v`, or a URL): %w", t.Remote, err)
		}
		where = "runs travel through the git remote " + t.Remote
	}
	c, err := dial(ctx, t)
	if err != nil {
		return err
	}
	defer c.Close()
	owner, err := workerName()
	if err != nil {
		return err
	}
	src := &executors{opts: opts, p: p, remote: t.Remote, owner: owner, byKey: map[string]runExecutor{}, syncs: map[string]*remoteSync{}, building: map[string]*sync.Mutex{}}
	defer src.closeAll()
	w := worker.New(c, t.TaskQueue, worker.Options{})
	temporal.Register(w, &temporal.Activities{Source: src})
	if err := w.Start(); err != nil {
		return fmt.Errorf("start the worker on task queue %s: %w", t.TaskQueue, err)
	}
	opts.Notice(fmt.Sprintf("worker polling task queue %s on %s (namespace %s); %s", t.TaskQueue, t.HostPort, t.Namespace, where))
	<-ctx.Done()
	w.Stop()
	return nil
}

// Attachment says, in the run directory (temporal.json), which workflow drives the run and
// where its entries begin in the journal. A starter that dies leaves it
// behind with Following set, and the next resume re-attaches to the
// workflow instead of starting a second one.
type Attachment struct {
	WorkflowID string `json:"workflow_id"`
	HostPort   string `json:"host_port"`
	Namespace  string `json:"namespace"`
	TaskQueue  string `json:"task_queue"`
	// Remote is the git remote the starter reaches the workers through.
	Remote string `json:"remote,omitempty"`
	// Offset is how many entries the journal held when the workflow
	// started: the workflow's own entries follow it, in its order, so the
	// next one to read is the journal's length minus Offset.
	Offset int `json:"offset"`
	// Following is true from just before the workflow starts until the
	// starter has journaled everything it did.
	Following bool `json:"following"`
}

const (
	attachmentFile = "temporal.json"
	// memoOffset carries Attachment.Offset in the workflow's memo, so a
	// re-attaching starter can tell the workflow it recorded from an older
	// one of the same id.
	memoOffset = "sluice_journal_offset"
)

func readAttachment(st *store.Run) (Attachment, error) {
	var a Attachment
	data, err := os.ReadFile(filepath.Join(st.Dir(), attachmentFile))
	if errors.Is(err, os.ErrNotExist) {
		return a, nil
	}
	if err == nil {
		err = json.Unmarshal(data, &a)
	}
	if err != nil {
		return a, fmt.Errorf("read %s of run %s (delete it if no workflow of the run is running): %w", attachmentFile, filepath.Base(st.Dir()), err)
	}
	return a, nil
}

func writeAttachment(st *store.Run, a Attachment) error {
	data, _ := json.MarshalIndent(a, "", "  ")
	return st.WriteFile(attachmentFile, data)
}

// ErrFollowedByTemporal means a run is still driven by a Temporal workflow
// that no starter follows: only a resume on the Temporal engine may touch it.
var ErrFollowedByTemporal = errors.New("the run is driven by a Temporal workflow")

// followedError refuses a local resume of a run whose workflow (a, still
// followed) may still be running, or whose last entries are only in the
// workflow's history.
func followedError(st *store.Run, a Attachment) error {
	return fmt.Errorf("%w: run %s was started as workflow %s on Temporal at %s, and its starter stopped before the workflow ended; resume it with `%s`, which re-attaches to the workflow (or collects what it did, if it has ended). If that Temporal service is gone for good, delete %s from %s and resume here: what the workflow did beyond this run's journal is then redone",
		ErrFollowedByTemporal, filepath.Base(st.Dir()), a.WorkflowID, a.HostPort, a.ResumeCommand(), attachmentFile, st.Dir())
}

// ResumeCommand is the command that re-attaches to the workflow.
func (a Attachment) ResumeCommand() string {
	cmd := fmt.Sprintf("sluice resume --engine temporal --temporal %s --task-queue %s", a.HostPort, a.TaskQueue)
	if a.Namespace != "" && a.Namespace != "default" {
		cmd += " --namespace " + a.Namespace
	}
	if a.Remote != "" {
		cmd += " --remote " + a.Remote
	}
	return cmd
}

// workerName names a worker's files on the remote: host, pid and a random
// suffix (containers on one host can share a pid), kept to the characters
// a ref name allows.
func workerName() (string, error) {
	host, _ := os.Hostname()
	var suffix [3]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return "", fmt.Errorf("name this worker: %w", err)
	}
	name := fmt.Sprintf("%s-%d-%x", host, os.Getpid(), suffix)
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, name), nil
}

// driveTemporal runs the loop as a Temporal workflow and journals it here:
// it polls the workflow's journal query and writes every entry to the run
// directory (and the live view) in the workflow's own order, so status,
// log and report read the run as they read a local one. Approval questions
// are put to opts.Ask and answered by signal. journaled is how many entries
// the run directory's journal holds. If an earlier starter of the run died
// while its workflow ran, this one re-attaches to that workflow.
func (p *prepared) driveTemporal(ctx context.Context, opts Options, st *store.Run, meta Meta, s loop.State, resumed *loop.Event, journaled int, res *Result) (*Result, error) {
	t := opts.Temporal.withDefaults()
	integration, err := p.integration(ctx, meta)
	if err != nil {
		return nil, err
	}
	var rs *remoteSync
	switch {
	case meta.Remote && t.Remote == "":
		return nil, fmt.Errorf("run %s shares its branches through a git remote (it was started with --remote): resume it with --remote NAME", meta.RunID)
	case !meta.Remote && t.Remote != "":
		return nil, fmt.Errorf("run %s was started without --remote, and its workers share this repository's path: resume it without --remote", meta.RunID)
	case meta.Remote:
		rs = &remoteSync{repo: p.repo, remote: t.Remote, runID: meta.RunID, owner: "starter", now: opts.Now}
	}
	j := &journal{run: st}
	// The same journal discipline as the local engine: record, fold,
	// observe, snapshot.
	eng := &engine.Engine{Journal: j, Now: opts.Now, Observe: opts.Observe}
	c, err := dial(ctx, t)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	wid := WorkflowID(meta.RunID)
	f := &follower{c: c, wid: wid, eng: eng, j: j, s: s, opts: opts, asked: map[string]bool{}, sync: rs, integration: integration}

	att, err := readAttachment(st)
	if err != nil {
		return nil, err
	}
	if att.Following {
		running, err := f.reattach(ctx, att, journaled)
		if err != nil {
			return nil, err
		}
		if running {
			opts.Notice(fmt.Sprintf("re-attached to workflow %s, still running on Temporal; its budget and approval settings are the ones it started with", wid))
			return p.followToEnd(ctx, opts, st, meta, f, c.GetWorkflow(ctx, wid, ""), att, res)
		}
		// It ended while no one followed it: everything it did is now in
		// the journal, and the run resumes from there as usual.
		if err := f.collect(ctx); err != nil {
			return nil, err
		}
		att.Following = false
		if err := writeAttachment(st, att); err != nil {
			return nil, err
		}
		s, journaled = f.s, f.journaled(att, journaled)
		if s.Phase == loop.PhaseComplete {
			res.State = s
			if err := j.Snapshot(s); err != nil {
				return res, err
			}
			p.tidyUp(ctx, meta.RunID, rs)
			return res, nil
		}
	}
	if resumed != nil {
		if s, err = eng.Emit(s, *resumed); err != nil {
			return nil, err
		}
		journaled++
	}
	if rs != nil {
		if err := rs.publishRun(ctx, integration, st.Dir()); err != nil {
			return nil, err
		}
	}
	att = Attachment{WorkflowID: wid, HostPort: t.HostPort, Namespace: t.Namespace, TaskQueue: t.TaskQueue, Remote: t.Remote, Offset: journaled, Following: true}
	if err := writeAttachment(st, att); err != nil {
		return nil, err
	}
	start := s
	in := temporal.RunInput{RunID: meta.RunID, Settings: s.Settings, State: &start, WaitForApproval: opts.Ask != nil, Timeouts: t.Timeouts, ContinueAfter: t.ContinueAfter}
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       wid,
		TaskQueue:                t.TaskQueue,
		Memo:                     map[string]any{memoOffset: journaled},
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
	}, temporal.WorkflowName, in)
	if err != nil {
		// Following stays set: a start that timed out may still have
		// started the workflow, and the next resume's memo check tells.
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			return nil, fmt.Errorf("the workflow %s of run %s is running on Temporal, started by something other than this run's starter; cancel it with `temporal workflow cancel -w %s`, then resume", wid, meta.RunID, wid)
		}
		return nil, fmt.Errorf("start the workflow of run %s on Temporal at %s: %w", meta.RunID, t.HostPort, err)
	}
	f.s, f.runID, f.cursor = s, wr.GetRunID(), 0
	return p.followToEnd(ctx, opts, st, meta, f, wr, att, res)
}

// tidyUp removes a complete, collected run's worktrees here and, when it
// travelled through a remote (rs), all of it there but the run branch.
func (p *prepared) tidyUp(ctx context.Context, runID string, rs *remoteSync) {
	p.cleanup(ctx, runID)
	if rs != nil {
		rs.prune(ctx)
	}
}

// follower reads a workflow's journal, across the runs it continues as new
// into, and journals each entry here.
type follower struct {
	c    client.Client
	wid  string
	eng  *engine.Engine
	j    *journal
	opts Options
	// s is the fold of the run directory's journal.
	s loop.State
	// runID is the workflow run being read; cursor numbers the workflow's
	// entries across its chain of runs.
	runID  string
	cursor int
	// asked holds the approval questions already put to someone.
	asked map[string]bool
	// sync, when the run travels through a git remote, collects the run
	// branch into integration and the workers' files into the run
	// directory.
	sync        *remoteSync
	integration string
}

// showTasks passes what each task's child workflow is doing to the live
// view as activity. Its entries reach the journal only when the child
// returns; until then the view would show the task at the stage it
// started with, silent, and soon marked stalled.
func (f *follower) showTasks(ctx context.Context) {
	if f.opts.Activity == nil {
		return
	}
	// A child's id is the run's workflow id and the first of the task's
	// actions it was started with, in InFlightActions order.
	first := map[string]loop.Action{}
	var tasks []string
	for _, a := range loop.InFlightActions(f.s) {
		if _, seen := first[a.TaskID]; a.TaskID == "" || a.Type == loop.ActMerge || seen {
			continue
		}
		first[a.TaskID] = a
		tasks = append(tasks, a.TaskID)
	}
	for _, id := range tasks {
		a := first[id]
		v, err := f.c.QueryWorkflow(ctx, f.wid+"/"+a.ID, "", temporal.QueryJournal, 0)
		if err != nil {
			continue // not started yet, or the run has no task children
		}
		var page temporal.JournalPage
		if v.Get(&page) != nil {
			continue
		}
		stage, tokens := "", int64(0)
		for _, e := range page.Entries {
			switch {
			case e.Action != nil:
				stage = e.Action.ID
			case e.Event != nil:
				tokens += e.Event.Usage.Tokens
			}
		}
		if stage == "" {
			continue
		}
		f.opts.Activity(local.Activity{ActionID: a.ID, TaskID: id, Tool: stage})
		if tokens > 0 {
			f.opts.Activity(local.Activity{ActionID: a.ID, TaskID: id, Tokens: tokens})
		}
	}
}

// collect brings in what workers in other clones made, when they do.
func (f *follower) collect(ctx context.Context) error {
	if f.sync == nil {
		return nil
	}
	return f.sync.collect(ctx, f.integration, f.j.run)
}

// journaled is how many entries the run directory's journal holds after
// following: the workflow's entries (cursor) come after the Offset it
// started at. Before the follower found the workflow (it never started,
// cursor 0 with no run), that is what the journal held to begin with.
func (f *follower) journaled(att Attachment, before int) int {
	if f.runID == "" {
		return before
	}
	return att.Offset + f.cursor
}

// reattach finds the workflow an earlier starter recorded and catches the
// journal up with it. running says whether it is still running; when it is
// not, f holds everything it did.
func (f *follower) reattach(ctx context.Context, att Attachment, journaled int) (running bool, err error) {
	desc, err := f.c.DescribeWorkflowExecution(ctx, f.wid, "")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		if journaled > att.Offset {
			// It ran, since the journal holds some of its entries: its
			// history is gone (past the namespace's retention, say).
			f.opts.Notice(fmt.Sprintf("workflow %s is no longer on Temporal; the run resumes from the %d of its entries in this journal, and what it did after them is done again", f.wid, journaled-att.Offset))
		}
		return false, nil // otherwise the starter died before it started
	}
	if err != nil {
		return false, fmt.Errorf("find the workflow %s that run %s was following: %w", f.wid, f.s.RunID, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	var offset int
	if pl := info.GetMemo().GetFields()[memoOffset]; pl == nil || converter.GetDefaultDataConverter().FromPayload(pl, &offset) != nil || offset != att.Offset {
		return false, nil // an older workflow of the run; the recorded one never started
	}
	if journaled < att.Offset {
		return false, fmt.Errorf("the journal of run %s has %d entries, fewer than the %d it had when workflow %s started; restore log.jsonl, or cancel the workflow with `temporal workflow cancel -w %s` and delete %s", f.s.RunID, journaled, att.Offset, f.wid, f.wid, attachmentFile)
	}
	f.runID, f.cursor = info.GetFirstRunId(), journaled-att.Offset
	if f.runID == "" {
		f.runID = info.GetExecution().GetRunId()
	}
	running = info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	qctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := f.pull(qctx); err != nil {
		return false, err
	}
	if running {
		// A question the dead starter put to someone is put again.
		for _, a := range loop.InFlightActions(f.s) {
			if a.Type == loop.ActAsk {
				f.ask(ctx, a)
			}
		}
	}
	return running, nil
}

// pull journals every entry the workflow made since the cursor.
func (f *follower) pull(ctx context.Context) error {
	for {
		v, err := f.c.QueryWorkflow(ctx, f.wid, f.runID, temporal.QueryJournal, f.cursor)
		if err != nil {
			return fmt.Errorf("read the journal of workflow %s (a query needs a `sluice worker` polling the run's task queue): %w", f.wid, err)
		}
		var page temporal.JournalPage
		if err := v.Get(&page); err != nil {
			return fmt.Errorf("decode the journal of workflow %s: %w", f.wid, err)
		}
		for _, e := range page.Entries {
			if f.s, err = record(f.eng, f.s, e); err != nil {
				return err
			}
			f.cursor++
			if a := e.Action; a != nil && a.Type == loop.ActAsk {
				f.ask(ctx, *a)
			}
		}
		if len(page.Entries) > 0 {
			if err := f.j.Snapshot(f.s); err != nil {
				return fmt.Errorf("write the state snapshot of run %s: %w", f.s.RunID, err)
			}
		}
		if !page.Continued {
			return nil
		}
		if f.runID, err = continuedRun(ctx, f.c, f.wid, f.runID); err != nil {
			return err
		}
	}
}

// ask answers the workflow's approval question: yes with --yes, otherwise
// whatever opts.Ask gets from a person (asked once per question).
func (f *follower) ask(ctx context.Context, a loop.Action) {
	if f.asked[a.ID] || (!f.opts.Yes && f.opts.Ask == nil) {
		return
	}
	f.asked[a.ID] = true
	signal := func(ap temporal.Approval) {
		// The question may by now be open in a later run of the chain:
		// signal the current one.
		if err := f.c.SignalWorkflow(context.WithoutCancel(ctx), f.wid, "", temporal.SignalApprove, ap); err != nil {
			// Asked again on the next resume, which re-attaches.
			f.opts.Notice(fmt.Sprintf("the answer to %s did not reach workflow %s (%v); stop this process and run `sluice resume --engine temporal` to be asked again", a.ID, f.wid, err))
		}
	}
	if f.opts.Yes {
		signal(temporal.Approval{Approve: true})
		return
	}
	go func() {
		approve, answered := f.opts.Ask(ctx, a.Question)
		signal(temporal.Approval{Approve: approve, Defer: !answered})
	}()
}

// followToEnd journals the workflow until it ends, then checks that the
// run directory folds to the workflow's own result.
func (p *prepared) followToEnd(ctx context.Context, opts Options, st *store.Run, meta Meta, f *follower, wr client.WorkflowRun, att Attachment, res *Result) (*Result, error) {
	t := opts.Temporal.withDefaults()
	done := make(chan error, 1)
	var final loop.State
	go func() { done <- wr.Get(context.WithoutCancel(ctx), &final) }()
	var limit <-chan time.Time
	if opts.Timeout > 0 {
		timer := time.NewTimer(opts.Timeout)
		defer timer.Stop()
		limit = timer.C
	}
	tick := time.NewTicker(t.Poll)
	defer tick.Stop()
	var stopReason string
	var wfErr error
wait:
	for {
		select {
		case <-tick.C:
			// A query can fail while no worker is up; the next tick retries.
			qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_ = f.pull(qctx)
			f.showTasks(qctx)
			cancel()
		case <-limit:
			stopReason = fmt.Sprintf("the run's time limit of %s ran out; resume with `sluice resume`", opts.Timeout)
			_ = f.c.CancelWorkflow(context.WithoutCancel(ctx), f.wid, "")
			limit = nil
		case <-ctx.Done():
			_ = f.c.CancelWorkflow(context.WithoutCancel(ctx), f.wid, "")
			select {
			case wfErr = <-done:
			case <-time.After(time.Minute):
				// temporal.json keeps saying the workflow is followed, so
				// the next resume re-attaches rather than start another.
				return res, fmt.Errorf("run interrupted, but workflow %s did not stop within a minute of being cancelled and may still be running: `%s` re-attaches to it", f.wid, att.ResumeCommand())
			}
			break wait
		case wfErr = <-done:
			break wait
		}
	}
	// The rest of the journal, from the closed workflow's history.
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	perr := f.pull(qctx)
	cancel()
	s := f.s
	res.State = s
	if perr != nil {
		return res, perr
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	err := f.collect(cctx)
	cancel()
	if err != nil {
		return res, fmt.Errorf("%w; run `sluice resume` with the same flags to collect it again", err)
	}
	att.Following = false
	if err := writeAttachment(st, att); err != nil {
		return res, err
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("run interrupted: %w", ctx.Err())
	}
	if wfErr != nil && stopReason == "" {
		return res, fmt.Errorf("the workflow %s of run %s failed: %w", f.wid, meta.RunID, wfErr)
	}
	if stopReason != "" {
		if s, err = f.eng.Emit(s, loop.Event{Type: loop.EvPaused, Reason: stopReason}); err != nil {
			return res, err
		}
		res.State = s
		return res, nil
	}
	if got, want := stateJSON(s), stateJSON(final); got != want {
		return res, fmt.Errorf("the journal of run %s does not fold to the workflow's result; the run directory may be incomplete (workflow %s)", meta.RunID, f.wid)
	}
	if err := f.j.Snapshot(s); err != nil {
		return res, err
	}
	if s.Phase == loop.PhaseComplete {
		p.tidyUp(ctx, meta.RunID, f.sync)
	}
	return res, nil
}

// continuedRun is the run a workflow run continued as new into.
func continuedRun(ctx context.Context, c client.Client, wid, runID string) (string, error) {
	it := c.GetWorkflowHistory(ctx, wid, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return "", fmt.Errorf("read how run %s of workflow %s closed: %w", runID, wid, err)
		}
		if a := ev.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
			return a.GetNewExecutionRunId(), nil
		}
	}
	return "", fmt.Errorf("run %s of workflow %s says it continued as new, but its history has no such event", runID, wid)
}

// record journals one entry the workflow made and folds it. The snapshot
// is written once a page (see pull): an entry is journaled exactly once,
// and a failing snapshot must not make the next poll journal it again.
func record(eng *engine.Engine, s loop.State, e loop.Entry) (loop.State, error) {
	switch {
	case e.Action != nil:
		if err := eng.Journal.Record(e, eng.Now()); err != nil {
			return s, fmt.Errorf("journal action %s: %w", e.Action.ID, err)
		}
		s = loop.Issue(s, *e.Action)
	case e.Event != nil:
		if err := eng.Journal.Record(e, eng.Now()); err != nil {
			return s, fmt.Errorf("journal %s event of %s: %w", e.Event.Type, e.Event.ActionID, err)
		}
		s = loop.Apply(s, *e.Event)
	default:
		return s, errors.New("the workflow's journal holds an entry with neither an action nor an event")
	}
	if eng.Observe != nil {
		eng.Observe(e, s)
	}
	return s, nil
}

func stateJSON(s loop.State) string {
	b, _ := json.Marshal(s)
	return string(b)
}
