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
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/sluice-run/sluice/internal/demo"
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

// TestTemporalEngineSurvivesAKilledWorker runs the demo plan as a Temporal
// workflow on a real dev server with two `sluice worker` processes, kills
// the one running a task's delegation (SIGKILL), and checks that
// the delegation is retried on the other worker, that no delegation whose
// completion was journaled is sent again, that the run ends with the same
// run-branch tree as the local engine, and that status reads the run
// directory the starter wrote.
func TestTemporalEngineSurvivesAKilledWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal dev server and runs the demo twice; skipped with -short")
	}
	srv := startDevServer(t)
	hostPort, c := srv.FrontendHostPort(), srv.Client()
	e := newE2E(t, demo.Script())

	ref := t.TempDir()
	if err := demo.WriteSample(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	if out, err := e.command(ref, "run", "--yes", "--jobs", "4", demo.Goal).CombinedOutput(); err != nil {
		t.Fatalf("local run: %v\n%s", err, out)
	}
	want := gitTree(t, ref, runBranch(t, ref))

	dir := t.TempDir()
	if err := demo.WriteSample(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	var logs [2]bytes.Buffer
	var workers [2]*exec.Cmd
	for i := range workers {
		w := e.command(dir, "worker", "--temporal", hostPort)
		w.Stdout, w.Stderr = &logs[i], &logs[i]
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		workers[i] = w
		t.Cleanup(func() {
			_ = syscall.Kill(-w.Process.Pid, syscall.SIGKILL)
			_ = w.Wait()
		})
	}

	run := e.command(dir, "run", "--yes", "--jobs", "4", "--engine", "temporal", "--temporal", hostPort, "--heartbeat-timeout", "3s", demo.Goal)
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run.Wait() }()

	// Kill the worker that is running one of a task's delegations.
	var killedAction, workflowID string
	deadline := time.After(5 * time.Minute)
	for killedAction == "" {
		select {
		case err := <-done:
			t.Fatalf("the run ended before a worker could be killed mid-delegation (err %v):\n%s", err, out.String())
		case <-deadline:
			t.Fatalf("no task delegation started within 5 minutes:\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
		runs, _ := filepath.Glob(filepath.Join(dir, ".sluice", "runs", "*", "meta.json"))
		if len(runs) == 0 {
			continue
		}
		workflowID = "sluice-" + filepath.Base(filepath.Dir(runs[0]))
		desc, err := c.DescribeWorkflowExecution(context.Background(), workflowID, "")
		if err != nil {
			continue
		}
		for _, pa := range desc.GetPendingActivities() {
			id := pa.GetActivityId()
			delegation := strings.HasSuffix(id, "/execute") || strings.HasSuffix(id, "/review") || strings.HasSuffix(id, "/verify")
			if !strings.HasPrefix(id, "task/") || !delegation || pa.GetState() != enumspb.PENDING_ACTIVITY_STATE_STARTED {
				continue
			}
			pid, _, _ := strings.Cut(pa.GetLastWorkerIdentity(), "@")
			for _, w := range workers {
				if strconv.Itoa(w.Process.Pid) == pid {
					_ = syscall.Kill(-w.Process.Pid, syscall.SIGKILL)
					killedAction = pa.GetActivityId()
				}
			}
			if killedAction != "" {
				break
			}
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the temporal run failed after a worker was killed: %v\n%s\nworker 2:\n%s", err, out.String(), logs[1].String())
		}
	case <-time.After(5 * time.Minute):
		_ = syscall.Kill(-run.Process.Pid, syscall.SIGKILL)
		t.Fatalf("the temporal run did not finish within 5 minutes after the kill:\n%s\nworker 2:\n%s", out.String(), logs[1].String())
	}
	if got := gitTree(t, dir, runBranch(t, dir)); got != want {
		t.Fatalf("the temporal run's branch tree is %s, want %s (local engine)\n%s", got, want, out.String())
	}
	t.Logf("killed the worker running %s", killedAction)
	if n := startsOf(t, c, workflowID, killedAction); n < 2 {
		t.Fatalf("the delegation %s, whose worker was killed, started %d times; want a retry on the other worker", killedAction, n)
	}
	checkNoCompletedDelegationRepeated(t, dir, e.srv.Requests())
	status, err := e.command(dir, "status").CombinedOutput()
	if err != nil || !strings.Contains(string(status), "done  phase complete") {
		t.Fatalf("sluice status on the temporal run: %v\n%s", err, status)
	}

	// A run paused by its time limit (the workflow is cancelled) resumes
	// on the temporal engine to the same tree, on its own task queue, with
	// the workflow continuing as new along the way.
	paused := t.TempDir()
	if err := demo.WriteSample(context.Background(), paused); err != nil {
		t.Fatal(err)
	}
	w := e.command(paused, "worker", "--temporal", hostPort, "--task-queue", "paused")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-w.Process.Pid, syscall.SIGKILL)
		_ = w.Wait()
	})
	flags := []string{"--engine", "temporal", "--temporal", hostPort, "--task-queue", "paused"}
	first, err := e.command(paused, append(append([]string{"run", "--yes", "--jobs", "4", "--timeout", "3s"}, flags...), demo.Goal)...).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(string(first), "time limit of 3s ran out") {
		t.Fatalf("want the run paused by its time limit (exit 3): %v\n%s", err, first)
	}
	// A small history bound makes the resumed workflow continue as new a
	// few times; the starter follows the chain.
	second, err := e.command(paused, append([]string{"resume", "--yes", "--continue-after", "12"}, flags...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("resume on the temporal engine: %v\n%s", err, second)
	}
	if got := gitTree(t, paused, runBranch(t, paused)); got != want {
		t.Fatalf("the resumed temporal run's branch tree is %s, want %s\n%s", got, want, second)
	}
	if n := runsOf(t, c, "sluice-"+strings.TrimPrefix(runBranch(t, paused), "sluice/")); n < 3 {
		t.Fatalf("the run's workflow had %d runs; with --continue-after 12 it should continue as new", n)
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
