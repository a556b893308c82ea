// Package grid builds, writes and loads the typed gate grid
// (.sluice/grid.vN.yaml): the arrows between the fixed roles with their
// clauses, the review-depth ladder, the remediation bounds, the severity
// threshold and the project's resolved quality-gate commands. Grid files are
// immutable: a changed configuration writes a new version, and
// .sluice/grid.current names the active one. A grid edited by hand is
// detected by the content hash stored in it and refused.
package grid

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-run/sluice/internal/config"
	"github.com/sluice-run/sluice/internal/contract"
)

// Sentinel errors callers branch on.
var (
	// ErrFixedClause: a configuration tried to redefine, remove or weaken a
	// fixed clause.
	ErrFixedClause = errors.New("fixed clause")
	// ErrNoGrid: the project has no grid yet.
	ErrNoGrid = errors.New("no grid")
	// ErrTampered: a grid file does not match its content hash, or its fixed
	// clauses differ from the role contracts.
	ErrTampered = errors.New("grid file modified after it was written")
)

// Severities of adversarial findings, most severe first.
const (
	SeverityBlocking = "blocking"
	SeverityMajor    = "major"
	SeverityMinor    = "minor"
)

// Gate sources.
const (
	SourceResolved = "resolved" // from language resolution (manifest or inference)
	SourceConfig   = "config"   // from gates.commands in the configuration
	SourceUnset    = "unset"    // no command
)

// Grid is one version of the typed gate grid.
type Grid struct {
	// Version is N of grid.vN.yaml.
	Version int `yaml:"version"`
	// Hash is "sha256:<hex>" of the file's bytes without the hash line. It is
	// written as its own line, not through the struct.
	Hash string `yaml:"-"`
	// Depth is the run's default review depth.
	Depth string `yaml:"depth"`
	// DepthLadder says which phases each review depth runs.
	DepthLadder []Rung      `yaml:"depth_ladder"`
	Remediation Remediation `yaml:"remediation"`
	// SeverityThreshold: adversarial findings at or above it must be fixed
	// or accepted as recorded risks before the arrow passes.
	SeverityThreshold string `yaml:"severity_threshold"`
	// Gates are the quality-gate commands by name (format, lint, typecheck,
	// test, standards).
	Gates  map[string]Gate `yaml:"gates"`
	Arrows []Arrow         `yaml:"arrows"`
}

// Rung is one review depth and the phases it runs.
type Rung struct {
	Name             string `yaml:"name"`
	Adversarial      bool   `yaml:"adversarial"`
	FullSuitePerTask bool   `yaml:"full_suite_per_task"`
}

// Remediation holds the bounds on remediation rounds.
type Remediation struct {
	ResearchRetries     int `yaml:"research_retries"`
	CriticMaxIterations int `yaml:"critic_max_iterations"`
	TaskRetries         int `yaml:"task_retries"`
}

// Gate is one resolved quality-gate command.
type Gate struct {
	Command string `yaml:"command"`
	Source  string `yaml:"source"`
}

// Arrow is a gated transition with its clauses.
type Arrow struct {
	Name        string   `yaml:"name"`
	From        string   `yaml:"from"`
	To          string   `yaml:"to"`
	Adversarial string   `yaml:"adversarial"`
	Attester    string   `yaml:"attester"`
	Remediation string   `yaml:"remediation"`
	Bound       int      `yaml:"bound"`
	PerTask     bool     `yaml:"per_task"`
	Clauses     []Clause `yaml:"clauses"`
}

// Clause is one typed clause of an arrow.
type Clause struct {
	ID    string `yaml:"id"`
	Text  string `yaml:"text"`
	Kind  string `yaml:"kind"`
	Eval  string `yaml:"eval"`
	Depth string `yaml:"depth"`
	Fixed bool   `yaml:"fixed"`
	// Scope of a command clause: "changed" ({files} are the task's changed
	// files) or "tree" ({files} are all the tree's files).
	Scope string `yaml:"scope,omitempty"`
	// Command is the shell command of a command clause. It is empty when
	// the gate it names has no command: such a clause is reported as not
	// run, never as passed.
	Command string `yaml:"command,omitempty"`
}

// Input is everything a grid is built from besides the role contracts.
type Input struct {
	// Gates are the resolved quality-gate commands by name; "" means unset.
	Gates map[string]string
	// Overrides are the configuration's gates.commands.
	Overrides map[string]string
	// Extra are the project's own clauses (gates.extra).
	Extra []config.Clause
	// Depth is the default review depth; "" means standard.
	Depth string
	// CriticMaxIterations and TaskRetries lower the contract bounds; 0
	// means the contract bound.
	CriticMaxIterations int
	TaskRetries         int
	// SeverityThreshold; "" means major.
	SeverityThreshold string
}

// InputFrom takes a grid's input from an effective configuration and the
// resolved quality-gate commands.
func InputFrom(cfg *config.Config, resolved map[string]string) Input {
	return Input{
		Gates:               resolved,
		Overrides:           cfg.Gates.Commands,
		Extra:               cfg.Gates.Extra,
		Depth:               cfg.Run.Depth,
		CriticMaxIterations: cfg.Run.CriticMaxIterations,
		TaskRetries:         cfg.Run.TaskRetries,
	}
}

// Build makes a grid (Version 0, no hash: Write numbers and seals it) from the
// fixed role contracts and a project's input. A project clause that reuses a
// fixed clause's id, an override that blanks or neuters a gate command a
// fixed clause runs, an unknown arrow or gate, or a remediation bound above
// the contract's is an error naming the offending entry.
func Build(roles []contract.Role, in Input) (*Grid, error) {
	if len(roles) == 0 {
		return nil, errors.New("build grid: no role contracts")
	}
	g := &Grid{
		Depth:             in.Depth,
		SeverityThreshold: in.SeverityThreshold,
		Gates:             map[string]Gate{},
		DepthLadder: []Rung{
			{Name: contract.DepthLightweight},
			{Name: contract.DepthStandard, Adversarial: true},
			{Name: contract.DepthFull, Adversarial: true, FullSuitePerTask: true},
		},
	}
	if g.Depth == "" {
		g.Depth = contract.DepthStandard
	}
	if _, ok := contract.DepthRank(g.Depth); !ok {
		return nil, fmt.Errorf("run.depth %q: want one of %s", g.Depth, strings.Join(contract.Depths(), ", "))
	}
	if g.SeverityThreshold == "" {
		g.SeverityThreshold = SeverityMajor
	}
	if !slices.Contains(Severities(), g.SeverityThreshold) {
		return nil, fmt.Errorf("severity threshold %q: want one of %s", g.SeverityThreshold, strings.Join(Severities(), ", "))
	}

	for _, r := range roles {
		a := r.Exit
		ga := Arrow{Name: a.Name, From: a.From, To: a.To, Adversarial: a.Adversarial, Attester: a.Attester,
			Remediation: a.Remediation, Bound: a.Bound, PerTask: a.PerTask}
		for _, c := range a.Clauses {
			ga.Clauses = append(ga.Clauses, fromContract(c))
		}
		g.Arrows = append(g.Arrows, ga)
	}
	if err := checkArrowNames(g.Arrows); err != nil {
		return nil, err
	}

	if err := g.setBounds(in); err != nil {
		return nil, err
	}
	if err := g.setGates(in.Gates, in.Overrides); err != nil {
		return nil, err
	}
	if err := g.addExtra(in.Extra); err != nil {
		return nil, err
	}
	g.fillCommands()
	return g, nil
}

// Severities returns the finding severities, most severe first.
func Severities() []string { return []string{SeverityBlocking, SeverityMajor, SeverityMinor} }

func fromContract(c contract.Clause) Clause {
	gc := Clause{ID: c.ID, Text: c.Text, Kind: c.Kind, Eval: c.Eval, Depth: c.Depth, Fixed: c.Fixed}
	if e, err := contract.ParseEval(c.Kind, c.Eval); err == nil && e.Type == "gate" {
		gc.Scope = e.Scope
	}
	return gc
}

func checkArrowNames(arrows []Arrow) error {
	var got []string
	for _, a := range arrows {
		got = append(got, a.Name)
	}
	if !slices.Equal(got, contract.ArrowNames()) {
		return fmt.Errorf("role contracts give arrows %s, want %s", strings.Join(got, ", "), strings.Join(contract.ArrowNames(), ", "))
	}
	return nil
}

// setBounds takes the remediation bounds from the contracts, lowered by the
// configuration where it asks. A bound above the contract's is refused: the
// contract's bound is part of the gate.
func (g *Grid) setBounds(in Input) error {
	arrow := func(name string) *Arrow {
		for i := range g.Arrows {
			if g.Arrows[i].Name == name {
				return &g.Arrows[i]
			}
		}
		return nil
	}
	lower := func(a *Arrow, key string, v int) error {
		switch {
		case v == 0:
			return nil
		case v < 0:
			return fmt.Errorf("run.%s %d: must not be negative", key, v)
		case v > a.Bound:
			return fmt.Errorf("run.%s %d: the %s contract allows at most %d", key, v, a.Name, a.Bound)
		}
		a.Bound = v
		return nil
	}
	if err := lower(arrow(contract.ArrowArchitectImplementer), "critic_max_iterations", in.CriticMaxIterations); err != nil {
		return err
	}
	if err := lower(arrow(contract.ArrowImplementerIntegrator), "task_retries", in.TaskRetries); err != nil {
		return err
	}
	g.Remediation = Remediation{
		ResearchRetries:     arrow(contract.ArrowAnalystArchitect).Bound,
		CriticMaxIterations: arrow(contract.ArrowArchitectImplementer).Bound,
		TaskRetries:         arrow(contract.ArrowImplementerIntegrator).Bound,
	}
	return nil
}

// noopCommands are commands that can never fail; overriding a gate a fixed
// clause runs with one of them would turn the clause into a formality.
var noopCommands = []string{"true", ":", "exit 0", "/bin/true", "/usr/bin/true"}

func (g *Grid) setGates(resolved, overrides map[string]string) error {
	for name := range resolved {
		if !slices.Contains(contract.GateNames(), name) {
			return fmt.Errorf("resolved gate %q: want one of %s", name, strings.Join(contract.GateNames(), ", "))
		}
	}
	for _, name := range sortedKeys(overrides) {
		if !slices.Contains(contract.GateNames(), name) {
			return fmt.Errorf("gates.commands.%s: unknown gate (want one of %s)", name, strings.Join(contract.GateNames(), ", "))
		}
	}
	for _, name := range contract.GateNames() {
		gate := Gate{Command: strings.TrimSpace(resolved[name]), Source: SourceResolved}
		if ov, ok := overrides[name]; ok {
			ov = strings.TrimSpace(ov)
			if fixed := g.fixedUsers(name); len(fixed) > 0 {
				if ov == "" {
					return fmt.Errorf("gates.commands.%s is empty: it would drop fixed clause(s) %s; remove the key to use the resolved command: %w",
						name, strings.Join(fixed, ", "), ErrFixedClause)
				}
				if slices.Contains(noopCommands, ov) {
					return fmt.Errorf("gates.commands.%s is %q, which can never fail: it would weaken fixed clause(s) %s: %w",
						name, ov, strings.Join(fixed, ", "), ErrFixedClause)
				}
			}
			gate = Gate{Command: ov, Source: SourceConfig}
		}
		if gate.Command == "" {
			gate.Source = SourceUnset
		}
		g.Gates[name] = gate
	}
	return nil
}

// fixedUsers returns the ids of the fixed clauses that run gate name.
func (g *Grid) fixedUsers(name string) []string {
	var ids []string
	for _, a := range g.Arrows {
		for _, c := range a.Clauses {
			if e, err := contract.ParseEval(c.Kind, c.Eval); c.Fixed && err == nil && e.Type == "gate" && e.Name == name {
				ids = append(ids, c.ID)
			}
		}
	}
	return ids
}

func (g *Grid) addExtra(extra []config.Clause) error {
	fixed := map[string]Clause{}
	fixedArrow := map[string]string{}
	for _, a := range g.Arrows {
		for _, c := range a.Clauses {
			fixed[c.ID] = c
			fixedArrow[c.ID] = a.Name
		}
	}
	seen := map[string]bool{}
	for i, x := range extra {
		where := fmt.Sprintf("gates.extra[%d] (id %q)", i, x.ID)
		ai := slices.IndexFunc(g.Arrows, func(a Arrow) bool { return a.Name == x.Arrow })
		if ai < 0 {
			return fmt.Errorf("%s: unknown arrow %q (valid arrows: %s)", where, x.Arrow, strings.Join(contract.ArrowNames(), ", "))
		}
		a := &g.Arrows[ai]
		if fc, ok := fixed[x.ID]; ok {
			if x.Kind != fc.Kind || x.Arrow != fixedArrow[x.ID] {
				return fmt.Errorf("%s: would weaken fixed clause %s (a %s clause on %s, evaluated by %s); fixed clauses cannot be redefined or removed, give a project clause its own id: %w",
					where, x.ID, fc.Kind, fixedArrow[x.ID], fc.Eval, ErrFixedClause)
			}
			return fmt.Errorf("%s: reuses the id of fixed clause %s on %s; fixed clauses cannot be redefined, give a project clause its own id: %w",
				where, x.ID, fixedArrow[x.ID], ErrFixedClause)
		}
		if !contract.ValidID(x.ID) {
			return fmt.Errorf("%s: id must be lower-case letters, digits and dashes, starting with a letter", where)
		}
		if seen[x.ID] {
			return fmt.Errorf("%s: a project clause with this id is already defined", where)
		}
		seen[x.ID] = true
		c := Clause{ID: x.ID, Text: strings.TrimSpace(x.Text), Kind: x.Kind, Depth: x.Depth}
		if c.Depth == "" {
			c.Depth = contract.DepthLightweight
		}
		if _, ok := contract.DepthRank(c.Depth); !ok {
			return fmt.Errorf("%s: depth %q (want one of %s)", where, c.Depth, strings.Join(contract.Depths(), ", "))
		}
		switch x.Kind {
		case contract.KindCommand:
			c.Command = strings.TrimSpace(x.Command)
			if c.Command == "" {
				return fmt.Errorf("%s: a command clause needs a command", where)
			}
			if c.Text == "" {
				c.Text = "`" + c.Command + "` passes"
			}
			c.Eval = "exec"
			c.Scope = contract.ScopeTree
			if a.PerTask {
				c.Scope = contract.ScopeChanged
			}
		case contract.KindAttested:
			if x.Command != "" {
				return fmt.Errorf("%s: an attested clause has no command (use kind: command to run one)", where)
			}
			if c.Text == "" {
				return fmt.Errorf("%s: an attested clause needs text saying what the %s must confirm", where, a.Attester)
			}
			if a.Attester == contract.None {
				return fmt.Errorf("%s: arrow %s has no model to attest a clause; attested clauses go on %s", where, a.Name, strings.Join(attestedArrows(g.Arrows), " or "))
			}
			c.Eval = "attest:" + a.Attester
		case contract.KindArtifact:
			return fmt.Errorf("%s: artifact checks are built in; a project adds command or attested clauses", where)
		default:
			return fmt.Errorf("%s: kind %q (want command or attested)", where, x.Kind)
		}
		a.Clauses = append(a.Clauses, c)
	}
	return nil
}

func attestedArrows(arrows []Arrow) []string {
	var names []string
	for _, a := range arrows {
		if a.Attester != contract.None {
			names = append(names, a.Name)
		}
	}
	return names
}

// fillCommands gives every fixed command clause its gate's command.
func (g *Grid) fillCommands() {
	for ai := range g.Arrows {
		for ci := range g.Arrows[ai].Clauses {
			c := &g.Arrows[ai].Clauses[ci]
			if e, err := contract.ParseEval(c.Kind, c.Eval); err == nil && e.Type == "gate" {
				c.Command = g.Gates[e.Name].Command
			}
		}
	}
}

// Arrow returns the named arrow, or nil.
func (g *Grid) Arrow(name string) *Arrow {
	for i := range g.Arrows {
		if g.Arrows[i].Name == name {
			return &g.Arrows[i]
		}
	}
	return nil
}

// Clauses returns the clauses of arrow that apply at review depth, in grid
// order; nil for an unknown arrow or depth.
func (g *Grid) Clauses(arrow, depth string) []Clause {
	a := g.Arrow(arrow)
	if a == nil {
		return nil
	}
	var out []Clause
	for _, c := range a.Clauses {
		if contract.Applies(c.Depth, depth) {
			out = append(out, c)
		}
	}
	return out
}

// Unset returns, for each quality gate that fixed clauses run but that has no
// command, the gate name and those clause ids ("typecheck: typecheck,
// merged-builds"). Such clauses are reported as not run; init warns about
// them.
func (g *Grid) Unset() []string {
	var out []string
	for _, name := range contract.GateNames() {
		if g.Gates[name].Command != "" {
			continue
		}
		if ids := g.fixedUsers(name); len(ids) > 0 {
			out = append(out, name+": "+strings.Join(ids, ", "))
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
