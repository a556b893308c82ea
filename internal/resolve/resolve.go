// Package resolve implements seed 000's role resolution: detect the
// project's language (step 1), find its language manifest (step 2), map the
// five abstract roles to installed agents or skills (step 3), load the
// quality gates (step 4) and the process flow (step 5). Nothing here blocks:
// every problem becomes a Warning, and only an unusable project root is an
// error.
package resolve

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/sluice-run/sluice/internal/detect"
	"github.com/sluice-run/sluice/internal/manifest"
)

// Options are the inputs beyond the project root.
type Options struct {
	// PluginDirs are --plugin-dir values: each a plugin or a directory of
	// plugins, searched before the project's and the user's plugins.
	PluginDirs []string
	// UserConfigDir is sluice's user configuration directory
	// ($XDG_CONFIG_HOME/sluice or ~/.config/sluice); plugins are searched in
	// its plugins/ subdirectory. Empty skips it.
	UserConfigDir string
}

// Kinds of role resolution.
const (
	KindAgent          = "agent"
	KindSkill          = "skill"
	KindGeneralPurpose = "general-purpose"
)

// Gate sources.
const (
	GatesFromManifest = "manifest"
	GatesInferred     = "inferred"
)

// Manifest sources.
const (
	SourceProject        = "project"
	SourceLanguagePlugin = "language-plugin"
	SourcePlugin         = "plugin"
	SourceBuiltin        = "builtin"
	SourceNone           = "none"
)

// DefaultFlow names the built-in flow.
const DefaultFlow = "builtin:default-development-flow"

// Result is what resolution decided. Its JSON form is the stable output of
// `sluice resolve --json`.
type Result struct {
	Root      string                    `json:"root"`
	Primary   string                    `json:"primary"`
	Languages []detect.Language         `json:"languages"`
	Manifest  ManifestInfo              `json:"manifest"`
	Roles     map[string]RoleResolution `json:"roles"`
	Gates     map[string]Gate           `json:"gates"`
	// GateSource is "manifest" or "inferred".
	GateSource string    `json:"gate_source"`
	Flow       Flow      `json:"flow"`
	Warnings   []Warning `json:"warnings"`
	// Plugins found, in precedence order (not part of the JSON schema).
	Plugins []Plugin `json:"-"`
	// SourceFiles per language, for every language (not part of the JSON
	// schema; gate runners use it with detect.SourceExtensions).
	SourceFiles map[string]int `json:"-"`
}

// ManifestInfo says which manifest was used and which it shadowed.
type ManifestInfo struct {
	// Source is "project", "language-plugin", "plugin", "builtin" or "none".
	Source string `json:"source"`
	// Path is the manifest file, or "builtin:<lang>.md"; "" when none.
	Path     string     `json:"path"`
	Shadowed []Shadowed `json:"shadowed"`
}

// Shadowed is a manifest that exists but lost to a higher-precedence one.
type Shadowed struct {
	Source string `json:"source"`
	Path   string `json:"path"`
}

// RoleResolution is the agent or skill that fills a role.
type RoleResolution struct {
	// Ref is the reference as declared ("@plugin:agent", "/plugin:skill"),
	// or "general-purpose".
	Ref string `json:"ref"`
	// Kind is "agent", "skill" or "general-purpose".
	Kind string `json:"kind"`
	// Path is the agent's .md or the skill's SKILL.md; "" for
	// general-purpose.
	Path string `json:"path"`
}

// Gate is a quality-gate command. Command "" means unset. {files} is a
// placeholder for the shell-quoted changed files.
type Gate struct {
	Command      string   `json:"command"`
	Alternatives []string `json:"alternatives"`
}

// Flow is the process flow to run.
type Flow struct {
	// Kind is "default" or "override".
	Kind string `json:"kind"`
	// Source is the flow file, the manifest line declaring an inline
	// override, or DefaultFlow.
	Source string `json:"source"`
}

// Warning is a problem that did not stop resolution. Line is 0 when it does
// not apply.
type Warning struct {
	Message string `json:"message"`
	File    string `json:"file"`
	Line    int    `json:"line"`
}

func (w Warning) String() string {
	switch {
	case w.File == "":
		return w.Message
	case w.Line > 0:
		return fmt.Sprintf("%s:%d: %s", w.File, w.Line, w.Message)
	default:
		return fmt.Sprintf("%s: %s", w.File, w.Message)
	}
}

// Resolve runs steps 1-5 on the project at root. It fails only when root is
// not a readable directory or ctx ends.
func Resolve(ctx context.Context, root string, opts Options) (*Result, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", root, err)
	}
	// Plugin dirs are shown in warnings and paths: make them absolute so
	// they read the same wherever sluice was started.
	dirs := make([]string, len(opts.PluginDirs))
	for i, d := range opts.PluginDirs {
		if a, err := filepath.Abs(d); err == nil {
			d = a
		}
		dirs[i] = d
	}
	opts.PluginDirs = dirs
	det, err := detect.Detect(ctx, abs)
	if err != nil {
		return nil, err
	}
	res := &Result{
		Root:        abs,
		Primary:     det.Primary,
		Languages:   det.Languages,
		Roles:       map[string]RoleResolution{},
		Gates:       map[string]Gate{},
		Flow:        Flow{Kind: "default", Source: DefaultFlow},
		Warnings:    []Warning{},
		SourceFiles: det.SourceFiles,
		Manifest:    ManifestInfo{Source: SourceNone, Shadowed: []Shadowed{}},
	}
	if res.Languages == nil {
		res.Languages = []detect.Language{}
	}
	warn := func(w Warning) { res.Warnings = append(res.Warnings, w) }
	for _, w := range det.Warnings {
		warn(Warning{Message: w.Message, File: w.File, Line: w.Line})
	}

	res.Plugins = discoverPlugins(abs, opts, warn)
	m := res.findManifest(ctx, warn)

	for _, role := range manifest.RoleNames() {
		res.Roles[role] = RoleResolution{Ref: manifest.GeneralPurpose, Kind: KindGeneralPurpose}
	}
	if m != nil {
		for _, w := range m.Warnings {
			warn(Warning{Message: w.Message, File: w.File, Line: w.Line})
		}
		res.resolveRoles(m, warn)
	}

	if m != nil && m.HasGates {
		res.GateSource = GatesFromManifest
		for _, g := range manifest.GateNames() {
			mg := m.Gates[g]
			res.Gates[g] = Gate{Command: mg.Command, Alternatives: nonNil(mg.Alternatives)}
		}
	} else {
		res.GateSource = GatesInferred
		res.inferGates(warn)
	}

	if m != nil && m.Flow != nil {
		res.resolveFlow(m, warn)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return res, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// candidate is a manifest location that exists.
type candidate struct {
	source, path string
	builtin      string // language, for built-in manifests
}

// findManifest walks the search order and parses the winner. It returns nil
// when there is no usable manifest (none found, or the winner is
// malformed).
//
// Precedence, highest first: the project-local .sluice/language-manifest.md
// then .claude/language-manifest.md (the per-project override); plugins
// named for the primary language; any other plugin with a manifest that is
// not named for a different language; the built-in manifest. Without a
// detected language only the project-local files apply.
func (res *Result) findManifest(ctx context.Context, warn func(Warning)) *manifest.Manifest {
	var cands []candidate
	for _, dir := range []string{".sluice", ".claude"} {
		p := filepath.Join(res.Root, dir, "language-manifest.md")
		if manifestFileExists(p, warn) {
			cands = append(cands, candidate{source: SourceProject, path: p})
		}
	}
	if res.Primary != "" {
		var named, other []candidate
		for _, pl := range res.Plugins {
			lang := pluginLanguage(pl.Name)
			if lang != "" && lang != res.Primary {
				continue
			}
			for _, p := range pluginManifests(pl.Dir, warn) {
				if lang == res.Primary {
					named = append(named, candidate{source: SourceLanguagePlugin + ":" + pl.Name, path: p})
				} else {
					other = append(other, candidate{source: SourcePlugin + ":" + pl.Name, path: p})
				}
			}
		}
		cands = append(cands, named...)
		cands = append(cands, other...)
		if _, ok := manifest.BuiltinSource(res.Primary); ok {
			cands = append(cands, candidate{source: SourceBuiltin, path: manifest.BuiltinPath(res.Primary), builtin: res.Primary})
		}
	}
	if len(cands) == 0 {
		if res.Primary != "" {
			warn(Warning{Message: fmt.Sprintf("no language manifest for %s; every role uses general-purpose", res.Primary)})
		}
		return nil
	}
	for i, c := range cands {
		var (
			m   *manifest.Manifest
			err error
		)
		if c.builtin != "" {
			m, err = manifest.Builtin(c.builtin)
		} else {
			var data []byte
			data, err = os.ReadFile(c.path)
			if err != nil {
				warn(Warning{File: c.path, Message: fmt.Sprintf("cannot read language manifest: %v; skipping it", unwrapPath(err))})
				continue
			}
			m, err = manifest.Parse(c.path, data)
		}
		res.Manifest.Source = c.source
		res.Manifest.Path = c.path
		for _, s := range cands[i+1:] {
			res.Manifest.Shadowed = append(res.Manifest.Shadowed, Shadowed{Source: s.source, Path: s.path})
		}
		if err != nil {
			w := Warning{Message: err.Error(), File: c.path}
			var pe *manifest.ParseError
			if errors.As(err, &pe) {
				w = Warning{Message: pe.Msg, File: pe.File, Line: pe.Line}
			}
			w.Message += "; every role uses general-purpose and gates are inferred"
			warn(w)
			return nil
		}
		return m
	}
	return nil
}

// manifestFileExists reports whether p is a manifest file, warning when
// something unusable is there (a directory, a symlink loop, no permission).
func manifestFileExists(p string, warn func(Warning)) bool {
	info, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, lerr := os.Lstat(p); lerr == nil {
			warn(Warning{File: p, Message: "language manifest is a broken symlink; fix or remove it"})
		}
		return false
	case err != nil:
		warn(Warning{File: p, Message: fmt.Sprintf("cannot use language manifest: %v; fix or remove it", unwrapPath(err))})
		return false
	case info.IsDir():
		warn(Warning{File: p, Message: "language manifest is a directory, not a file; remove the directory or put the manifest in a file of that name"})
		return false
	}
	return true
}

// pluginManifests lists a plugin's manifests: references/ first, then
// skills/*/references/ in name order.
func pluginManifests(dir string, warn func(Warning)) []string {
	var out []string
	if p := filepath.Join(dir, "references", "language-manifest.md"); manifestFileExists(p, warn) {
		out = append(out, p)
	}
	skills, err := os.ReadDir(filepath.Join(dir, "skills"))
	if err != nil {
		return out
	}
	for _, s := range skills {
		p := filepath.Join(dir, "skills", s.Name(), "references", "language-manifest.md")
		if manifestFileExists(p, warn) {
			out = append(out, p)
		}
	}
	return out
}

// languageWords maps words in plugin names to languages: a plugin named
// "python3-development" is a Python plugin.
var languageWords = map[string]string{
	"python": detect.Python, "py": detect.Python,
	"typescript": detect.TypeScript, "javascript": detect.TypeScript, "ts": detect.TypeScript, "js": detect.TypeScript, "node": detect.TypeScript, "nodejs": detect.TypeScript,
	"rust": detect.Rust,
	"go":   detect.Go, "golang": detect.Go,
	"java": detect.Java,
	"cpp":  detect.CPP, "c++": detect.CPP, "cxx": detect.CPP, "c": detect.CPP,
}

// pluginLanguage returns the language a plugin is named for, or "".
func pluginLanguage(name string) string {
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '+'
	})
	for _, w := range words {
		if lang, ok := languageWords[strings.TrimRight(w, "0123456789")]; ok {
			return lang
		}
	}
	return ""
}

func (res *Result) plugin(name string) (Plugin, bool) {
	for _, p := range res.Plugins {
		if p.Name == name {
			return p, true
		}
	}
	return Plugin{}, false
}

func (res *Result) resolveRoles(m *manifest.Manifest, warn func(Warning)) {
	for _, role := range manifest.RoleNames() {
		decl, ok := m.Roles[role]
		if !ok || decl.Ref == manifest.GeneralPurpose {
			continue
		}
		kind, pluginName, name, err := manifest.ParseRef(decl.Ref)
		if err != nil {
			warn(Warning{File: m.Path, Line: decl.Line, Message: fmt.Sprintf("role %s: %v; the role uses general-purpose", role, err)})
			continue
		}
		pl, ok := res.plugin(pluginName)
		if !ok {
			warn(Warning{File: m.Path, Line: decl.Line, Message: fmt.Sprintf("role %s: %s is not installed: no plugin named %q (%s); the role uses general-purpose", role, decl.Ref, pluginName, res.searchedDirs())})
			continue
		}
		var p string
		if kind == manifest.KindAgent {
			p = filepath.Join(pl.Dir, "agents", name+".md")
		} else {
			p = filepath.Join(pl.Dir, "skills", name, "SKILL.md")
		}
		if info, err := os.Stat(p); err != nil || !info.Mode().IsRegular() {
			warn(Warning{File: m.Path, Line: decl.Line, Message: fmt.Sprintf("role %s: %s %s is not installed (no file %s); the role uses general-purpose", role, kind, decl.Ref, p)})
			continue
		}
		res.Roles[role] = RoleResolution{Ref: decl.Ref, Kind: kind, Path: p}
	}
}

func (res *Result) searchedDirs() string {
	if len(res.Plugins) == 0 {
		return "no plugins found in .sluice/plugins, .claude/plugins, the user config dir or --plugin-dir"
	}
	var names []string
	for _, p := range res.Plugins {
		names = append(names, p.Name)
	}
	return "installed plugins: " + strings.Join(names, ", ")
}

// inferGates takes the gates of the built-in manifest for the language with
// the most source files (the primary language when there is one).
func (res *Result) inferGates(warn func(Warning)) {
	for _, g := range manifest.GateNames() {
		res.Gates[g] = Gate{Alternatives: []string{}}
	}
	lang := res.Primary
	if lang == "" {
		best := 0
		for _, l := range detect.LanguageNames() {
			if n := res.SourceFiles[l]; n > best {
				lang, best = l, n
			}
		}
	}
	if lang == "" {
		warn(Warning{Message: "no source files of a known language; no quality gates are set"})
		return
	}
	m, err := manifest.Builtin(lang)
	if err != nil {
		warn(Warning{Message: fmt.Sprintf("cannot infer gates for %s: %v", lang, err)})
		return
	}
	for g, mg := range m.Gates {
		res.Gates[g] = Gate{Command: mg.Command, Alternatives: nonNil(mg.Alternatives)}
	}
}

func (res *Result) resolveFlow(m *manifest.Manifest, warn func(Warning)) {
	if m.Flow.Ref == "" {
		res.Flow = Flow{Kind: "override", Source: fmt.Sprintf("%s:%d", m.Path, m.Flow.Line)}
		return
	}
	p := m.Flow.Ref
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(m.Path), filepath.FromSlash(p))
	}
	info, err := os.Stat(p)
	if err != nil || !info.Mode().IsRegular() {
		reason := "it is not a file"
		if err != nil {
			reason = unwrapPath(err).Error()
		}
		warn(Warning{File: m.Path, Line: m.Flow.Line, Message: fmt.Sprintf("process flow override %s cannot be loaded (%s); using the default flow", p, reason)})
		return
	}
	res.Flow = Flow{Kind: "override", Source: p}
}
