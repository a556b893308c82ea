package capability

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Declarations returns the partition declarations of capabilities: one per
// contribution, its point's step and its into role.
func Declarations(caps []Capability) []Declaration {
	var out []Declaration
	for _, c := range caps {
		for i, k := range c.Contributions {
			step := ""
			if p, ok := LookupPoint(k.Point); ok {
				step = p.Step
			}
			out = append(out, Declaration{Source: fmt.Sprintf("%s $.contributions[%d]", c.Source, i), Step: step, Roles: []string{k.Into}, Contribution: true})
		}
	}
	return out
}

// HomeSteps returns the steps at which sluice delegates role, in loop
// order.
func HomeSteps(role string) []string {
	var out []string
	for _, p := range Points() {
		if contains(p.Roles, role) && !contains(out, p.Step) {
			out = append(out, p.Step)
		}
	}
	return out
}

// AgentDeclarations reads the agent manifests of a project — Markdown
// files with YAML front matter in .claude/agents, .sluice/agents and each
// plugin's agents directory — and returns a declaration for each one whose
// front matter names a role: its steps are the front matter's steps, or
// else the steps at which sluice delegates the role. A manifest whose role
// is outside the vocabulary and declares no steps has no step to check
// against and is reported as an error directly.
func AgentDeclarations(projectRoot string, pluginDirs []string) ([]Declaration, []error) {
	var dirs []string
	if projectRoot != "" {
		dirs = append(dirs, filepath.Join(projectRoot, ".claude", "agents"), filepath.Join(projectRoot, ".sluice", "agents"))
	}
	for _, d := range pluginDirs {
		dirs = append(dirs, filepath.Join(d, "agents"))
	}
	var decls []Declaration
	var errs []error
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read agent manifests in %s: %w", dir, err))
			continue
		}
		var names []string
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		for _, name := range names {
			file := filepath.Join(dir, name)
			role, steps, ok, err := agentRole(file)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if !ok {
				continue
			}
			if len(steps) == 0 {
				steps = HomeSteps(role)
			}
			if len(steps) == 0 {
				errs = append(errs, fmt.Errorf("%s: role %q: not a role sluice delegates to, so it has no step; use one of %s", file, role, strings.Join(sortedKeys(RoleAgent()), ", ")))
				continue
			}
			for _, s := range steps {
				decls = append(decls, Declaration{Source: file, Step: s, Roles: []string{role}})
			}
		}
	}
	return decls, errs
}

// agentRole reads the role and steps keys of an agent file's front matter;
// ok is false for a file that declares no role (a specialist a manifest
// names, say).
func agentRole(file string) (role string, steps []string, ok bool, err error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", nil, false, fmt.Errorf("read agent manifest: %w", err)
	}
	text := strings.ReplaceAll(string(bytes.TrimPrefix(data, []byte("\ufeff"))), "\r\n", "\n")
	rest, found := strings.CutPrefix(text, "---\n")
	if !found {
		return "", nil, false, nil
	}
	header, _, found := strings.Cut(rest, "\n---")
	if !found {
		return "", nil, false, fmt.Errorf("%s: front matter is not closed: add a line --- after the YAML keys", file)
	}
	var fm struct {
		Role  string   `yaml:"role"`
		Steps []string `yaml:"steps"`
	}
	if err := yaml.Unmarshal([]byte(header), &fm); err != nil {
		return "", nil, false, fmt.Errorf("%s: front matter: %w", file, err)
	}
	return fm.Role, fm.Steps, fm.Role != "", nil
}
