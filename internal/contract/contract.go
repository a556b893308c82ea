// Package contract holds the four fixed roles of the sluice loop (analyst,
// architect, implementer, integrator) and the gates on the arrows between
// them. The contracts are Markdown spec files embedded in the binary; they are
// parsed into typed clauses when a grid is built, and nothing at run time can
// redefine them: an agent definition for a role changes its prompt only.
package contract

import (
	"embed"
	"fmt"
	"strings"
)

//go:embed roles/*.md
var rolesFS embed.FS

// The fixed roles, in the order of the diamond.
const (
	Analyst     = "analyst"
	Architect   = "architect"
	Implementer = "implementer"
	Integrator  = "integrator"
	// Done is the end of the last arrow; it is not a role.
	Done = "done"
)

// The four arrows between fixed roles.
const (
	ArrowAnalystArchitect      = "analyst->architect"
	ArrowArchitectImplementer  = "architect->implementer"
	ArrowImplementerIntegrator = "implementer->integrator"
	ArrowIntegratorDone        = "integrator->done"
)

// Clause kinds.
const (
	// KindCommand passes when a quality-gate command exits 0.
	KindCommand = "command"
	// KindArtifact is a structural check of an artifact (plan, result).
	KindArtifact = "artifact"
	// KindAttested is a model's judgement, recorded with its evidence. It
	// never outvotes a machine failure.
	KindAttested = "attested"
)

// Review depths, from least to most scrutiny.
const (
	DepthLightweight = "lightweight"
	DepthStandard    = "standard"
	DepthFull        = "full"
)

// Quality-gate names (seed 000, step 4).
const (
	GateFormat    = "format"
	GateLint      = "lint"
	GateTypecheck = "typecheck"
	GateTest      = "test"
	GateStandards = "standards"
)

// Scopes of a command clause: on the task's changed files, or on the whole tree.
const (
	ScopeChanged = "changed"
	ScopeTree    = "tree"
)

// Adversary and attester names used in the exit-arrow tables.
const (
	None         = "none"
	Critic       = "critic"
	CodeReviewer = "code-reviewer"
	Verifier     = "verifier"
)

// Clause is one typed gate clause on an arrow.
type Clause struct {
	Arrow string // e.g. "implementer->integrator"
	ID    string // unique across all arrows, e.g. "format"
	Text  string // what must hold, in words
	Kind  string // command | artifact | attested
	// Eval says how the clause is evaluated: gate:<name>[:tree] for command
	// clauses, artifact:<check> for artifact clauses, attest:<agent> for
	// attested clauses.
	Eval string
	// Depth is the minimum review depth at which the clause applies.
	Depth string
	// Fixed clauses come from the role contracts; project clauses do not.
	Fixed bool
}

// Arrow is a gated transition between two fixed roles.
type Arrow struct {
	Name string // "from->to"
	From string
	To   string
	// Adversarial names the fresh instance that attacks the upstream artifact
	// (critic, code-reviewer), or "none".
	Adversarial string
	// Attester names the agent whose verdict attested clauses record, or "none".
	Attester string
	// Remediation says how failures are remediated, in words.
	Remediation string
	// Bound is the most remediation rounds the contract allows.
	Bound int
	// PerTask arrows are evaluated once per plan task, in its worktree.
	PerTask bool
	Clauses []Clause
}

// Role is one fixed role contract.
type Role struct {
	Name          string
	Title         string
	Purpose       string
	Preconditions []string
	// Exit is the arrow leaving the role; its clauses are the role's exit gate.
	Exit Arrow
}

// RoleNames returns the fixed roles in diamond order.
func RoleNames() []string {
	return []string{Analyst, Architect, Implementer, Integrator}
}

// ArrowNames returns the four arrows in diamond order.
func ArrowNames() []string {
	return []string{ArrowAnalystArchitect, ArrowArchitectImplementer, ArrowImplementerIntegrator, ArrowIntegratorDone}
}

// Kinds returns the valid clause kinds.
func Kinds() []string { return []string{KindCommand, KindArtifact, KindAttested} }

// Depths returns the review depths from least to most scrutiny.
func Depths() []string { return []string{DepthLightweight, DepthStandard, DepthFull} }

// GateNames returns the quality-gate names.
func GateNames() []string {
	return []string{GateFormat, GateLint, GateTypecheck, GateTest, GateStandards}
}

// DepthRank orders review depths: lightweight 0, standard 1, full 2. ok is
// false for an unknown depth.
func DepthRank(depth string) (rank int, ok bool) {
	for i, d := range Depths() {
		if d == depth {
			return i, true
		}
	}
	return 0, false
}

// Applies reports whether a clause whose minimum depth is clauseDepth applies
// to a review at runDepth. Unknown depths never apply, so a typo cannot
// silently drop a clause's evaluation into a lower tier; callers validate
// depths before asking.
func Applies(clauseDepth, runDepth string) bool {
	c, ok1 := DepthRank(clauseDepth)
	r, ok2 := DepthRank(runDepth)
	return ok1 && ok2 && c <= r
}

// Eval is a parsed Eval column.
type Eval struct {
	// Type is "gate", "artifact" or "attest".
	Type string
	// Name is the gate name, artifact check or attesting agent.
	Name string
	// Scope is ScopeChanged or ScopeTree for gate evals, "" otherwise.
	Scope string
}

// ParseEval parses an Eval column value and checks it fits the clause kind.
func ParseEval(kind, eval string) (Eval, error) {
	typ, rest, ok := strings.Cut(eval, ":")
	if !ok || rest == "" {
		return Eval{}, fmt.Errorf("eval %q: want gate:<name>[:tree], artifact:<check> or attest:<agent>", eval)
	}
	switch kind {
	case KindCommand:
		if typ != "gate" {
			return Eval{}, fmt.Errorf("eval %q: a command clause is evaluated by gate:<name>[:tree]", eval)
		}
		name, scope, hasScope := strings.Cut(rest, ":")
		if !isGate(name) || name == GateStandards {
			return Eval{}, fmt.Errorf("eval %q: unknown command gate %q (want format, lint, typecheck or test)", eval, name)
		}
		e := Eval{Type: typ, Name: name, Scope: ScopeChanged}
		if hasScope {
			if scope != ScopeTree {
				return Eval{}, fmt.Errorf("eval %q: unknown scope %q (want tree, or no scope for the changed files)", eval, scope)
			}
			e.Scope = ScopeTree
		}
		return e, nil
	case KindArtifact:
		if typ != "artifact" || !isIdent(rest) {
			return Eval{}, fmt.Errorf("eval %q: an artifact clause is evaluated by artifact:<check>", eval)
		}
		return Eval{Type: typ, Name: rest}, nil
	case KindAttested:
		if typ != "attest" || !isIdent(rest) {
			return Eval{}, fmt.Errorf("eval %q: an attested clause is evaluated by attest:<agent>", eval)
		}
		return Eval{Type: typ, Name: rest}, nil
	default:
		return Eval{}, fmt.Errorf("kind %q: want one of %s", kind, strings.Join(Kinds(), ", "))
	}
}

func isGate(name string) bool {
	for _, g := range GateNames() {
		if g == name {
			return true
		}
	}
	return false
}

// isIdent reports whether s is a lower-case identifier: a letter, then
// letters, digits and single dashes.
func isIdent(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' || strings.HasSuffix(s, "-") || strings.Contains(s, "--") {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// ValidID reports whether id is a well-formed clause id: lower-case letters,
// digits and dashes, starting with a letter.
func ValidID(id string) bool { return isIdent(id) }

// Roles parses the embedded role contracts and returns them in diamond order.
func Roles() ([]Role, error) {
	names := RoleNames()
	roles := make([]Role, 0, len(names))
	seen := map[string]string{} // clause id → role
	for i, name := range names {
		path := "roles/" + name + ".md"
		src, err := rolesFS.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read role contract %s: %w", path, err)
		}
		r, err := ParseRole(name, src)
		if err != nil {
			return nil, fmt.Errorf("role contract %s: %w", path, err)
		}
		want := Done
		if i+1 < len(names) {
			want = names[i+1]
		}
		if r.Exit.To != want {
			return nil, fmt.Errorf("role contract %s: exit arrow goes to %q, want %q", path, r.Exit.To, want)
		}
		for _, c := range r.Exit.Clauses {
			if other, dup := seen[c.ID]; dup {
				return nil, fmt.Errorf("role contract %s: clause id %q is already used by the %s contract", path, c.ID, other)
			}
			seen[c.ID] = name
		}
		roles = append(roles, r)
	}
	return roles, nil
}

// Arrows returns the four arrows of the diamond with their fixed clauses.
func Arrows() ([]Arrow, error) {
	roles, err := Roles()
	if err != nil {
		return nil, err
	}
	arrows := make([]Arrow, len(roles))
	for i, r := range roles {
		arrows[i] = r.Exit
	}
	return arrows, nil
}

// Source returns the Markdown text of a role contract, for display.
func Source(role string) ([]byte, error) {
	src, err := rolesFS.ReadFile("roles/" + role + ".md")
	if err != nil {
		return nil, fmt.Errorf("role %q: no such fixed role (want one of %s)", role, strings.Join(RoleNames(), ", "))
	}
	return src, nil
}
