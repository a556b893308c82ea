package local

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/sluice-run/sluice/internal/delegate"
	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/plan"
)

// maxDiffBytes bounds the diff handed to a reviewer or verifier; they can
// read the worktree for more.
const maxDiffBytes = 24 << 10

var complexityOf = map[int]string{1: "simple", 2: "medium", 3: "complex"}

func taskOf(s loop.State, id string) *plan.Task {
	if id == "" || s.Plan == nil {
		return nil
	}
	t, _ := s.Plan.Task(id)
	return t
}

// compose builds the delegation message for an action from the state.
func (x *Executor) compose(ctx context.Context, s loop.State, a loop.Action, root string) (string, error) {
	in := delegate.Input{
		Role:          a.Role,
		TaskID:        a.TaskID,
		FeatureName:   s.Settings.Goal,
		StateSummary:  loop.Summary(s, a.TaskID),
		RunDir:        filepath.Join(".sluice", "runs", x.RunID),
		WorkspaceRoot: root,
		Task:          taskOf(s, a.TaskID),
	}
	var research delegate.ResearchOutput
	if len(s.Research) > 0 && json.Unmarshal(s.Research, &research) == nil {
		in.Research = &research
		in.FeatureDescription = research.Findings.ArchitectureNotes
	}
	switch a.Role {
	case loop.RoleResearcher:
		passes := s.Settings.ResearchPasses
		if s.ResearchRetried && passes < 3 {
			passes++ // a retried research runs at a higher complexity
		}
		in.Complexity = complexityOf[passes]
		if in.Complexity == "" {
			in.Complexity = "complex"
		}
	case loop.RolePlanner:
		if n := len(s.Critiques); n > 0 {
			c := s.Critiques[n-1]
			in.RevisionFeedback = &delegate.RevisionFeedback{
				Iteration:         c.Iteration,
				Objection:         c.Objection,
				ObjectionCategory: c.Category,
				Severity:          c.Severity,
				SuggestedFix:      c.SuggestedFix,
				PreviousPlan:      s.Plan,
			}
		}
	case loop.RoleDesignSpec:
		in.Plan = s.Plan
	case loop.RoleCritic:
		in.Plan = s.Plan
		in.Iteration = a.Iteration
		in.MaxIterations = s.Settings.CriticMaxIterations
		in.PreviousObjections = s.Critiques
	case loop.RoleExecutor:
		if f := s.Tasks[a.TaskID].PreviousFailure; f != nil {
			in.PreviousFailure = &delegate.PreviousFailure{
				AttemptNumber:    f.Attempt + 1,
				FailureReport:    f.Report,
				SpecificFailures: f.SpecificFailures,
				FixInstructions:  f.FixInstructions,
			}
		}
	case loop.RoleVerifier, loop.RoleCodeReviewer:
		t := s.Tasks[a.TaskID]
		var out delegate.ExecutorOutput
		if len(t.Executor) > 0 && json.Unmarshal(t.Executor, &out) == nil {
			in.ExecutorResult = &out
		}
		for _, g := range t.Gates {
			in.GateResults = append(in.GateResults, delegate.GateSummary{Name: g.Name, Command: g.Command, Passed: g.Passed, OutputTail: g.OutputTail})
		}
		in.ReviewDepth = a.Depth
		diff, err := x.Repo.Diff(ctx, t.Worktree, t.Base, maxDiffBytes)
		if err != nil {
			return "", fmt.Errorf("diff of task %s: %w", a.TaskID, err)
		}
		in.Diff = diff
	}
	return delegate.Compose(in)
}
