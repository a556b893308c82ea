package delegate

import (
	"fmt"
	"strings"

	"github.com/sluice-run/sluice/internal/plan"
)

// Check runs the semantic checks a schema cannot express on a decoded result
// (a pointer or value of the role's type) and returns a *ValidationError
// listing every problem, or nil. task is the task the delegation was about;
// executor and verifier results are checked against its acceptance criteria
// and need it.
func Check(role string, out any, task *plan.Task) error {
	if _, err := Contract(role); err != nil {
		return err
	}
	var probs []string
	switch role {
	case RoleExecutor:
		o, ok := asExecutor(out)
		if !ok {
			return typeMismatch(role, out)
		}
		if task == nil {
			return fmt.Errorf("check %s result: no task given to check the acceptance criteria against", role)
		}
		probs = checkExecutor(o, task)
	case RoleVerifier:
		o, ok := asVerifier(out)
		if !ok {
			return typeMismatch(role, out)
		}
		if task == nil {
			return fmt.Errorf("check %s result: no task given to check the acceptance criteria against", role)
		}
		probs = checkVerifier(o, task)
	case RolePlanner:
		o, ok := asPlanner(out)
		if !ok {
			return typeMismatch(role, out)
		}
		probs = checkPlanner(o)
	case RoleCritic:
		o, ok := asCritic(out)
		if !ok {
			return typeMismatch(role, out)
		}
		probs = checkCritic(o)
	case RoleCodeReviewer, RoleLinting:
		o, ok := asReview(out)
		if !ok {
			return typeMismatch(role, out)
		}
		probs = checkReview(o)
	case RoleResearcher:
		if _, ok := out.(*ResearchOutput); !ok {
			if _, ok := out.(ResearchOutput); !ok {
				return typeMismatch(role, out)
			}
		}
	default:
		if _, ok := out.(*SpecialistOutput); !ok {
			if _, ok := out.(SpecialistOutput); !ok {
				return typeMismatch(role, out)
			}
		}
	}
	if len(probs) == 0 {
		return nil
	}
	return &ValidationError{Role: role, Problems: probs}
}

func typeMismatch(role string, out any) error {
	return fmt.Errorf("check %s result: got %T, which is not that role's output type", role, out)
}

// normalize collapses runs of whitespace, so a criterion re-wrapped or
// re-indented by a model still matches the task's text.
func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// checkCriteria confirms that every acceptance criterion of task has exactly
// one confirmation with evidence, and names the missing ones by text.
func checkCriteria(field string, got []Confirmation, task *plan.Task) []string {
	var probs []string
	want := make(map[string]bool, len(task.AcceptanceCriteria))
	for _, c := range task.AcceptanceCriteria {
		want[normalize(c)] = true
	}
	seen := make(map[string]bool, len(got))
	for i, c := range got {
		n := normalize(c.Criterion)
		switch {
		case !want[n]:
			probs = append(probs, fmt.Sprintf("%s[%d]: %q is not an acceptance criterion of task %s; copy each criterion's text verbatim", field, i, c.Criterion, task.ID))
		case seen[n]:
			probs = append(probs, fmt.Sprintf("%s[%d]: criterion %q is confirmed more than once", field, i, c.Criterion))
		}
		seen[n] = true
		if want[n] && strings.TrimSpace(c.Evidence) == "" {
			probs = append(probs, fmt.Sprintf("%s[%d]: criterion %q has no evidence", field, i, c.Criterion))
		}
	}
	for _, c := range task.AcceptanceCriteria {
		if !seen[normalize(c)] {
			probs = append(probs, fmt.Sprintf("%s: acceptance criterion %q is not confirmed", field, c))
		}
	}
	return probs
}

func checkExecutor(o *ExecutorOutput, task *plan.Task) []string {
	probs := checkCriteria("acceptance_criteria_confirmation", o.AcceptanceCriteriaConfirmation, task)
	if o.Status == StatusComplete {
		for _, c := range o.AcceptanceCriteriaConfirmation {
			if !c.Met {
				probs = append(probs, fmt.Sprintf("status is COMPLETE but criterion %q is not met; fix it or report PARTIAL", c.Criterion))
			}
		}
	}
	return probs
}

func checkVerifier(o *VerifierOutput, task *plan.Task) []string {
	probs := checkCriteria("criteria", o.Criteria, task)
	switch o.Verdict {
	case VerdictPass:
		for _, c := range o.Criteria {
			if !c.Met {
				probs = append(probs, fmt.Sprintf("verdict is PASS but criterion %q is not met; a PASS needs every criterion met", c.Criterion))
			}
		}
		if len(o.Failures) > 0 {
			probs = append(probs, fmt.Sprintf("verdict is PASS but %d failures are listed", len(o.Failures)))
		}
	case VerdictFail:
		if len(o.Failures) == 0 {
			probs = append(probs, "verdict is FAIL but failures is empty; name each failure")
		}
		if strings.TrimSpace(o.FixInstructions) == "" {
			probs = append(probs, "verdict is FAIL but fix_instructions is empty; say how to fix it")
		}
	}
	return probs
}

func checkPlanner(o *PlannerOutput) []string {
	var probs []string
	if o.TaskCount != len(o.Plan.Tasks) {
		probs = append(probs, fmt.Sprintf("task_count is %d but the plan has %d tasks", o.TaskCount, len(o.Plan.Tasks)))
	}
	for _, p := range plan.Validate(&o.Plan) {
		probs = append(probs, "plan: "+p.Error())
	}
	return probs
}

func checkCritic(o *CriticOutput) []string {
	var probs []string
	switch o.Verdict {
	case VerdictRevise:
		if strings.TrimSpace(o.Objection) == "" {
			probs = append(probs, "verdict is REVISE but objection is empty; state your strongest objection")
		}
	case VerdictApprove:
		if o.EndGameSynthesis == nil {
			probs = append(probs, "verdict is APPROVE but end_game_synthesis is missing")
		}
	}
	return probs
}

func checkReview(o *ReviewOutput) []string {
	var probs []string
	switch o.Verdict {
	case VerdictChangesRequested:
		if len(o.Findings) == 0 {
			probs = append(probs, "verdict is CHANGES_REQUESTED but findings is empty")
		}
	case VerdictApprove:
		for i, f := range o.Findings {
			if f.Severity == SeverityBlocking {
				probs = append(probs, fmt.Sprintf("verdict is APPROVE but findings[%d] is blocking", i))
			}
		}
	}
	return probs
}

func asExecutor(v any) (*ExecutorOutput, bool) {
	switch o := v.(type) {
	case *ExecutorOutput:
		return o, o != nil
	case ExecutorOutput:
		return &o, true
	}
	return nil, false
}

func asVerifier(v any) (*VerifierOutput, bool) {
	switch o := v.(type) {
	case *VerifierOutput:
		return o, o != nil
	case VerifierOutput:
		return &o, true
	}
	return nil, false
}

func asPlanner(v any) (*PlannerOutput, bool) {
	switch o := v.(type) {
	case *PlannerOutput:
		return o, o != nil
	case PlannerOutput:
		return &o, true
	}
	return nil, false
}

func asCritic(v any) (*CriticOutput, bool) {
	switch o := v.(type) {
	case *CriticOutput:
		return o, o != nil
	case CriticOutput:
		return &o, true
	}
	return nil, false
}

func asReview(v any) (*ReviewOutput, bool) {
	switch o := v.(type) {
	case *ReviewOutput:
		return o, o != nil
	case ReviewOutput:
		return &o, true
	}
	return nil, false
}
