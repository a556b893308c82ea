package delegate

// Reason is why a delegation failed (agloop's failure vocabulary). The agent
// runtime, the reducer and the journal all use these exact strings.
type Reason string

const (
	// ReasonInvalidResult: the result failed validation, and again after the one repair request.
	ReasonInvalidResult Reason = "invalid_result"
	// ReasonNoResult: the agent ended its turn without submitting a result.
	ReasonNoResult Reason = "no_result"
	// ReasonMaxTurns: the delegation used every turn it was allowed.
	ReasonMaxTurns Reason = "max_turns"
	// ReasonTokenLimit: the conversation outgrew the model's context or output limit.
	ReasonTokenLimit Reason = "token_limit"
	// ReasonDeadline: the delegation ran past its wall-clock limit.
	ReasonDeadline Reason = "deadline"
	// ReasonBudget: the run's shared token, cost or time budget is spent.
	ReasonBudget Reason = "budget"
	// ReasonModelError: the model API failed after its retries.
	ReasonModelError Reason = "model_error"
	// ReasonCancelled: the run was interrupted (signal or caller); re-issued on resume without counting as a retry.
	ReasonCancelled Reason = "cancelled"
	// ReasonGateFailed: a quality gate (format, lint, typecheck, test) failed on the task's worktree.
	ReasonGateFailed Reason = "gate_failed"
	// ReasonVerificationFailed: the verifier returned FAIL or did not confirm every acceptance criterion.
	ReasonVerificationFailed Reason = "verification_failed"
	// ReasonMergeConflict: the task's branch did not merge onto the run branch.
	ReasonMergeConflict Reason = "merge_conflict"
)

// Reasons lists every failure reason in a fixed order.
func Reasons() []Reason {
	return []Reason{
		ReasonInvalidResult, ReasonNoResult, ReasonMaxTurns, ReasonTokenLimit, ReasonDeadline,
		ReasonBudget, ReasonModelError, ReasonCancelled, ReasonGateFailed,
		ReasonVerificationFailed, ReasonMergeConflict,
	}
}

// Meaning is a one-line explanation of the reason for people, or "" for a
// string that is not in the vocabulary.
func (r Reason) Meaning() string {
	switch r {
	case ReasonInvalidResult:
		return "the result failed validation, and again after one repair request"
	case ReasonNoResult:
		return "the agent ended without submitting a result"
	case ReasonMaxTurns:
		return "the delegation used every turn it was allowed"
	case ReasonTokenLimit:
		return "the conversation outgrew the model's context or output limit"
	case ReasonDeadline:
		return "the delegation ran past its time limit"
	case ReasonBudget:
		return "the run's token, cost or time budget is spent"
	case ReasonModelError:
		return "the model API failed after retries"
	case ReasonCancelled:
		return "the run was interrupted; the delegation is re-issued on resume"
	case ReasonGateFailed:
		return "a quality gate failed on the task's worktree"
	case ReasonVerificationFailed:
		return "the verifier did not pass every acceptance criterion"
	case ReasonMergeConflict:
		return "the task's branch conflicts with the run branch"
	}
	return ""
}

// Valid reports whether r is in the vocabulary.
func (r Reason) Valid() bool { return r.Meaning() != "" }
