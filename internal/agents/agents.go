// Package agents holds the agent definitions: one built-in, embedded agent
// per role, short and measured, which a project may override with its own
// prompt (Claude Code's .claude/agents/<name>.md convention). An override
// replaces an agent's prompt only; the role's output contract, its checks
// and its tools stay fixed (DESIGN §2).
package agents

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-run/sluice/internal/delegate"
)

//go:embed builtin/*.md
var builtinFS embed.FS

// Tiers an agent may ask for (config maps each to a provider and model).
const (
	TierFast     = "fast"
	TierStandard = "standard"
	TierDeep     = "deep"
)

// SourceBuiltin is the Source of an agent embedded in the binary.
const SourceBuiltin = "builtin"

// Agent is one agent definition.
type Agent struct {
	Name        string
	Description string
	Role        string
	// Tools are the tool names the role is given; submit_result is always
	// added by the runtime.
	Tools []string
	Tier  string
	// Prompt is the system prompt, the definition's Markdown body.
	Prompt string
	// Source is SourceBuiltin or the file the definition came from.
	Source string
}

// ReadOnly reports whether the agent is given no tool that writes files.
func (a Agent) ReadOnly() bool {
	return !slices.Contains(a.Tools, "write_file") && !slices.Contains(a.Tools, "edit_file")
}

// Warning is a problem with a project's agent file that does not stop a
// run: the file is skipped or part of it ignored.
type Warning struct {
	Path    string
	Message string
}

func (w Warning) String() string { return w.Path + ": " + w.Message }

// ErrNoFrontMatter is returned for an agent file that does not start with a
// YAML front matter block.
var ErrNoFrontMatter = errors.New("no front matter: an agent file starts with a line ---, YAML keys (name, description, role, tools, tier), and a closing ---")

// frontMatter is the YAML header of an agent file. Keys of Claude Code's
// format that sluice does not use (model, color) are ignored.
type frontMatter struct {
	Name        string    `yaml:"name"`
	Description string    `yaml:"description"`
	Role        string    `yaml:"role"`
	Tools       yaml.Node `yaml:"tools"`
	Tier        string    `yaml:"tier"`
}

// Parse reads an agent definition: YAML front matter and a Markdown body,
// the prompt. source names the file in errors and becomes Agent.Source. The
// name defaults to the file's base name.
func Parse(data []byte, source string) (Agent, error) {
	text := strings.ReplaceAll(string(bytes.TrimPrefix(data, []byte("\ufeff"))), "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return Agent{}, fmt.Errorf("%s: %w", source, ErrNoFrontMatter)
	}
	var header, body string
	if h, b, found := strings.Cut(rest, "\n---\n"); found {
		header, body = h, b
	} else if h, found := strings.CutSuffix(rest, "\n---"); found {
		header = h
	} else {
		return Agent{}, fmt.Errorf("%s: front matter is not closed: add a line --- after the YAML keys", source)
	}
	var fm frontMatter
	if err := yaml.Unmarshal([]byte(header), &fm); err != nil {
		return Agent{}, fmt.Errorf("%s: front matter: %w", source, err)
	}
	tools, err := toolList(&fm.Tools)
	if err != nil {
		return Agent{}, fmt.Errorf("%s: tools: %w", source, err)
	}
	name := fm.Name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(source), filepath.Ext(source))
	}
	return Agent{
		Name:        name,
		Description: strings.TrimSpace(fm.Description),
		Role:        fm.Role,
		Tools:       tools,
		Tier:        fm.Tier,
		Prompt:      strings.TrimSpace(body),
		Source:      source,
	}, nil
}

// toolList accepts both Claude Code's comma-separated string and a YAML list.
func toolList(n *yaml.Node) ([]string, error) {
	var out []string
	switch n.Kind {
	case 0:
		return nil, nil
	case yaml.ScalarNode:
		for _, t := range strings.Split(n.Value, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		}
	case yaml.SequenceNode:
		if err := n.Decode(&out); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("line %d: want a list or a comma-separated string", n.Line)
	}
	return out, nil
}

// LoadFile reads one agent definition, such as a specialist a language
// manifest names.
func LoadFile(path string) (Agent, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Agent{}, fmt.Errorf("read agent definition: %w", err)
	}
	a, err := Parse(data, path)
	if err != nil {
		return Agent{}, err
	}
	if a.Prompt == "" {
		return Agent{}, fmt.Errorf("%s: the agent has no prompt: write it below the front matter", path)
	}
	return a, nil
}

// Builtin returns the embedded agents, one per role, in delegate.Roles order.
func Builtin() ([]Agent, error) {
	out := make([]Agent, 0, len(delegate.Roles()))
	for _, role := range delegate.Roles() {
		name := "builtin/" + role + ".md"
		data, err := builtinFS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("built-in agent for role %s: %w", role, err)
		}
		a, err := Parse(data, name)
		if err != nil {
			return nil, err
		}
		if a.Role != role {
			return nil, fmt.Errorf("%s: role is %q, want %q", name, a.Role, role)
		}
		a.Source = SourceBuiltin
		out = append(out, a)
	}
	return out, nil
}

// Registry is the effective agent for every role: a project override or
// the built-in.
type Registry struct {
	builtin map[string]Agent
	byRole  map[string]Agent
}

// overrideDirs are searched in order; a later directory's override wins.
var overrideDirs = []string{filepath.Join(".claude", "agents"), filepath.Join(".sluice", "agents")}

// Load returns the registry for the project at projectRoot: the built-in
// agents with the prompts of any overrides in .claude/agents/*.md and
// .sluice/agents/*.md (the latter wins) whose front matter has a role key.
// Files without a role key are not overrides (they may be specialists a
// manifest names) and are left alone. Problems with a file are warnings and
// the file is skipped; only unreadable directories are errors.
func Load(projectRoot string) (*Registry, []Warning, error) {
	builtins, err := Builtin()
	if err != nil {
		return nil, nil, err
	}
	r := &Registry{builtin: map[string]Agent{}, byRole: map[string]Agent{}}
	for _, a := range builtins {
		r.builtin[a.Role] = a
		r.byRole[a.Role] = a
	}
	if projectRoot == "" {
		return r, nil, nil
	}
	var warns []Warning
	for _, dir := range overrideDirs {
		entries, err := os.ReadDir(filepath.Join(projectRoot, dir))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read agent overrides: %w", err)
		}
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		fromThisDir := map[string]string{}
		for _, name := range names {
			rel := filepath.ToSlash(filepath.Join(dir, name))
			data, err := os.ReadFile(filepath.Join(projectRoot, dir, name))
			if err != nil {
				return nil, nil, fmt.Errorf("read agent override: %w", err)
			}
			a, err := Parse(data, rel)
			if err != nil {
				warns = append(warns, Warning{rel, "skipped: " + strings.TrimPrefix(err.Error(), rel+": ")})
				continue
			}
			if a.Role == "" {
				continue
			}
			base, known := r.builtin[a.Role]
			if !known {
				warns = append(warns, Warning{rel, fmt.Sprintf("skipped: role %q is not an agent role (use one of %s)", a.Role, strings.Join(delegate.Roles(), ", "))})
				continue
			}
			if a.Prompt == "" {
				warns = append(warns, Warning{rel, "skipped: the override has no prompt below its front matter"})
				continue
			}
			if first, dup := fromThisDir[a.Role]; dup {
				warns = append(warns, Warning{rel, fmt.Sprintf("skipped: %s already overrides role %s", first, a.Role)})
				continue
			}
			fromThisDir[a.Role] = rel
			if prev := r.byRole[a.Role]; prev.Source != SourceBuiltin {
				warns = append(warns, Warning{prev.Source, fmt.Sprintf("shadowed by %s for role %s", rel, a.Role)})
			}
			if len(a.Tools) > 0 && !slices.Equal(a.Tools, base.Tools) {
				warns = append(warns, Warning{rel, fmt.Sprintf("tools ignored: the %s role's tools are fixed (%s)", a.Role, strings.Join(base.Tools, ", "))})
			}
			switch a.Tier {
			case "":
				a.Tier = base.Tier
			case TierFast, TierStandard, TierDeep:
			default:
				warns = append(warns, Warning{rel, fmt.Sprintf("tier %q ignored: use fast, standard or deep", a.Tier)})
				a.Tier = base.Tier
			}
			if a.Description == "" {
				a.Description = base.Description
			}
			a.Tools = slices.Clone(base.Tools)
			r.byRole[a.Role] = a
		}
	}
	return r, warns, nil
}

// ForRole returns the agent for role: the project's override or the
// built-in. For a role that is not an agent role it returns the zero Agent.
func (r *Registry) ForRole(role string) Agent {
	return r.byRole[role]
}

// Builtin returns the built-in agent for role, whatever overrides it.
func (r *Registry) Builtin(role string) (Agent, bool) {
	a, ok := r.builtin[role]
	return a, ok
}

// All returns the effective agent of every role, in delegate.Roles order.
func (r *Registry) All() []Agent {
	out := make([]Agent, 0, len(r.byRole))
	for _, role := range delegate.Roles() {
		out = append(out, r.byRole[role])
	}
	return out
}

// Lookup finds an effective agent by name, or else by role.
func (r *Registry) Lookup(name string) (Agent, bool) {
	for _, a := range r.All() {
		if a.Name == name {
			return a, true
		}
	}
	a, ok := r.byRole[name]
	return a, ok
}

// UseSpecialist makes a specialist agent (one a language manifest names for
// a role, seed 000) fill role, unless the project overrides that role's
// prompt itself, which stays the most specific choice. Like an override, a
// specialist brings its prompt only: the role's contract and tools stay.
// It reports whether the specialist was taken.
func (r *Registry) UseSpecialist(role string, a Agent) bool {
	cur, ok := r.byRole[role]
	if !ok || cur.Source != SourceBuiltin {
		return false
	}
	base := r.builtin[role]
	a.Role = role
	a.Tools = slices.Clone(base.Tools)
	if a.Tier == "" {
		a.Tier = base.Tier
	}
	if a.Description == "" {
		a.Description = base.Description
	}
	r.byRole[role] = a
	return true
}
