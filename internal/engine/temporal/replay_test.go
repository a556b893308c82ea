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
)

// historyFile is a recorded history of RunWorkflow on a real dev server:
// a three-task plan with two jobs, an approval by signal, a delegation whose
// first attempt was interrupted (retried by Temporal) and a task whose
// gates failed once (retried by the reducer). Regenerate it, after a
// deliberate reducer change guarded by workflow.GetVersion, with
//
//	SLUICE_RECORD_HISTORY=1 go test -run TestRecordHistory ./internal/engine/temporal
const historyFile = "testdata/run_history.json"

func quietLogger() tlog.Logger {
	return tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// TestReplayRecordedHistory is the determinism guard: the workflow, with
// today's reducer, must replay the recorded history command for command. A
// change to loop.Next or loop.Apply that would change what a running
// workflow does fails here.
func TestReplayRecordedHistory(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(RunWorkflow, workflow.RegisterOptions{Name: WorkflowName})
	if err := r.ReplayWorkflowHistoryFromJSONFile(quietLogger(), historyFile); err != nil {
		t.Fatalf("the workflow no longer replays its recorded history (a non-deterministic change to the reducer or the workflow?): %v", err)
	}
}

// TestReplayCatchesAChangedSchedule: the guard can fail. A workflow that
// schedules differently (one job instead of two) does not replay.
func TestReplayCatchesAChangedSchedule(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	changed := func(ctx workflow.Context, in RunInput) (loop.State, error) {
		in.Settings.Jobs = 1
		if in.State != nil {
			in.State.Settings.Jobs = 1
		}
		return RunWorkflow(ctx, in)
	}
	r.RegisterWorkflowWithOptions(changed, workflow.RegisterOptions{Name: WorkflowName})
	err := r.ReplayWorkflowHistoryFromJSONFile(quietLogger(), historyFile)
	if err == nil {
		t.Fatal("a workflow that schedules tasks differently replayed the recorded history")
	}
	// TMPRL1100 is the SDK's code for non-deterministic workflow code.
	if msg := err.Error(); !strings.Contains(msg, "TMPRL1100") && !strings.Contains(strings.ToLower(msg), "nondetermin") {
		t.Fatalf("want a non-determinism error, got %v", err)
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

// TestRecordHistory records historyFile from a run on a real dev server.
func TestRecordHistory(t *testing.T) {
	if os.Getenv("SLUICE_RECORD_HISTORY") == "" {
		t.Skip("set SLUICE_RECORD_HISTORY=1 to record " + historyFile)
	}
	ctx := context.Background()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath:  temporalCLI(t),
		LogLevel:      "error",
		Stdout:        io.Discard,
		Stderr:        io.Discard,
		ClientOptions: &client.Options{Namespace: "default", Logger: quietLogger()},
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
	hist := &historypb.History{}
	it := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
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
	if err := os.MkdirAll(filepath.Dir(historyFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(historyFile, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d events into %s", len(hist.Events), historyFile)
}
