package capability

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Role families (seed 003, DESIGN §2). Every agent role belongs to exactly
// one family and every loop step admits exactly one family.
const (
	FamilyOrchestration = "orchestration"
	FamilyPlanning      = "planning"
	FamilyExecution     = "execution"
)

// RoleOrchestrator is the host: the engine and the reducer. It is a role in
// the vocabulary (its family is orchestration) but it is not an agent, so it
// has no agent file and nothing can be contributed into it.
const RoleOrchestrator = "orchestrator"

// RoleFamily maps every role of the vocabulary to its family. It is a
// function returning a fresh map so that no caller can change the table.
func RoleFamily() map[string]string {
	return map[string]string{
		RoleOrchestrator: FamilyOrchestration,
		"researcher":     FamilyPlanning,
		"planner":        FamilyPlanning,
		"critic":         FamilyPlanning,
		"architect":      FamilyPlanning,
		"design-spec":    FamilyPlanning,
		"executor":       FamilyExecution,
		"test-designer":  FamilyExecution,
		"verifier":       FamilyExecution,
		"code-reviewer":  FamilyExecution,
		"linting":        FamilyExecution,
	}
}

// RoleAgent maps every agent role to the file name of its built-in agent
// definition (internal/agents/builtin/<file>). The orchestrator is absent by
// design: it is the host and owns no agent file.
func RoleAgent() map[string]string {
	return map[string]string{
		"researcher":    "researcher.md",
		"planner":       "planner.md",
		"critic":        "critic.md",
		"architect":     "architect.md",
		"design-spec":   "design-spec.md",
		"executor":      "executor.md",
		"test-designer": "test-designer.md",
		"verifier":      "verifier.md",
		"code-reviewer": "code-reviewer.md",
		"linting":       "linting.md",
	}
}

// Loop steps. The loop's phases are these plus approval, which is the
// user's decision between critique and execute and admits no agent.
const (
	StepInit     = "init"
	StepResearch = "research"
	StepPlan     = "plan"
	StepCritique = "critique"
	StepExecute  = "execute"
	StepVerify   = "verify"
	StepComplete = "complete"
)

// StepFamily maps every loop step to the one family it admits.
func StepFamily() map[string]string {
	return map[string]string{
		StepInit:     FamilyOrchestration,
		StepResearch: FamilyPlanning,
		StepPlan:     FamilyPlanning,
		StepCritique: FamilyPlanning,
		StepExecute:  FamilyExecution,
		StepVerify:   FamilyExecution,
		StepComplete: FamilyOrchestration,
	}
}

// Declaration is one claim that roles act at a step: a capability's
// contribution (the step of its point and its into role) or an agent
// manifest (the steps its role is delegated at).
type Declaration struct {
	// Source names where the declaration was made, for the message:
	// "capabilities/x/capability.json $.contributions[0]".
	Source string
	Step   string
	Roles  []string
	// Contribution marks a declaration that injects text into its roles;
	// such a declaration may never name the orchestrator.
	Contribution bool
}

// ErrPartition is wrapped by every error CheckPartition returns, so callers
// can tell a partition violation from other failures.
var ErrPartition = errors.New("role-family partition violated")

// CheckPartition enforces the role-family partition over decls, fail
// closed: it rejects a role outside the vocabulary, a step that is not a
// loop step, a role whose family is not the one its step admits, and a
// contribution into the orchestrator (the host is not an injectable agent).
// Names are compared case-sensitively. Every offender is reported, each
// with its role and step, in the order given; decls is not modified.
func CheckPartition(decls []Declaration) error {
	var msgs []string
	for _, d := range decls {
		for _, o := range offenses(d) {
			msgs = append(msgs, d.Source+": "+o)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d offenders:\n%s", ErrPartition, len(msgs), strings.Join(msgs, "\n"))
}

// offenses returns one message per offending role of d, each naming the
// role and the step.
func offenses(d Declaration) []string {
	roles, steps := RoleFamily(), StepFamily()
	want, stepKnown := steps[d.Step]
	var msgs []string
	for _, r := range d.Roles {
		switch fam, roleKnown := roles[r]; {
		case d.Contribution && r == RoleOrchestrator:
			msgs = append(msgs, fmt.Sprintf("role %q at step %q: the orchestrator is the host, not an agent, and cannot receive a contribution; contribute into an agent role of the step (%s) or drop the contribution", r, d.Step, rolesOf(want)))
		case !stepKnown:
			msgs = append(msgs, fmt.Sprintf("role %q at step %q: %q is not a loop step; use one of %s", r, d.Step, d.Step, strings.Join(sortedKeys(steps), ", ")))
		case !roleKnown:
			msgs = append(msgs, fmt.Sprintf("role %q at step %q: %q is not a role in the vocabulary; use one of %s", r, d.Step, r, strings.Join(sortedKeys(roles), ", ")))
		case fam != want:
			msgs = append(msgs, fmt.Sprintf("role %q at step %q: role %q is in the %s family but step %q admits only the %s family (%s)", r, d.Step, r, fam, d.Step, want, rolesOf(want)))
		}
	}
	return msgs
}

// rolesOf lists the roles of family fam, for messages.
func rolesOf(fam string) string {
	var out []string
	for r, f := range RoleFamily() {
		if f == fam {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return "no roles"
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
