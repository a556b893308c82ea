// Package loop is the heart of sluice: the development loop as a pure
// reducer. Next says what should happen now; Issue and Apply fold what was
// started and what came back into the state. There is no I/O, no clock and no
// goroutine in this package, so the loop is deterministic, replayable from its
// journal, and testable without a model, git or a disk.
package loop

import (
	"encoding/json"

	"github.com/sluice-run/sluice/internal/plan"
)

// Phase is the loop's phase (seed 001).
type Phase string

const (
	PhaseInit     Phase = "init"
	PhaseResearch Phase = "research"
	PhasePlan     Phase = "plan"
	PhaseCritique Phase = "critique"
	PhaseApproval Phase = "approval"
	PhaseExecute  Phase = "execute"
	PhaseVerify   Phase = "verify"
	PhaseComplete Phase = "complete"
)

// Status is whether the run is moving.
type Status string

const (
	StatusRunning Status = "running"
	// StatusPaused: waiting for the user (budget, approval); resume continues.
	StatusPaused Status = "paused"
	StatusDone   Status = "done"
	// StatusFailed: the run ended and not everything was merged.
	StatusFailed Status = "failed"
)

// TaskStatus is where a task is.
type TaskStatus string

const (
	TaskPending TaskStatus = "pending"
	TaskRunning TaskStatus = "running"
	TaskMerged  TaskStatus = "merged"
	TaskFailed  TaskStatus = "failed"
	TaskSkipped TaskStatus = "skipped"
)

// Stage is the step a running task is at, in order.
type Stage string

const (
	StageWorktree Stage = "worktree"
	StageExecute  Stage = "execute"
	StageGates    Stage = "gates"
	StageReview   Stage = "review"
	StageVerify   Stage = "verify"
	StageMerge    Stage = "merge"
)

// Settings are the run's knobs, fixed at start (budgets may grow on resume).
type Settings struct {
	Goal                string `json:"goal"`
	ResearchPasses      int    `json:"research_passes"`
	CriticMaxIterations int    `json:"critic_max_iterations"`
	TaskRetries         int    `json:"task_retries"`
	// OnCriticExhausted is "ask" or "proceed".
	OnCriticExhausted string `json:"on_critic_exhausted"`
	Jobs              int    `json:"jobs"`
	// Schedule is "dag" or "waves".
	Schedule    string `json:"schedule"`
	Depth       string `json:"depth"`
	AutoApprove bool   `json:"auto_approve"`
	Budget      Budget `json:"budget"`
	// Capabilities are the ids of the capabilities active for the run,
	// frozen at start so a resume composes the same prompts.
	Capabilities []string `json:"capabilities,omitempty"`
	// DesignSpec runs a design-spec delegation after every plan (the
	// design-spec capability's plan:post contribution).
	DesignSpec bool `json:"design_spec,omitempty"`
	// GatePoints are the run-level extension points at which capabilities
	// declare gates; the loop fires each one (ActPoint) when it is reached.
	GatePoints []string `json:"gate_points,omitempty"`
}

// Budget limits the whole run. Zero means unlimited.
type Budget struct {
	Tokens int64   `json:"tokens,omitempty"`
	USD    float64 `json:"usd,omitempty"`
}

// Usage is what the run has spent.
type Usage struct {
	Tokens  int64   `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
	Calls   int     `json:"calls"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{Tokens: u.Tokens + o.Tokens, CostUSD: u.CostUSD + o.CostUSD, Calls: u.Calls + o.Calls}
}

// Failure is why an attempt failed; it is handed to the next attempt as
// previous_failure (seed 001).
type Failure struct {
	Attempt          int      `json:"attempt_number"`
	Stage            Stage    `json:"stage"`
	Report           string   `json:"failure_report"`
	SpecificFailures []string `json:"specific_failures,omitempty"`
	FixInstructions  string   `json:"fix_instructions,omitempty"`
}

// GateSummary is one quality-gate outcome as the loop keeps it.
type GateSummary struct {
	Name       string `json:"name"`
	Command    string `json:"command"`
	Passed     bool   `json:"passed"`
	Skipped    bool   `json:"skipped,omitempty"`
	Note       string `json:"note,omitempty"`
	OutputTail string `json:"output_tail,omitempty"`
}

// TaskState is one task's progress.
type TaskState struct {
	ID       string     `json:"id"`
	Status   TaskStatus `json:"status"`
	Stage    Stage      `json:"stage,omitempty"`
	Attempt  int        `json:"attempt"`
	Wave     int        `json:"wave"`
	Base     string     `json:"base,omitempty"`
	Branch   string     `json:"branch,omitempty"`
	Worktree string     `json:"worktree,omitempty"`
	Head     string     `json:"head,omitempty"`
	Changed  []string   `json:"changed,omitempty"`
	Merged   string     `json:"merged,omitempty"`
	// Executor is the last executor result, handed to the verifier.
	Executor        json.RawMessage `json:"executor,omitempty"`
	Gates           []GateSummary   `json:"gates,omitempty"`
	Review          json.RawMessage `json:"review,omitempty"`
	PreviousFailure *Failure        `json:"previous_failure,omitempty"`
	Failures        []Failure       `json:"failures,omitempty"`
	Reason          string          `json:"reason,omitempty"`
	Risks           []string        `json:"risks,omitempty"`
	Usage           Usage           `json:"usage"`
}

// State is everything the loop knows. It is a value: Issue and Apply return
// a new State and never change the one they are given.
type State struct {
	RunID    string   `json:"run_id"`
	Settings Settings `json:"settings"`
	Phase    Phase    `json:"phase"`
	Status   Status   `json:"status"`
	// Reason says why the run is paused, failed or done.
	Reason string `json:"reason,omitempty"`

	BaselineDone   bool   `json:"baseline_done"`
	BaselineReport string `json:"baseline_report,omitempty"`

	ResearchPasses  int             `json:"research_passes"`
	ResearchRetried bool            `json:"research_retried,omitempty"`
	Research        json.RawMessage `json:"research,omitempty"`

	Plan        *plan.Plan `json:"plan,omitempty"`
	PlanVersion int        `json:"plan_version"`
	// Critiques is the critique history; the last one drives a revision.
	Critiques []plan.Critique `json:"critiques,omitempty"`
	Approved  bool            `json:"approved"`
	// DesignSpecVersion is the plan version the last design spec was
	// written for.
	DesignSpecVersion int `json:"design_spec_version,omitempty"`

	Tasks map[string]*TaskState `json:"tasks,omitempty"`
	// Order is the plan's task order, for deterministic scheduling.
	Order []string `json:"order,omitempty"`

	FinalDone   bool          `json:"final_done"`
	FinalPassed bool          `json:"final_passed"`
	FinalGates  []GateSummary `json:"final_gates,omitempty"`
	FinalReport string        `json:"final_report,omitempty"`

	// Fired lists the extension-point firings done, by action id
	// ("point/research:post", "point/execute:wave:pre/w1").
	Fired []string `json:"fired,omitempty"`
	// Ending holds the run's final status while the complete point fires.
	Ending *Ending `json:"ending,omitempty"`

	// InFlight holds actions issued and not yet answered, by id.
	InFlight map[string]Action `json:"in_flight,omitempty"`

	Usage       Usage            `json:"usage"`
	UsageByRole map[string]Usage `json:"usage_by_role,omitempty"`
}

// ActionType is the kind of work an action asks for.
type ActionType string

const (
	// ActBaseline evaluates every command gate on the base commit (T0).
	ActBaseline ActionType = "baseline"
	// ActDelegate runs one agent delegation.
	ActDelegate ActionType = "delegate"
	// ActAsk asks the user to approve the plan.
	ActAsk ActionType = "ask"
	// ActWorktree prepares a task's worktree on the integration head.
	ActWorktree ActionType = "worktree"
	// ActGates commits a task's worktree and evaluates its quality gates.
	ActGates ActionType = "gates"
	// ActMerge merges a task's branch onto the integration branch.
	ActMerge ActionType = "merge"
	// ActFinalVerify runs the full gates on the merged integration branch.
	ActFinalVerify ActionType = "final_verify"
	// ActPoint fires a run-level extension point: its capability gates run.
	ActPoint ActionType = "point"
)

// Ending is how a run ends, kept while the complete point fires.
type Ending struct {
	Status Status `json:"status"`
	Reason string `json:"reason"`
}

// Agent roles the loop delegates to.
const (
	RoleResearcher   = "researcher"
	RolePlanner      = "planner"
	RoleCritic       = "critic"
	RoleExecutor     = "executor"
	RoleVerifier     = "verifier"
	RoleCodeReviewer = "code-reviewer"
	RoleDesignSpec   = "design-spec"
)

// Action is a request for work. Its ID is derived from the state (phase,
// task, attempt, iteration), never from a clock, so replays are exact.
type Action struct {
	ID        string     `json:"id"`
	Type      ActionType `json:"type"`
	Role      string     `json:"role,omitempty"`
	TaskID    string     `json:"task_id,omitempty"`
	Attempt   int        `json:"attempt,omitempty"`
	Iteration int        `json:"iteration,omitempty"`
	Pass      int        `json:"pass,omitempty"`
	Depth     string     `json:"depth,omitempty"`
	Branch    string     `json:"branch,omitempty"`
	Question  string     `json:"question,omitempty"`
	// Point is the extension point an ActPoint fires.
	Point string `json:"point,omitempty"`
}

// EventType is the kind of outcome an event reports.
type EventType string

const (
	EvBaselineDone    EventType = "baseline_done"
	EvDelegationDone  EventType = "delegation_done"
	EvDelegationFail  EventType = "delegation_failed"
	EvUserAnswered    EventType = "user_answered"
	EvWorktreeReady   EventType = "worktree_ready"
	EvGatesEvaluated  EventType = "gates_evaluated"
	EvMerged          EventType = "merged"
	EvMergeConflict   EventType = "merge_conflict"
	EvFinalVerified   EventType = "final_verified"
	EvPointFired      EventType = "point_fired"
	EvPaused          EventType = "paused"
	EvResumed         EventType = "resumed"
	EvActionError     EventType = "action_error"
	EvBudgetExhausted EventType = "budget_exhausted"
)

// Failure reasons that mean "interrupted, do it again later" rather than
// "the attempt failed".
const (
	ReasonBudget    = "budget"
	ReasonCancelled = "cancelled"
)

// Event is the outcome of an action (ActionID set), or a run-level
// occurrence such as a pause or a resume (ActionID empty).
type Event struct {
	ActionID string    `json:"action_id,omitempty"`
	Type     EventType `json:"type"`

	// Delegations.
	Output json.RawMessage `json:"output,omitempty"`
	Usage  Usage           `json:"usage,omitzero"`
	Reason string          `json:"reason,omitempty"`
	Detail string          `json:"detail,omitempty"`

	// Worktrees, gates and merges.
	Base     string        `json:"base,omitempty"`
	Branch   string        `json:"branch,omitempty"`
	Worktree string        `json:"worktree,omitempty"`
	Head     string        `json:"head,omitempty"`
	Changed  []string      `json:"changed,omitempty"`
	Passed   bool          `json:"passed,omitempty"`
	Gates    []GateSummary `json:"gates,omitempty"`
	Files    []string      `json:"files,omitempty"`

	// User answers.
	Approve bool `json:"approve,omitempty"`

	// Resume may raise the budget.
	Budget *Budget `json:"budget,omitempty"`
}
