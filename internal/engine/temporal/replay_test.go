package temporal

import (
	"context"
	"go/build"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/plan"
)

// Recorded histories of a real dev server run: a three-task plan with two
// jobs, an approval by signal, a delegation whose first attempt was
// interrupted (retried by Temporal) and a task whose gates failed once
// (retried by the reducer). Regenerate the last two, after a deliberate
// change guarded by workflow.GetVersion, with
//
//	SLUICE_RECORD_HISTORY=1 go test -run TestRecordHistory ./internal/engine/temporal
const (
	// activitiesHistory is the run workflow's history from before task
	// children (TaskChildChange): every task stage is an activity of the
	// run. It cannot be recorded again; it guards the old path.
	activitiesHistory = "testdata/run_history_activities.json"
	// childrenHistory is the run workflow's history with a child per task.
	childrenHistory = "testdata/run_history_children.json"
	// taskHistory is the history of the child of the task whose gates
	// failed once: both of its attempts ran in it.
	taskHistory = "testdata/task_history.json"
	// recordedTask is the task, and recordedChild the child workflow id,
	// of taskHistory.
	recordedTask  = "t1"
	recordedChild = "sluice-record/task/t1/a1/worktree"
)

func newReplayer(t *testing.T, run, task any) worker.WorkflowReplayer {
	t.Helper()
	// The converter sluice's clients use, so a recorded history with a
	// compressed payload replays too.
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: DataConverter()})
	if err != nil {
		t.Fatal(err)
	}
	r.RegisterWorkflowWithOptions(run, workflow.RegisterOptions{Name: WorkflowName})
	r.RegisterWorkflowWithOptions(task, workflow.RegisterOptions{Name: TaskWorkflowName})
	return r
}

func quietLogger() tlog.Logger {
	return tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// replay replays a recorded history under its recorded workflow id, which
// the run workflow derives its children's ids from.
func replay(t *testing.T, r worker.WorkflowReplayer, file string) error {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatalf("read the history %s: %v", file, err)
	}
	id := hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowId()
	return r.ReplayWorkflowHistoryWithOptions(quietLogger(), hist, worker.ReplayWorkflowHistoryOptions{
		OriginalExecution: workflow.Execution{ID: id},
	})
}

// TestReplayRecordedHistory is the determinism guard: the workflows, with
// today's reducer, must replay the recorded histories command for command.
// A change to loop.Next or loop.Apply that would change what a running
// workflow does fails here.
func TestReplayRecordedHistory(t *testing.T) {
	for _, file := range []string{activitiesHistory, childrenHistory, taskHistory} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			if err := replay(t, newReplayer(t, RunWorkflow, TaskWorkflow), file); err != nil {
				t.Fatalf("the workflow no longer replays its recorded history %s (a non-deterministic change to the reducer or the workflow?): %v", file, err)
			}
		})
	}
}

// TestReplayCatchesAChangedSchedule: the guard can fail. A run workflow
// that schedules differently (one job instead of two) does not replay
// either run history, and a task workflow that skips the review does not
// replay the task's history.
func TestReplayCatchesAChangedSchedule(t *testing.T) {
	oneJob := func(ctx workflow.Context, in RunInput) (loop.State, error) {
		in.Settings.Jobs = 1
		if in.State != nil {
			in.State.Settings.Jobs = 1
		}
		return RunWorkflow(ctx, in)
	}
	noReview := func(ctx workflow.Context, in TaskInput) (TaskResult, error) {
		in.View.Settings.Depth = plan.DepthLightweight
		return TaskWorkflow(ctx, in)
	}
	for _, c := range []struct {
		file string
		r    worker.WorkflowReplayer
	}{
		{activitiesHistory, newReplayer(t, oneJob, TaskWorkflow)},
		{childrenHistory, newReplayer(t, oneJob, TaskWorkflow)},
		{taskHistory, newReplayer(t, RunWorkflow, noReview)},
	} {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			err := replay(t, c.r, c.file)
			if err == nil {
				t.Fatal("a workflow that schedules differently replayed the recorded history")
			}
			// TMPRL1100 is the SDK's code for non-deterministic workflow code.
			if msg := err.Error(); !strings.Contains(msg, "TMPRL1100") && !strings.Contains(strings.ToLower(msg), "nondetermin") {
				t.Fatalf("want a non-determinism error, got %v", err)
			}
		})
	}
}

func temporalCLI(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("temporal"); err == nil {
		return p
	}
	p := filepath.Join(build.Default.GOPATH, "bin", "temporal")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	t.Skip("the temporal CLI is not installed (go install github.com/temporalio/cli/cmd/temporal@v1.5.1)")
	return ""
}

// TestRecordHistory records childrenHistory and taskHistory from a run on a
// real dev server.
func TestRecordHistory(t *testing.T) {
	if os.Getenv("SLUICE_RECORD_HISTORY") == "" {
		t.Skip("set SLUICE_RECORD_HISTORY=1 to record " + childrenHistory + " and " + taskHistory)
	}
	ctx := context.Background()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath:  temporalCLI(t),
		LogLevel:      "error",
		Stdout:        io.Discard,
		Stderr:        io.Discard,
		ClientOptions: &client.Options{Namespace: "default", Logger: quietLogger(), DataConverter: DataConverter()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c := srv.Client()

	x := newStub(chainPlan(3))
	x.failGates = map[string]map[int]bool{"t1": {1: true}}
	x.interruptOnce = "task/t0/a1/execute"
	w := worker.New(c, "record", worker.Options{})
	Register(w, &Activities{Source: stubSource{x}})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	set := testSettings(2)
	set.AutoApprove = false
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "sluice-record", TaskQueue: "record"}, WorkflowName,
		RunInput{RunID: "record", Settings: set, WaitForApproval: true, Timeouts: Timeouts{Heartbeat: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		v, err := c.QueryWorkflow(ctx, run.GetID(), run.GetRunID(), QueryStatus)
		if err != nil {
			t.Fatal(err)
		}
		var s loop.State
		if err := v.Get(&s); err != nil {
			t.Fatal(err)
		}
		if len(s.InFlight) == 1 && s.Phase == loop.PhaseApproval {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := c.SignalWorkflow(ctx, run.GetID(), run.GetRunID(), SignalApprove, Approval{Approve: true}); err != nil {
		t.Fatal(err)
	}
	var s loop.State
	if err := run.Get(ctx, &s); err != nil || s.Status != loop.StatusDone {
		t.Fatalf("recorded run: status %s (%s), err %v", s.Status, s.Reason, err)
	}
	n := saveHistory(ctx, t, c, run.GetID(), run.GetRunID(), childrenHistory)
	t.Logf("recorded %d events of the run workflow into %s", n, childrenHistory)
	n = saveHistory(ctx, t, c, recordedChild, "", taskHistory)
	t.Logf("recorded %d events of task %s's workflow into %s", n, recordedTask, taskHistory)
}

// saveHistory writes a workflow's history as JSON and says how many events
// it holds.
func saveHistory(ctx context.Context, t *testing.T, c client.Client, id, runID, file string) int {
	t.Helper()
	hist := &historypb.History{}
	it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		hist.Events = append(hist.Events, ev)
	}
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	return len(hist.Events)
}
