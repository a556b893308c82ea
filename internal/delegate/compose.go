package delegate

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-run/sluice/internal/plan"
)

// Loop phases (seed 001) named in current_phase.
const (
	PhaseResearch = "research"
	PhasePlan     = "plan"
	PhaseCritique = "critique"
	PhaseExecute  = "execute"
	PhaseVerify   = "verify"
)

// Input is everything a delegation message is composed from. Only the
// fields the role uses need to be set; Compose says which are missing.
type Input struct {
	Role   string
	TaskID string // defaults to Task.ID; empty (null) during research, plan and critique
	// FeatureName is the user's request, passed on verbatim.
	FeatureName        string
	FeatureDescription string
	Phase              string // defaults to the role's phase
	StateSummary       string // e.g. "Phase: execute, Task: task-003 (2/7 done)"
	// RunDir is the run directory (e.g. ".sluice/runs/<id>"); plan_path,
	// state_path and log_path point into it.
	RunDir string

	// Task is the task of an executor, verifier, code-reviewer, linting or
	// test-designer delegation.
	Task *plan.Task
	// Research is the researcher's output, passed to later roles.
	Research *ResearchOutput
	// Plan is the plan under critique or review.
	Plan        *plan.Plan
	Constraints []string

	// Researcher.
	Complexity    string // simple | medium | complex
	FocusAreas    []string
	KnownPatterns []string
	WorkspaceRoot string

	// Planner.
	RevisionFeedback *RevisionFeedback

	// Critic.
	Iteration          int
	MaxIterations      int
	PreviousObjections []plan.Critique

	// Executor.
	PreviousFailure *PreviousFailure

	// Verifier, code-reviewer, linting.
	ExecutorResult *ExecutorOutput
	GateResults    []GateSummary
	ReviewDepth    string // defaults to Task.ReviewDepth, then standard
	Diff           string
}

// RevisionFeedback is what the planner gets back from the critic on a
// revision. The previous plan travels inline: agents cannot read the run
// directory.
type RevisionFeedback struct {
	Iteration         int        `yaml:"iteration"`
	Objection         string     `yaml:"objection"`
	ObjectionCategory string     `yaml:"objection_category,omitempty"`
	Severity          string     `yaml:"severity,omitempty"`
	SuggestedFix      string     `yaml:"suggested_fix"`
	PreviousPlan      *plan.Plan `yaml:"previous_plan,omitempty"`
}

// PreviousFailure is what a fresh-context executor retry is told about the
// attempt before it.
type PreviousFailure struct {
	AttemptNumber    int      `yaml:"attempt_number"`
	FailureReport    string   `yaml:"failure_report"`
	SpecificFailures []string `yaml:"specific_failures"`
	FixInstructions  string   `yaml:"fix_instructions"`
}

// GateSummary is the outcome of one quality gate the orchestrator ran on a
// task's worktree.
type GateSummary struct {
	Name       string `yaml:"name"`
	Command    string `yaml:"command"`
	Passed     bool   `yaml:"passed"`
	OutputTail string `yaml:"output_tail,omitempty"`
}

// AntiLazinessChecklist is seed 001's checklist, verbatim. It goes into every
// executor and verifier delegation.
const AntiLazinessChecklist = `## Anti-Laziness Enforcement

You MUST satisfy ALL of the following. Partial work is NOT acceptable.

- [ ] DO NOT leave any TODO comments in the code
- [ ] DO NOT use placeholder implementations or stub functions
- [ ] DO NOT skip any acceptance criterion — confirm each one individually
- [ ] DO NOT return until every requirement is fully implemented
- [ ] You MUST create or modify ALL files listed in files_to_modify
- [ ] You MUST handle ALL error cases, not just the happy path
- [ ] You MUST follow existing codebase patterns (from context_map)
- [ ] You MUST use the specified technologies — do NOT substitute alternatives
- [ ] You MUST NOT use any forbidden patterns listed in specification_adherence
- [ ] Confirm each acceptance criterion with evidence before returning RESULT
`

// RolePhase is the loop phase a role works in.
func RolePhase(role string) string {
	switch role {
	case RoleResearcher:
		return PhaseResearch
	case RolePlanner, RoleArchitect, RoleDesignSpec:
		return PhasePlan
	case RoleCritic:
		return PhaseCritique
	case RoleExecutor, RoleTestDesigner:
		return PhaseExecute
	}
	return PhaseVerify
}

// ErrIncompleteInput is returned by Compose when a field the role needs is
// missing.
var ErrIncompleteInput = errors.New("incomplete delegation input")

// Compose returns the delegation message, the first user message of a
// delegation: base_params, the role's params, and for executor and verifier
// the anti-laziness checklist and specification adherence (seed 001's four
// parts), then how to hand back the result. The same input always gives the
// same bytes.
func Compose(in Input) (string, error) {
	contract, err := Contract(in.Role)
	if err != nil {
		return "", err
	}
	if err := checkInput(in); err != nil {
		return "", err
	}
	taskID := in.TaskID
	if taskID == "" && in.Task != nil {
		taskID = in.Task.ID
	}
	phase := in.Phase
	if phase == "" {
		phase = RolePhase(in.Role)
	}
	summary := in.StateSummary
	if summary == "" {
		summary = "Phase: " + phase
	}
	runDir := filepath.ToSlash(in.RunDir)

	var b bytes.Buffer
	if taskID != "" {
		fmt.Fprintf(&b, "# Delegation: %s, task %s\n\n", in.Role, taskID)
	} else {
		fmt.Fprintf(&b, "# Delegation: %s\n\n", in.Role)
	}

	base := baseParams{
		FeatureName:         in.FeatureName,
		FeatureDescription:  in.FeatureDescription,
		CurrentPhase:        phase,
		CurrentStateSummary: summary,
		PlanPath:            path.Join(runDir, "plan.yaml"),
		StatePath:           path.Join(runDir, "state.json"),
		LogPath:             path.Join(runDir, "log.jsonl"),
	}
	if taskID != "" {
		base.TaskID = &taskID
	}
	if err := section(&b, "Base Parameters", struct {
		V baseParams `yaml:"base_params"`
	}{base}); err != nil {
		return "", err
	}
	if err := section(&b, "Agent-Specific Parameters", roleParams(in)); err != nil {
		return "", err
	}
	if in.Role == RoleExecutor || in.Role == RoleVerifier {
		b.WriteString("# --- Anti-Laziness Checklist ---\n")
		if in.Role == RoleVerifier {
			b.WriteString("The executor was held to this checklist. Check every item against the code; a violation is a FAIL.\n\n")
		}
		b.WriteString(AntiLazinessChecklist)
		if extra := taskEnforcement(in.Task); extra != "" {
			b.WriteString("\n### Task-Specific Enforcement\n\n")
			b.WriteString(extra)
		}
		b.WriteString("\n")
	}
	if in.Task != nil && in.Role != RolePlanner && in.Role != RoleCritic {
		if err := section(&b, "Specification Adherence", struct {
			V specAdherence `yaml:"specification_adherence"`
		}{specOf(in.Task)}); err != nil {
			return "", err
		}
	}
	b.WriteString("# --- Result ---\n")
	b.WriteString(resultInstruction(in.Role, contract))
	return b.String(), nil
}

func checkInput(in Input) error {
	var missing []string
	if in.FeatureName == "" {
		missing = append(missing, "FeatureName (the user's request)")
	}
	if in.RunDir == "" {
		missing = append(missing, "RunDir")
	}
	switch in.Role {
	case RoleExecutor, RoleVerifier, RoleCodeReviewer, RoleLinting, RoleTestDesigner:
		if in.Task == nil {
			missing = append(missing, "Task")
		} else if len(in.Task.AcceptanceCriteria) == 0 {
			return fmt.Errorf("%w: %s delegation for task %q: the task has no acceptance criteria; give it at least one", ErrIncompleteInput, in.Role, in.Task.ID)
		}
	case RoleCritic:
		if in.Plan == nil {
			missing = append(missing, "Plan (the plan under critique)")
		}
	}
	if in.Role == RoleVerifier && in.ExecutorResult == nil {
		missing = append(missing, "ExecutorResult (what the verifier checks)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s delegation needs %s", ErrIncompleteInput, in.Role, strings.Join(missing, ", "))
	}
	return nil
}

type baseParams struct {
	TaskID              *string `yaml:"task_id"`
	FeatureName         string  `yaml:"feature_name"`
	FeatureDescription  string  `yaml:"feature_description"`
	CurrentPhase        string  `yaml:"current_phase"`
	CurrentStateSummary string  `yaml:"current_state_summary"`
	PlanPath            string  `yaml:"plan_path"`
	StatePath           string  `yaml:"state_path"`
	LogPath             string  `yaml:"log_path"`
}

type taskDefinition struct {
	ID                 string     `yaml:"id"`
	Title              string     `yaml:"title"`
	Description        string     `yaml:"description"`
	DependsOn          []string   `yaml:"depends_on,omitempty"`
	FilesToModify      []string   `yaml:"files_to_modify"`
	FilesToRead        []string   `yaml:"files_to_read"`
	AcceptanceCriteria []verbatim `yaml:"acceptance_criteria"`
	EstimatedEffort    string     `yaml:"estimated_effort,omitempty"`
}

// verbatim is text an agent must copy back exactly (an acceptance
// criterion). Where plain YAML would need quotes, and so escapes that a
// model might copy (” for '), it prints as a literal block instead.
type verbatim string

func (v verbatim) MarshalYAML() (any, error) {
	plain, err := yaml.Marshal(string(v))
	if err != nil {
		return nil, err
	}
	if c := plain[0]; c != '\'' && c != '"' {
		return string(v), nil
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(v), Style: yaml.LiteralStyle}, nil
}

func taskDef(t *plan.Task) *taskDefinition {
	if t == nil {
		return nil
	}
	return &taskDefinition{
		ID: t.ID, Title: t.Title, Description: t.Description, DependsOn: t.DependsOn,
		FilesToModify: orEmpty(t.FilesToModify), FilesToRead: orEmpty(t.FilesToRead),
		AcceptanceCriteria: verbatims(t.AcceptanceCriteria), EstimatedEffort: t.EstimatedEffort,
	}
}

func verbatims(ss []string) []verbatim {
	out := make([]verbatim, len(ss))
	for i, s := range ss {
		out[i] = verbatim(s)
	}
	return out
}

type specAdherence struct {
	RequiredPatterns  []string `yaml:"required_patterns"`
	ForbiddenPatterns []string `yaml:"forbidden_patterns"`
	TechChoices       []string `yaml:"tech_choices"`
}

func specOf(t *plan.Task) specAdherence {
	s := t.SpecificationAdherence
	return specAdherence{orEmpty(s.RequiredPatterns), orEmpty(s.ForbiddenPatterns), orEmpty(s.TechChoices)}
}

// orEmpty makes a nil list print as [] rather than null, so an agent reads
// "none" rather than "unknown".
func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

type researcherParams struct {
	ComplexityLevel string   `yaml:"complexity_level"`
	FocusAreas      []string `yaml:"focus_areas"`
	KnownPatterns   []string `yaml:"known_patterns"`
	WorkspaceRoot   string   `yaml:"workspace_root"`
}

type plannerParams struct {
	ResearchFindings *ResearchOutput   `yaml:"research_findings"`
	Constraints      []string          `yaml:"constraints"`
	RevisionFeedback *RevisionFeedback `yaml:"revision_feedback"`
}

type criticParams struct {
	IterationNumber    int             `yaml:"iteration_number"`
	MaxIterations      int             `yaml:"max_iterations"`
	PreviousObjections []plan.Critique `yaml:"previous_objections"`
	FeatureName        string          `yaml:"feature_name"`
	ResearchFindings   *ResearchOutput `yaml:"research_findings"`
	Plan               *plan.Plan      `yaml:"plan"`
}

type executorParams struct {
	TaskDefinition  *taskDefinition  `yaml:"task_definition"`
	ContextMap      *ContextMap      `yaml:"context_map"`
	PreviousFailure *PreviousFailure `yaml:"previous_failure"`
}

type verifierParams struct {
	TaskDefinition *taskDefinition `yaml:"task_definition"`
	ExecutorResult *ExecutorOutput `yaml:"executor_result"`
	ReviewDepth    string          `yaml:"review_depth"`
	GateResults    []GateSummary   `yaml:"gate_results"`
}

type reviewerParams struct {
	TaskDefinition *taskDefinition `yaml:"task_definition"`
	ExecutorResult *ExecutorOutput `yaml:"executor_result,omitempty"`
	ReviewDepth    string          `yaml:"review_depth"`
	GateResults    []GateSummary   `yaml:"gate_results,omitempty"`
	Diff           string          `yaml:"diff,omitempty"`
}

type testDesignerParams struct {
	TaskDefinition *taskDefinition `yaml:"task_definition"`
	ContextMap     *ContextMap     `yaml:"context_map"`
}

type designParams struct {
	ResearchFindings *ResearchOutput `yaml:"research_findings"`
	Constraints      []string        `yaml:"constraints"`
	Plan             *plan.Plan      `yaml:"plan,omitempty"`
}

// roleParams returns the agent-specific parameters, as a one-key value named
// "<role>_params".
func roleParams(in Input) any {
	depth := in.ReviewDepth
	if depth == "" && in.Task != nil {
		depth = in.Task.ReviewDepth
	}
	if depth == "" {
		depth = plan.DepthStandard
	}
	var ctxMap *ContextMap
	if in.Research != nil {
		ctxMap = &in.Research.ContextMap
	}
	gates := cleanGates(in.GateResults)
	switch in.Role {
	case RoleResearcher:
		c := in.Complexity
		if c == "" {
			c = "medium"
		}
		return struct {
			V researcherParams `yaml:"researcher_params"`
		}{researcherParams{c, orEmpty(in.FocusAreas), orEmpty(in.KnownPatterns), in.WorkspaceRoot}}
	case RolePlanner:
		return struct {
			V plannerParams `yaml:"planner_params"`
		}{plannerParams{in.Research, orEmpty(in.Constraints), in.RevisionFeedback}}
	case RoleCritic:
		objs := in.PreviousObjections
		if objs == nil {
			objs = []plan.Critique{}
		}
		return struct {
			V criticParams `yaml:"critic_params"`
		}{criticParams{in.Iteration, in.MaxIterations, objs, in.FeatureName, in.Research, in.Plan}}
	case RoleExecutor:
		return struct {
			V executorParams `yaml:"executor_params"`
		}{executorParams{taskDef(in.Task), ctxMap, in.PreviousFailure}}
	case RoleVerifier:
		if gates == nil {
			gates = []GateSummary{}
		}
		return struct {
			V verifierParams `yaml:"verifier_params"`
		}{verifierParams{taskDef(in.Task), in.ExecutorResult, depth, gates}}
	case RoleCodeReviewer:
		return struct {
			V reviewerParams `yaml:"code_reviewer_params"`
		}{reviewerParams{taskDef(in.Task), in.ExecutorResult, depth, gates, cleanText(in.Diff)}}
	case RoleLinting:
		return struct {
			V reviewerParams `yaml:"linting_params"`
		}{reviewerParams{taskDef(in.Task), in.ExecutorResult, depth, gates, cleanText(in.Diff)}}
	case RoleTestDesigner:
		return struct {
			V testDesignerParams `yaml:"test_designer_params"`
		}{testDesignerParams{taskDef(in.Task), ctxMap}}
	case RoleArchitect:
		return struct {
			V designParams `yaml:"architect_params"`
		}{designParams{in.Research, orEmpty(in.Constraints), in.Plan}}
	default: // RoleDesignSpec; Compose has already rejected unknown roles
		return struct {
			V designParams `yaml:"design_spec_params"`
		}{designParams{in.Research, orEmpty(in.Constraints), in.Plan}}
	}
}

// cleanGates trims trailing blanks from gate output so it prints as a
// readable YAML block rather than one quoted line.
func cleanGates(gs []GateSummary) []GateSummary {
	if gs == nil {
		return nil
	}
	out := make([]GateSummary, len(gs))
	for i, g := range gs {
		g.OutputTail = cleanText(g.OutputTail)
		out[i] = g
	}
	return out
}

func cleanText(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// taskEnforcement is the per-task additions to the checklist, from the
// task's specification adherence and failure modes.
func taskEnforcement(t *plan.Task) string {
	if t == nil {
		return ""
	}
	var b strings.Builder
	s := t.SpecificationAdherence
	for _, p := range s.RequiredPatterns {
		fmt.Fprintf(&b, "- [ ] Required: %s\n", oneLine(p))
	}
	for _, p := range s.ForbiddenPatterns {
		fmt.Fprintf(&b, "- [ ] Forbidden: %s\n", oneLine(p))
	}
	for _, p := range s.TechChoices {
		fmt.Fprintf(&b, "- [ ] Technology: %s\n", oneLine(p))
	}
	for _, f := range t.FailureModes {
		fmt.Fprintf(&b, "- [ ] Prevent this failure mode: %s\n", oneLine(f))
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func resultInstruction(role, contract string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "When the work is done, call the %s tool once with your %s. It is validated against its schema", SubmitToolName, contract)
	switch role {
	case RoleExecutor:
		b.WriteString(" and against the task: confirm every acceptance criterion, copying its text verbatim, with evidence (file:line, test name or command output).")
	case RoleVerifier:
		b.WriteString(" and against the task: give every acceptance criterion, copying its text verbatim, with what you ran or read as evidence. PASS only if every criterion is met.")
	case RolePlanner:
		b.WriteString(" and the plan is checked: unique ids, existing depends_on, no cycles, at least one acceptance criterion per task, repository-relative paths.")
	case RoleCritic:
		b.WriteString("; a REVISE needs your single strongest objection and a suggested fix.")
	default:
		b.WriteString(".")
	}
	b.WriteString("\nWithout tools, end your reply with a RESULT heading and the same object in a fenced yaml block.\n")
	return b.String()
}

// section writes a "# --- title ---" header and v as YAML.
func section(b *bytes.Buffer, title string, v any) error {
	fmt.Fprintf(b, "# --- %s ---\n", title)
	enc := yaml.NewEncoder(b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("compose %s: %w", title, err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("compose %s: %w", title, err)
	}
	b.WriteString("\n")
	return nil
}
