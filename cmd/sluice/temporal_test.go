package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/build"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/sluice-run/sluice/internal/demo"
	"github.com/sluice-run/sluice/internal/engine/local"
	"github.com/sluice-run/sluice/internal/loop"
	sluicerun "github.com/sluice-run/sluice/internal/run"
)

// temporalCLI finds the Temporal CLI (go install
// github.com/temporalio/cli/cmd/temporal@v1.5.1) or skips the test, unless
// SLUICE_REQUIRE_TEMPORAL is set.
func temporalCLI(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("temporal"); err == nil {
		return p
	}
	p := filepath.Join(build.Default.GOPATH, "bin", "temporal")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	const msg = "the temporal CLI is not installed (go install github.com/temporalio/cli/cmd/temporal@v1.5.1)"
	if os.Getenv("SLUICE_REQUIRE_TEMPORAL") != "" {
		// CI sets this: there the dev-server test must run, never skip.
		t.Fatal(msg + ", and SLUICE_REQUIRE_TEMPORAL is set")
	}
	t.Skip(msg + "; skipping the Temporal dev-server test")
	return ""
}

// startDevServer runs a Temporal dev server on 127.0.0.1 for the test.
func startDevServer(t *testing.T) *testsuite.DevServer {
	t.Helper()
	bin := temporalCLI(t)
	quiet := tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv, err := testsuite.StartDevServer(context.Background(), testsuite.DevServerOptions{
		ExistingPath:  bin,
		LogLevel:      "error",
		Stdout:        io.Discard,
		Stderr:        io.Discard,
		ClientOptions: &client.Options{Namespace: "default", Logger: quiet},
	})
	if err != nil {
		t.Fatalf("start the Temporal dev server: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return srv
}

// TestTemporalEngine runs the demo plan as a Temporal workflow on a real
// dev server, with `sluice worker` processes doing the work, and checks
// every run against the run-branch tree of the local engine.
func TestTemporalEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal dev server and runs the demo several times; skipped with -short")
	}
	srv := startDevServer(t)
	te := &temporalE2E{e2e: newE2E(t, demo.Script()), hostPort: srv.FrontendHostPort(), c: srv.Client()}
	ref := te.sample(t)
	if out, err := te.command(ref, "run", "--yes", "--jobs", "4", demo.Goal).CombinedOutput(); err != nil {
		t.Fatalf("local run: %v\n%s", err, out)
	}
	te.want = gitTree(t, ref, runBranch(t, ref))

	t.Run("a killed worker", te.killedWorker)
	t.Run("a time limit, resumed", te.timeLimitResumed)
	t.Run("a killed starter re-attaches", te.killedStarter)
	t.Run("workers in clones of their own", te.inClones)
	t.Run("the live view sees inside task workflows", te.liveActivity)
}

type temporalE2E struct {
	*e2e
	hostPort string
	c        client.Client
	// want is the run-branch tree of the demo run on the local engine.
	want string
}

func (te *temporalE2E) sample(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := demo.WriteSample(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// worker starts `sluice worker` in dir on the task queue, with any extra
// flags; it is killed at the end of the test.
func (te *temporalE2E) worker(t *testing.T, dir, queue string, log io.Writer, extra ...string) *exec.Cmd {
	t.Helper()
	w := te.command(dir, append([]string{"worker", "--temporal", te.hostPort, "--task-queue", queue}, extra...)...)
	w.Stdout, w.Stderr = log, log
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-w.Process.Pid, syscall.SIGKILL)
		_ = w.Wait()
	})
	return w
}

func (te *temporalE2E) flags(queue string) []string {
	return []string{"--engine", "temporal", "--temporal", te.hostPort, "--task-queue", queue}
}

// started is a sluice command running in the background.
type started struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan error
}

func (te *temporalE2E) start(t *testing.T, dir string, args ...string) *started {
	t.Helper()
	s := &started{cmd: te.command(dir, args...), done: make(chan error, 1)}
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) })
	return s
}

// until polls cond until it holds; the command ending first, or five
// minutes passing, fails the test.
func (s *started) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(5 * time.Minute)
	for !cond() {
		select {
		case err := <-s.done:
			t.Fatalf("the run ended (err %v) before %s:\n%s", err, what, s.out.String())
		case <-deadline:
			t.Fatalf("%s did not happen within 5 minutes:\n%s", what, s.out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// wait waits up to five minutes for the command to succeed; the workers'
// logs are shown if it does not.
func (s *started) wait(t *testing.T, logs ...*bytes.Buffer) {
	t.Helper()
	var all strings.Builder
	show := func() string {
		for i, l := range logs {
			fmt.Fprintf(&all, "\nworker %d:\n%s", i+1, l.String())
		}
		return all.String()
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("the run failed: %v\n%s%s", err, s.out.String(), show())
		}
	case <-time.After(5 * time.Minute):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("the run did not finish within 5 minutes:\n%s%s", s.out.String(), show())
	}
}

// runningDelegation is where a task delegation runs: the workflow that
// scheduled it (the run's, or the task's child) and the worker's pid.
type runningDelegation struct{ workflowID, pid string }

// pendingTaskDelegations lists the task delegations (execute, review,
// verify) running now, in the run's workflow or any workflow it started
// for a task, with where each runs.
func (te *temporalE2E) pendingTaskDelegations(workflowID string) map[string]runningDelegation {
	out := map[string]runningDelegation{}
	ids := []string{workflowID}
	for len(ids) > 0 {
		id := ids[0]
		ids = ids[1:]
		desc, err := te.c.DescribeWorkflowExecution(context.Background(), id, "")
		if err != nil {
			continue
		}
		for _, ch := range desc.GetPendingChildren() {
			ids = append(ids, ch.GetWorkflowId())
		}
		for _, pa := range desc.GetPendingActivities() {
			aid := pa.GetActivityId()
			delegation := strings.HasSuffix(aid, "/execute") || strings.HasSuffix(aid, "/review") || strings.HasSuffix(aid, "/verify")
			if !strings.HasPrefix(aid, "task/") || !delegation || pa.GetState() != enumspb.PENDING_ACTIVITY_STATE_STARTED {
				continue
			}
			pid, _, _ := strings.Cut(pa.GetLastWorkerIdentity(), "@")
			out[aid] = runningDelegation{workflowID: id, pid: pid}
		}
	}
	return out
}

// killedWorker: two workers, the one running a task's delegation is
// SIGKILLed; the delegation is retried on the other worker, no delegation
// whose completion was journaled is sent again, the tree is the local
// engine's, and status reads the run directory the starter wrote.
func (te *temporalE2E) killedWorker(t *testing.T) {
	dir := te.sample(t)
	var logs [2]bytes.Buffer
	var workers [2]*exec.Cmd
	for i := range workers {
		workers[i] = te.worker(t, dir, "killed-worker", &logs[i])
	}
	run := te.start(t, dir, append(append([]string{"run", "--yes", "--jobs", "4", "--heartbeat-timeout", "3s"}, te.flags("killed-worker")...), demo.Goal)...)
	killedAction, workflowID := te.killMidDelegation(t, dir, workers[:], run)
	run.wait(t, &logs[0], &logs[1])
	if got := gitTree(t, dir, runBranch(t, dir)); got != te.want {
		t.Fatalf("the temporal run's branch tree is %s, want %s (local engine)\n%s", got, te.want, run.out.String())
	}
	t.Logf("killed the worker running %s", killedAction)
	if n := startsOf(t, te.c, workflowID, killedAction); n < 2 {
		t.Fatalf("the delegation %s, whose worker was killed, started %d times; want a retry on the other worker", killedAction, n)
	}
	checkNoCompletedDelegationRepeated(t, dir, te.srv.Requests())
	status, err := te.command(dir, "status").CombinedOutput()
	if err != nil || !strings.Contains(string(status), "done  phase complete") {
		t.Fatalf("sluice status on the temporal run: %v\n%s", err, status)
	}
}

// killMidDelegation SIGKILLs whichever of workers runs one of a task's
// delegations, once one does, and says which action it ran and in which
// workflow (the task's child workflow holds its stages' history).
func (te *temporalE2E) killMidDelegation(t *testing.T, dir string, workers []*exec.Cmd, run *started) (action, workflowID string) {
	t.Helper()
	run.until(t, "a worker was killed mid-delegation", func() bool {
		runs, _ := filepath.Glob(filepath.Join(dir, ".sluice", "runs", "*", "meta.json"))
		if len(runs) == 0 {
			return false
		}
		for aid, d := range te.pendingTaskDelegations("sluice-" + filepath.Base(filepath.Dir(runs[0]))) {
			for _, w := range workers {
				if strconv.Itoa(w.Process.Pid) == d.pid {
					_ = syscall.Kill(-w.Process.Pid, syscall.SIGKILL)
					action, workflowID = aid, d.workflowID
					return true
				}
			}
		}
		return false
	})
	return action, workflowID
}

// inClones: the workers work in clones of their own, reaching the run
// through a bare git remote (--remote), and one of them is killed
// mid-delegation. The run ends with the local engine's tree, the starter's
// run directory holds every delegation's message and transcript (collected
// from the remote), and no completed delegation was sent again.
func (te *temporalE2E) inClones(t *testing.T) {
	dir := te.sample(t)
	bare := filepath.Join(t.TempDir(), "remote.git")
	gitIn(t, dir, "init", "-q", "--bare", "-b", "main", bare)
	gitIn(t, dir, "remote", "add", "origin", bare)
	gitIn(t, dir, "push", "-q", "origin", "HEAD:refs/heads/main")
	config, err := os.ReadFile(filepath.Join(dir, ".sluice", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var logs [3]bytes.Buffer
	var workers [3]*exec.Cmd
	var clones [3]string
	startWorker := func(i int) {
		clones[i] = filepath.Join(t.TempDir(), "clone")
		gitIn(t, dir, "clone", "-q", bare, clones[i])
		if err := os.MkdirAll(filepath.Join(clones[i], ".sluice"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(clones[i], ".sluice", "config.yaml"), config, 0o644); err != nil {
			t.Fatal(err)
		}
		workers[i] = te.worker(t, clones[i], "clones", &logs[i], "--remote", "origin")
	}
	startWorker(0)
	startWorker(1)
	run := te.start(t, dir, append(append([]string{"run", "--yes", "--jobs", "4", "--heartbeat-timeout", "3s", "--remote", "origin"}, te.flags("clones")...), demo.Goal)...)
	killed, _ := te.killMidDelegation(t, dir, workers[:2], run)
	t.Logf("killed the worker in a clone running %s", killed)
	// A fresh clone joins, so two workers share the rest of the run and a
	// task's stages land on different clones.
	startWorker(2)
	run.wait(t, &logs[0], &logs[1], &logs[2])
	branch := runBranch(t, dir)
	if got := gitTree(t, dir, branch); got != te.want {
		t.Fatalf("the run branch in the starter's repository has tree %s, want %s (local engine)\n%s", got, te.want, run.out.String())
	}
	runID := strings.TrimPrefix(branch, "sluice/")
	worked := 0
	for _, c := range clones[1:] {
		// Each worker kept its copy of the run in its own clone, never in
		// the starter's repository.
		if _, err := os.Stat(filepath.Join(c, ".sluice", "worktrees", runID, "_run", "meta.json")); err == nil {
			worked++
		}
	}
	if worked != 2 {
		t.Fatalf("%d of the two surviving workers' clones hold a copy of the run; both should have worked in their own clone", worked)
	}
	runDir := filepath.Join(dir, ".sluice", "runs", runID)
	for _, f := range []string{"artifacts/baseline.json", "transcripts/task_t1_a1_execute.jsonl", "artifacts/final_gates.json"} {
		if _, err := os.Stat(filepath.Join(runDir, f)); err != nil {
			t.Errorf("the starter's run directory lacks %s, which a worker in a clone wrote: %v", f, err)
		}
	}
	checkNoCompletedDelegationRepeated(t, dir, te.srv.Requests())
	status, err := te.command(dir, "status").CombinedOutput()
	if err != nil || !strings.Contains(string(status), "done  phase complete") {
		t.Fatalf("sluice status on the run worked in clones: %v\n%s", err, status)
	}
	// Once collected, the remote keeps the run branch and nothing else of
	// the run.
	refs, err := exec.Command("git", "-C", bare, "for-each-ref", "--format=%(refname)").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range strings.Fields(string(refs)) {
		if strings.Contains(ref, runID) && ref != "refs/heads/"+branch {
			t.Errorf("the remote still has %s after the run was collected", ref)
		}
	}
	if !strings.Contains(string(refs), "refs/heads/"+branch+"\n") {
		t.Errorf("the remote lost the run branch %s:\n%s", branch, refs)
	}
}

// liveActivity: a task's entries reach the journal only when its child
// workflow returns, so the starter shows what the child is doing as the
// live view's activity on the task's first action, or a running task would
// look silent (and soon stalled) until then.
func (te *temporalE2E) liveActivity(t *testing.T) {
	dir := te.sample(t)
	te.worker(t, dir, "live", io.Discard)
	getenv := func(k string) string {
		for _, kv := range te.env {
			if name, v, ok := strings.Cut(kv, "="); ok && name == k {
				return v
			}
		}
		return ""
	}
	var mu sync.Mutex
	seen := map[string][]string{}
	res, err := sluicerun.Start(context.Background(), sluicerun.Options{
		Root: dir, Goal: demo.Goal, Jobs: 4, Yes: true, Getenv: getenv, Environ: te.env,
		Engine:   sluicerun.EngineTemporal,
		Temporal: sluicerun.TemporalOptions{HostPort: te.hostPort, TaskQueue: "live"},
		Activity: func(a local.Activity) {
			mu.Lock()
			defer mu.Unlock()
			if a.Tool != "" {
				seen[a.ActionID] = append(seen[a.ActionID], a.Tool)
			}
		},
	})
	if err != nil || res.State.Status != loop.StatusDone {
		t.Fatalf("the run: %v (%+v)", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	inside := 0
	for id, tools := range seen {
		for _, tool := range tools {
			if strings.HasSuffix(id, "/worktree") && strings.HasPrefix(tool, strings.TrimSuffix(id, "worktree")) && !strings.HasSuffix(tool, "/worktree") {
				inside++
			}
		}
	}
	if inside == 0 {
		t.Fatalf("no activity named a stage run inside a task's child workflow; activity seen: %v", seen)
	}
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// timeLimitResumed: a run paused by its time limit (the workflow is
// cancelled) resumes on the temporal engine to the same tree, with the
// workflow continuing as new along the way.
func (te *temporalE2E) timeLimitResumed(t *testing.T) {
	dir := te.sample(t)
	te.worker(t, dir, "paused", io.Discard)
	first, err := te.command(dir, append(append([]string{"run", "--yes", "--jobs", "4", "--timeout", "3s"}, te.flags("paused")...), demo.Goal)...).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(string(first), "time limit of 3s ran out") {
		t.Fatalf("want the run paused by its time limit (exit 3): %v\n%s", err, first)
	}
	// A small history bound makes the resumed workflow continue as new a
	// few times; the starter follows the chain.
	second, err := te.command(dir, append([]string{"resume", "--yes", "--continue-after", "12"}, te.flags("paused")...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("resume on the temporal engine: %v\n%s", err, second)
	}
	if got := gitTree(t, dir, runBranch(t, dir)); got != te.want {
		t.Fatalf("the resumed temporal run's branch tree is %s, want %s\n%s", got, te.want, second)
	}
	if n := runsOf(t, te.c, "sluice-"+strings.TrimPrefix(runBranch(t, dir), "sluice/")); n < 3 {
		t.Fatalf("the run's workflow had %d runs; with --continue-after 12 it should continue as new", n)
	}
}

// killedStarter: the process that started the workflow is SIGKILLed while
// the workflow runs. A local resume is refused (the workflow still drives
// the run); a resume on the temporal engine re-attaches to the running
// workflow rather than starting a second one, journals what it missed, and
// the run ends with the local engine's tree and a journal that folds to the
// workflow's result.
func (te *temporalE2E) killedStarter(t *testing.T) {
	dir := te.sample(t)
	te.worker(t, dir, "reattach", io.Discard)
	run := te.start(t, dir, append(append([]string{"run", "--yes", "--jobs", "4"}, te.flags("reattach")...), demo.Goal)...)
	run.until(t, "t1's executor was journaled", func() bool {
		logs, _ := filepath.Glob(filepath.Join(dir, ".sluice", "runs", "*", "log.jsonl"))
		if len(logs) == 0 {
			return false
		}
		data, _ := os.ReadFile(logs[0])
		return bytes.Contains(data, []byte(`"task/t1/a1/execute"`))
	})
	_ = syscall.Kill(-run.cmd.Process.Pid, syscall.SIGKILL)
	<-run.done

	status, err := te.command(dir, "status").CombinedOutput()
	if err != nil || !strings.Contains(string(status), "no sluice process follows the workflow") || !strings.Contains(string(status), "--task-queue reattach") {
		t.Fatalf("sluice status after the starter was killed: want a note on re-attaching; got %v\n%s", err, status)
	}
	local, err := te.command(dir, "resume").CombinedOutput()
	if err == nil || !strings.Contains(string(local), "re-attaches to the workflow") {
		t.Fatalf("a local resume of a run its workflow still drives: want it refused, naming the temporal resume; got %v\n%s", err, local)
	}
	again, err := te.command(dir, append([]string{"resume"}, te.flags("reattach")...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("resume on the temporal engine after the starter was killed: %v\n%s", err, again)
	}
	if !strings.Contains(string(again), "re-attached to workflow") {
		t.Fatalf("the resume did not re-attach to the running workflow:\n%s", again)
	}
	if got := gitTree(t, dir, runBranch(t, dir)); got != te.want {
		t.Fatalf("the re-attached run's branch tree is %s, want %s\n%s", got, te.want, again)
	}
	if n := runsOf(t, te.c, "sluice-"+strings.TrimPrefix(runBranch(t, dir), "sluice/")); n != 1 {
		t.Fatalf("the run's workflow had %d runs; re-attaching must not start another", n)
	}
	status, err = te.command(dir, "status").CombinedOutput()
	if err != nil || !strings.Contains(string(status), "done  phase complete") || strings.Contains(string(status), "no sluice process follows") {
		t.Fatalf("sluice status on the re-attached run: %v\n%s", err, status)
	}
}

// startsOf counts the attempts of activity id that started, from the
// workflow's history.
func startsOf(t *testing.T, c client.Client, workflowID, id string) int {
	t.Helper()
	scheduled := map[int64]string{}
	n := 0
	it := c.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			scheduled[ev.GetEventId()] = a.GetActivityId()
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] == id {
			n = int(a.GetAttempt())
		}
	}
	return n
}

// runsOf counts the runs of a workflow id (its first start, its resumes
// and the runs it continued as new into).
func runsOf(t *testing.T, c client.Client, workflowID string) int {
	t.Helper()
	resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = %q", workflowID)})
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.GetExecutions())
}
