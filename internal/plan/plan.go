// Package plan holds the plan of a run: its tasks, their dependencies, the
// files they touch and how each is accepted.
package plan

// Plan is plan.yaml: the tasks that implement a goal.
type Plan struct {
	// Goal is the user's request, verbatim.
	Goal            string     `yaml:"goal" json:"goal"`
	Tasks           []Task     `yaml:"tasks" json:"tasks"`
	PreMortem       []string   `yaml:"pre_mortem,omitempty" json:"pre_mortem,omitempty"`
	CritiqueHistory []Critique `yaml:"critique_history,omitempty" json:"critique_history,omitempty"`
}

// Task is one unit of work, executed in its own worktree.
type Task struct {
	ID                     string                 `yaml:"id" json:"id"`
	Title                  string                 `yaml:"title" json:"title"`
	Description            string                 `yaml:"description" json:"description"`
	DependsOn              []string               `yaml:"depends_on,omitempty" json:"depends_on,omitempty"`
	FilesToModify          []string               `yaml:"files_to_modify,omitempty" json:"files_to_modify,omitempty"`
	FilesToRead            []string               `yaml:"files_to_read,omitempty" json:"files_to_read,omitempty"`
	AcceptanceCriteria     []string               `yaml:"acceptance_criteria" json:"acceptance_criteria"`
	EstimatedEffort        string                 `yaml:"estimated_effort,omitempty" json:"estimated_effort,omitempty"`
	ReviewDepth            string                 `yaml:"review_depth,omitempty" json:"review_depth,omitempty"`
	SpecificationAdherence SpecificationAdherence `yaml:"specification_adherence,omitempty" json:"specification_adherence,omitempty"`
	FailureModes           []string               `yaml:"failure_modes,omitempty" json:"failure_modes,omitempty"`
}

// SpecificationAdherence is what a task's code must and must not do.
type SpecificationAdherence struct {
	RequiredPatterns  []string `yaml:"required_patterns,omitempty" json:"required_patterns,omitempty"`
	ForbiddenPatterns []string `yaml:"forbidden_patterns,omitempty" json:"forbidden_patterns,omitempty"`
	TechChoices       []string `yaml:"tech_choices,omitempty" json:"tech_choices,omitempty"`
}

// Critique is one round of the critic against the plan.
type Critique struct {
	Iteration    int    `yaml:"iteration" json:"iteration"`
	Verdict      string `yaml:"verdict" json:"verdict"`
	Objection    string `yaml:"objection,omitempty" json:"objection,omitempty"`
	Category     string `yaml:"objection_category,omitempty" json:"objection_category,omitempty"`
	Severity     string `yaml:"severity,omitempty" json:"severity,omitempty"`
	SuggestedFix string `yaml:"suggested_fix,omitempty" json:"suggested_fix,omitempty"`
	Resolved     bool   `yaml:"resolved" json:"resolved"`
}

// Review depths (seed 001).
const (
	DepthLightweight = "lightweight"
	DepthStandard    = "standard"
	DepthFull        = "full"
)

// Task returns the task with the given id.
func (p *Plan) Task(id string) (*Task, bool) {
	for i := range p.Tasks {
		if p.Tasks[i].ID == id {
			return &p.Tasks[i], true
		}
	}
	return nil, false
}
