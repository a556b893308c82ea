package run

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/sluice-run/sluice/internal/engine"
	"github.com/sluice-run/sluice/internal/engine/temporal"
	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/store"
)

// oneWorkflow is a Temporal service holding one workflow (a single run,
// no continue-as-new) whose journal is entries.
type oneWorkflow struct {
	client.Client // nil: calls other than these would panic
	offset        int
	status        enumspb.WorkflowExecutionStatus
	entries       []loop.Entry
	missing       bool
}

func (w *oneWorkflow) DescribeWorkflowExecution(context.Context, string, string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	if w.missing {
		return nil, serviceerror.NewNotFound("workflow not found")
	}
	memo, _ := converter.GetDefaultDataConverter().ToPayload(w.offset)
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Status:     w.status,
		FirstRunId: "run-1",
		Memo:       &commonpb.Memo{Fields: map[string]*commonpb.Payload{memoOffset: memo}},
	}}, nil
}

func (w *oneWorkflow) QueryWorkflow(_ context.Context, _, _ string, _ string, args ...any) (converter.EncodedValue, error) {
	from := args[0].(int)
	return jsonValue{temporal.JournalPage{Entries: w.entries[from:], Next: len(w.entries)}}, nil
}

type jsonValue struct{ v any }

func (j jsonValue) HasValue() bool { return true }
func (j jsonValue) Get(ptr any) error {
	b, err := json.Marshal(j.v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, ptr)
}

// TestReattachCountsTheJournalFromTheWorkflowsOffset: a starter that died
// after journaling some of a workflow's entries leaves the journal at
// Offset plus what it read; the next one reads only the rest, and knows
// the journal's new length, which the next workflow's Offset must be.
func TestReattachCountsTheJournalFromTheWorkflowsOffset(t *testing.T) {
	ctx := context.Background()
	now := func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }
	settings := loop.Settings{Goal: "g", ResearchPasses: 1, Jobs: 1, AutoApprove: true}
	// The workflow's own entries: the baseline and the first research pass.
	baseline := loop.Action{ID: "baseline", Type: loop.ActBaseline}
	research := loop.Action{ID: "research/p1", Type: loop.ActDelegate, Role: loop.RoleResearcher, Pass: 1}
	wfEntries := []loop.Entry{
		{Action: &baseline},
		{Event: &loop.Event{ActionID: "baseline", Type: loop.EvBaselineDone}},
		{Action: &research},
		{Event: &loop.Event{ActionID: "research/p1", Type: loop.EvDelegationDone, Output: json.RawMessage(`{"summary":"ok"}`)}},
	}
	// Before the workflow: one entry of the starter's own (a resume).
	before := []loop.Entry{{Event: &loop.Event{Type: loop.EvResumed}}}
	const offset = 1

	for _, tc := range []struct {
		name string
		// read is how many of the workflow's entries the dead starter
		// journaled.
		read        int
		svc         *oneWorkflow
		wantRunning bool
		// wantLength is the journal's length after re-attaching.
		wantLength int
	}{
		{"running, half read", 2, &oneWorkflow{offset: offset, status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, entries: wfEntries}, true, offset + 4},
		{"ended, none read", 0, &oneWorkflow{offset: offset, status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, entries: wfEntries}, false, offset + 4},
		{"ended, all read", 4, &oneWorkflow{offset: offset, status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, entries: wfEntries}, false, offset + 4},
		{"never started", 0, &oneWorkflow{missing: true}, false, offset},
		{"gone from Temporal after it ran", 2, &oneWorkflow{missing: true}, false, offset + 2},
		{"an older workflow of the run", 0, &oneWorkflow{offset: 7, status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, entries: wfEntries}, false, offset},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := store.Create(t.TempDir(), "r1")
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			j := &journal{run: st}
			s := loop.New("r1", settings)
			for _, e := range append(append([]loop.Entry(nil), before...), wfEntries[:tc.read]...) {
				if err := j.Record(e, now()); err != nil {
					t.Fatal(err)
				}
				s = loop.Fold(s, []loop.Entry{e})
			}
			journaled := len(before) + tc.read
			var notes []string
			opts := Options{Notice: func(n string) { notes = append(notes, n) }}
			f := &follower{c: tc.svc, wid: "sluice-r1", eng: &engine.Engine{Journal: j, Now: now}, j: j, s: s, opts: opts, asked: map[string]bool{}}
			att := Attachment{WorkflowID: "sluice-r1", Offset: offset, Following: true}
			running, err := f.reattach(ctx, att, journaled)
			if err != nil {
				t.Fatal(err)
			}
			if running != tc.wantRunning {
				t.Fatalf("running %v, want %v", running, tc.wantRunning)
			}
			if gone := tc.svc.missing && tc.read > 0; gone != (len(notes) == 1) {
				t.Fatalf("notices %q: want one only when a workflow that ran is gone", notes)
			}
			if got := f.journaled(att, journaled); got != tc.wantLength {
				t.Fatalf("the journal's length after re-attaching: %d, want %d", got, tc.wantLength)
			}
			recs, _, err := store.ReadRecords(st.Dir())
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != tc.wantLength {
				t.Fatalf("the journal holds %d records, want %d (nothing read twice, nothing missed)", len(recs), tc.wantLength)
			}
			entries, err := Entries(recs)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := stateJSON(loop.Fold(loop.New("r1", settings), entries)), stateJSON(f.s); got != want {
				t.Fatal("the follower's state is not the fold of the journal")
			}
		})
	}
}
