// Package delegate composes what each agent is told and defines what it must
// hand back: the delegation messages of seed 001 and the output contract of
// every role, as Go types, JSON schemas and semantic checks.
package delegate

import "github.com/sluice-run/sluice/internal/plan"

// Agent roles. Every delegation names one.
const (
	RoleResearcher   = "researcher"
	RolePlanner      = "planner"
	RoleCritic       = "critic"
	RoleExecutor     = "executor"
	RoleVerifier     = "verifier"
	RoleCodeReviewer = "code-reviewer"
	RoleArchitect    = "architect"
	RoleTestDesigner = "test-designer"
	RoleDesignSpec   = "design-spec"
	RoleLinting      = "linting"
)

// Roles lists every agent role in a fixed order.
func Roles() []string {
	return []string{
		RoleResearcher, RolePlanner, RoleCritic, RoleExecutor, RoleVerifier,
		RoleCodeReviewer, RoleArchitect, RoleTestDesigner, RoleDesignSpec, RoleLinting,
	}
}

// ResearchOutput is the researcher's research_output.
type ResearchOutput struct {
	ContextMap      ContextMap `json:"context_map" yaml:"context_map"`
	Findings        Findings   `json:"findings" yaml:"findings"`
	PassesCompleted int        `json:"passes_completed" yaml:"passes_completed"`
	Confidence      string     `json:"confidence" yaml:"confidence"` // low | medium | high
}

// ContextMap is what the researcher found in the code: the files that
// matter and the patterns to follow.
type ContextMap struct {
	PrimaryFiles      []PrimaryFile `json:"primary_files" yaml:"primary_files"`
	SecondaryFiles    []FileRole    `json:"secondary_files,omitempty" yaml:"secondary_files,omitempty"`
	TestFiles         []TestFile    `json:"test_files,omitempty" yaml:"test_files,omitempty"`
	PatternsToFollow  []Pattern     `json:"patterns_to_follow,omitempty" yaml:"patterns_to_follow,omitempty"`
	SuggestedSequence []string      `json:"suggested_sequence,omitempty" yaml:"suggested_sequence,omitempty"`
}

// PrimaryFile is a file the feature will touch or build on.
type PrimaryFile struct {
	Path       string   `json:"path" yaml:"path"`
	Role       string   `json:"role" yaml:"role"`
	KeyExports []string `json:"key_exports,omitempty" yaml:"key_exports,omitempty"`
}

// FileRole is a file of secondary interest and why.
type FileRole struct {
	Path string `json:"path" yaml:"path"`
	Role string `json:"role" yaml:"role"`
}

// TestFile is a test file and what it covers.
type TestFile struct {
	Path     string `json:"path" yaml:"path"`
	Coverage string `json:"coverage,omitempty" yaml:"coverage,omitempty"`
}

// Pattern is a convention of the codebase with an example of it.
type Pattern struct {
	Pattern     string `json:"pattern" yaml:"pattern"`
	ExampleFile string `json:"example_file" yaml:"example_file"`
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
}

// Findings are the researcher's conclusions.
type Findings struct {
	ArchitectureNotes string   `json:"architecture_notes" yaml:"architecture_notes"`
	Dependencies      []string `json:"dependencies,omitempty" yaml:"dependencies,omitempty"`
	Constraints       []string `json:"constraints,omitempty" yaml:"constraints,omitempty"`
	Risks             []string `json:"risks,omitempty" yaml:"risks,omitempty"`
}

// PlannerOutput is the planner's planner_output. Unlike seed 001, agents
// never write shared files, so the planner returns the plan itself and the
// orchestrator writes plan.yaml.
type PlannerOutput struct {
	Plan                 plan.Plan `json:"plan" yaml:"plan"`
	TaskCount            int       `json:"task_count" yaml:"task_count"`
	EstimatedTotalEffort string    `json:"estimated_total_effort" yaml:"estimated_total_effort"`
	CriticalRisks        []string  `json:"critical_risks" yaml:"critical_risks"`
}

// Critic verdicts.
const (
	VerdictApprove = "APPROVE"
	VerdictRevise  = "REVISE"
)

// CriticOutput is the critic's critic_output.
type CriticOutput struct {
	Verdict                 string                  `json:"verdict" yaml:"verdict"`
	Objection               string                  `json:"objection,omitempty" yaml:"objection,omitempty"`
	ObjectionCategory       string                  `json:"objection_category,omitempty" yaml:"objection_category,omitempty"`
	Severity                string                  `json:"severity,omitempty" yaml:"severity,omitempty"`
	SuggestedFix            string                  `json:"suggested_fix,omitempty" yaml:"suggested_fix,omitempty"`
	SpecificationCompliance SpecificationCompliance `json:"specification_compliance" yaml:"specification_compliance"`
	EndGameSynthesis        *EndGameSynthesis       `json:"end_game_synthesis,omitempty" yaml:"end_game_synthesis,omitempty"`
}

// SpecificationCompliance says whether the plan honours the user's request.
type SpecificationCompliance struct {
	Compliant  bool     `json:"compliant" yaml:"compliant"`
	Violations []string `json:"violations,omitempty" yaml:"violations,omitempty"`
}

// EndGameSynthesis is the critic's closing judgement, given on APPROVE.
type EndGameSynthesis struct {
	ResilienceVerdict        string   `json:"resilience_verdict" yaml:"resilience_verdict"` // robust | acceptable | fragile
	StrongestArguments       []string `json:"strongest_arguments,omitempty" yaml:"strongest_arguments,omitempty"`
	RemainingVulnerabilities []string `json:"remaining_vulnerabilities,omitempty" yaml:"remaining_vulnerabilities,omitempty"`
	OverallAssessment        string   `json:"overall_assessment" yaml:"overall_assessment"`
}

// Executor statuses.
const (
	StatusComplete = "COMPLETE"
	StatusPartial  = "PARTIAL"
	StatusBlocked  = "BLOCKED"
)

// ExecutorOutput is the executor's executor_output.
type ExecutorOutput struct {
	Status                         string         `json:"status" yaml:"status"`
	FilesModified                  []string       `json:"files_modified" yaml:"files_modified"`
	FilesDeleted                   []string       `json:"files_deleted,omitempty" yaml:"files_deleted,omitempty"`
	AcceptanceCriteriaConfirmation []Confirmation `json:"acceptance_criteria_confirmation" yaml:"acceptance_criteria_confirmation"`
	Summary                        string         `json:"summary" yaml:"summary"`
	Warnings                       []string       `json:"warnings,omitempty" yaml:"warnings,omitempty"`
}

// Confirmation is one acceptance criterion, whether it is met, and the
// evidence for it.
type Confirmation struct {
	Criterion string `json:"criterion" yaml:"criterion"`
	Met       bool   `json:"met" yaml:"met"`
	Evidence  string `json:"evidence" yaml:"evidence"`
}

// Verifier verdicts.
const (
	VerdictPass = "PASS"
	VerdictFail = "FAIL"
)

// VerifierOutput is the verifier's verifier_output.
type VerifierOutput struct {
	Verdict         string         `json:"verdict" yaml:"verdict"`
	Criteria        []Confirmation `json:"criteria" yaml:"criteria"`
	Failures        []string       `json:"failures" yaml:"failures"`
	FixInstructions string         `json:"fix_instructions" yaml:"fix_instructions"`
	ReviewDepth     string         `json:"review_depth,omitempty" yaml:"review_depth,omitempty"`
}

// Review verdicts.
const (
	VerdictChangesRequested = "CHANGES_REQUESTED"
)

// Finding severities.
const (
	SeverityBlocking = "blocking"
	SeverityMajor    = "major"
	SeverityMinor    = "minor"
)

// ReviewOutput is what the code-reviewer (the adversarial phase of the
// implementer → integrator arrow) and the linting specialist return.
type ReviewOutput struct {
	Verdict  string    `json:"verdict" yaml:"verdict"` // APPROVE | CHANGES_REQUESTED
	Findings []Finding `json:"findings" yaml:"findings"`
	Summary  string    `json:"summary,omitempty" yaml:"summary,omitempty"`
}

// Finding is one problem a reviewer found.
type Finding struct {
	Severity     string `json:"severity" yaml:"severity"`
	File         string `json:"file" yaml:"file"`
	Line         int    `json:"line,omitempty" yaml:"line,omitempty"`
	Issue        string `json:"issue" yaml:"issue"`
	SuggestedFix string `json:"suggested_fix,omitempty" yaml:"suggested_fix,omitempty"`
}

// SpecialistOutput is what the architect, test-designer and design-spec
// specialists return: a Markdown document and a summary of it.
type SpecialistOutput struct {
	Document string `json:"document" yaml:"document"`
	Summary  string `json:"summary" yaml:"summary"`
}
