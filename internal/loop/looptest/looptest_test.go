package looptest

import (
	"testing"

	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/plan"
)

// TestOutputsCarryARunToTheEnd: the reducer, fed these outputs for every
// delegation and success for every other action, merges every task of the
// plan and ends the run done.
func TestOutputsCarryARunToTheEnd(t *testing.T) {
	p := &plan.Plan{Tasks: []plan.Task{
		{ID: "t1", FilesToModify: []string{"a.go"}, AcceptanceCriteria: []string{"ok"}},
		{ID: "t2", FilesToModify: []string{"b.go"}, AcceptanceCriteria: []string{"ok"}, DependsOn: []string{"t1"}},
	}}
	s := loop.New("r1", loop.Settings{Goal: "g", ResearchPasses: 1, CriticMaxIterations: 3, TaskRetries: 2, Jobs: 2, AutoApprove: true})
	for steps := 0; s.Status == loop.StatusRunning; steps++ {
		next := loop.Next(s)
		if len(next) == 0 || steps > 100 {
			t.Fatalf("stuck in phase %s: %+v", s.Phase, s.InFlight)
		}
		for _, a := range next {
			s = loop.Issue(s, a)
			ev := loop.Event{ActionID: a.ID}
			switch a.Type {
			case loop.ActBaseline:
				ev.Type = loop.EvBaselineDone
			case loop.ActWorktree:
				ev.Type = loop.EvWorktreeReady
			case loop.ActGates:
				ev.Type, ev.Passed, ev.Changed = loop.EvGatesEvaluated, true, []string{a.TaskID + ".go"}
			case loop.ActMerge:
				ev.Type = loop.EvMerged
			case loop.ActFinalVerify:
				ev.Type, ev.Passed = loop.EvFinalVerified, true
			case loop.ActDelegate:
				ev.Type, ev.Output = loop.EvDelegationDone, Output(a.Role, p)
			}
			s = loop.Apply(s, ev)
		}
	}
	if s.Status != loop.StatusDone || s.Tasks["t1"].Status != loop.TaskMerged || s.Tasks["t2"].Status != loop.TaskMerged {
		t.Fatalf("status %s (%s), tasks %+v %+v", s.Status, s.Reason, s.Tasks["t1"], s.Tasks["t2"])
	}
}
