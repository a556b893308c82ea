package resolve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// manifestFor returns a manifest whose architect is ref, so tests can tell
// which manifest won.
func manifestFor(ref string) string {
	return "# M\n\n## Role Fulfillment\n\n- architect: " + ref + "\n\n## Quality Gates\n\n- test: `" + ref + " tests`\n"
}

const goProject = "go.mod"

func TestSearchOrder(t *testing.T) {
	tests := []struct {
		name       string
		files      map[string]string
		userFiles  map[string]string // under the user config dir
		pluginDir  map[string]string // under a --plugin-dir
		pluginDirs []string          // relative to the --plugin-dir root; default the root itself
		source     string
		path       string // relative to the project root; "builtin:..." as is
		shadowed   []string
		architect  string // the winning manifest's architect ref
	}{
		{
			name:   "built-in only",
			files:  map[string]string{goProject: "", "a.go": ""},
			source: SourceBuiltin, path: "builtin:go.md",
			shadowed: []string{}, architect: "general-purpose",
		},
		{
			name: "project .claude manifest overrides the built-in",
			files: map[string]string{goProject: "",
				".claude/language-manifest.md": manifestFor("@local:a")},
			source: SourceProject, path: ".claude/language-manifest.md",
			shadowed: []string{"builtin:go.md"}, architect: "@local:a",
		},
		{
			name: ".sluice manifest shadows .claude",
			files: map[string]string{goProject: "",
				".claude/language-manifest.md": manifestFor("@claude:a"),
				".sluice/language-manifest.md": manifestFor("@sluice:a")},
			source: SourceProject, path: ".sluice/language-manifest.md",
			shadowed: []string{".claude/language-manifest.md", "builtin:go.md"}, architect: "@sluice:a",
		},
		{
			name: "language-named plugin beats a generic plugin",
			files: map[string]string{goProject: "",
				".claude/plugins/aaa-tools/references/language-manifest.md":  manifestFor("@aaa-tools:a"),
				".sluice/plugins/golang-dev/references/language-manifest.md": manifestFor("@golang-dev:a"),
			},
			source: SourceLanguagePlugin + ":golang-dev", path: ".sluice/plugins/golang-dev/references/language-manifest.md",
			shadowed: []string{".claude/plugins/aaa-tools/references/language-manifest.md", "builtin:go.md"}, architect: "@golang-dev:a",
		},
		{
			name: "generic plugin with the manifest under a skill",
			files: map[string]string{goProject: "",
				".claude/plugins/toolkit/skills/dev/SKILL.md":                        "",
				".claude/plugins/toolkit/skills/dev/references/language-manifest.md": manifestFor("@toolkit:a"),
			},
			source: SourcePlugin + ":toolkit", path: ".claude/plugins/toolkit/skills/dev/references/language-manifest.md",
			shadowed: []string{"builtin:go.md"}, architect: "@toolkit:a",
		},
		{
			name: "plugin named for another language is not used",
			files: map[string]string{goProject: "",
				".sluice/plugins/python3-development/references/language-manifest.md": manifestFor("@python3-development:a"),
			},
			source: SourceBuiltin, path: "builtin:go.md",
			shadowed: []string{}, architect: "general-purpose",
		},
		{
			name: "project-local manifest overrides a language plugin",
			files: map[string]string{goProject: "",
				".sluice/plugins/go-dev/references/language-manifest.md": manifestFor("@go-dev:a"),
				".claude/language-manifest.md":                           manifestFor("@local:a"),
			},
			source: SourceProject, path: ".claude/language-manifest.md",
			shadowed: []string{".sluice/plugins/go-dev/references/language-manifest.md", "builtin:go.md"}, architect: "@local:a",
		},
		{
			name:      "user config dir plugin",
			files:     map[string]string{goProject: ""},
			userFiles: map[string]string{"plugins/go-pro/references/language-manifest.md": manifestFor("@go-pro:a")},
			source:    SourceLanguagePlugin + ":go-pro", path: "USER/plugins/go-pro/references/language-manifest.md",
			shadowed: []string{"builtin:go.md"}, architect: "@go-pro:a",
		},
		{
			name:       "--plugin-dir as one plugin shadows the same plugin in the project",
			files:      map[string]string{goProject: "", ".sluice/plugins/go-dev/references/language-manifest.md": manifestFor("@go-dev:project")},
			pluginDir:  map[string]string{"go-dev/references/language-manifest.md": manifestFor("@go-dev:flag")},
			pluginDirs: []string{"go-dev"},
			source:     SourceLanguagePlugin + ":go-dev", path: "FLAG/go-dev/references/language-manifest.md",
			shadowed: []string{"builtin:go.md"}, architect: "@go-dev:flag",
		},
		{
			name:      "--plugin-dir as a directory of plugins comes before the user's",
			files:     map[string]string{goProject: ""},
			userFiles: map[string]string{"plugins/go-user/references/language-manifest.md": manifestFor("@go-user:a")},
			pluginDir: map[string]string{"go-flag/references/language-manifest.md": manifestFor("@go-flag:a")},
			source:    SourceLanguagePlugin + ":go-flag", path: "FLAG/go-flag/references/language-manifest.md",
			shadowed: []string{"USER/plugins/go-user/references/language-manifest.md", "builtin:go.md"}, architect: "@go-flag:a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "proj")
			user := filepath.Join(base, "user")
			flag := filepath.Join(base, "flag")
			writeTree(t, root, tt.files)
			writeTree(t, user, tt.userFiles)
			opts := Options{UserConfigDir: user}
			if tt.pluginDir != nil {
				writeTree(t, flag, tt.pluginDir)
				if tt.pluginDirs == nil {
					opts.PluginDirs = []string{flag}
				}
				for _, d := range tt.pluginDirs {
					opts.PluginDirs = append(opts.PluginDirs, filepath.Join(flag, d))
				}
			}
			res, err := Resolve(context.Background(), root, opts)
			if err != nil {
				t.Fatal(err)
			}
			expand := func(p string) string {
				switch {
				case strings.HasPrefix(p, "builtin:"):
					return p
				case strings.HasPrefix(p, "USER/"):
					return filepath.Join(user, p[5:])
				case strings.HasPrefix(p, "FLAG/"):
					return filepath.Join(flag, p[5:])
				}
				return filepath.Join(root, p)
			}
			if res.Manifest.Source != tt.source || res.Manifest.Path != expand(tt.path) {
				t.Errorf("manifest = %s %s, want %s %s", res.Manifest.Source, res.Manifest.Path, tt.source, expand(tt.path))
			}
			var shadowed []string
			for _, s := range res.Manifest.Shadowed {
				shadowed = append(shadowed, s.Path)
			}
			var want []string
			for _, s := range tt.shadowed {
				want = append(want, expand(s))
			}
			if fmt.Sprint(shadowed) != fmt.Sprint(want) {
				t.Errorf("shadowed = %v\nwant %v", shadowed, want)
			}
			// The winner's architect is declared but, in these fixtures,
			// never installed: general-purpose with a warning naming it.
			if res.Roles["architect"].Kind != KindGeneralPurpose {
				t.Errorf("architect = %+v", res.Roles["architect"])
			}
			if tt.architect != "general-purpose" && !hasWarning(res, tt.architect+" is not installed") {
				t.Errorf("no warning that %s is not installed: %v", tt.architect, res.Warnings)
			}
		})
	}
}

func hasWarning(res *Result, substr string) bool {
	return slices.ContainsFunc(res.Warnings, func(w Warning) bool { return strings.Contains(w.Message, substr) })
}

func warningAt(res *Result, substr, file string, line int) bool {
	return slices.ContainsFunc(res.Warnings, func(w Warning) bool {
		return strings.Contains(w.Message, substr) && w.File == file && w.Line == line
	})
}

const pyManifest = `# Python

## Role Fulfillment

- architect: @python3-development:python-architect
- test-designer: @python3-development:missing-agent
- code-reviewer: @not-installed:reviewer
- linting: /python3-development:stinkysnake
- tester: @python3-development:x

## Quality Gates

- format: ` + "`uv run ruff format {files}`" + `
- lint: use ` + "`uv run ruff check {files}`" + ` or ` + "`uv run pylint {files}`" + `
- test: ` + "`uv run pytest tests/`" + `
- standards: /python3-development:stinkysnake

## Process Flow Override

See [the flow](flows/custom.md).
`

func TestRolesGatesFlow(t *testing.T) {
	root := t.TempDir()
	plugin := ".sluice/plugins/python3-development/"
	writeTree(t, root, map[string]string{
		"pyproject.toml":                           "",
		"pkg/a.py":                                 "",
		plugin + "agents/python-architect.md":      "---\nname: python-architect\n---\n",
		plugin + "skills/stinkysnake/SKILL.md":     "",
		plugin + "references/language-manifest.md": pyManifest,
		plugin + "references/flows/custom.md":      "# flow\n",
	})
	res, err := Resolve(context.Background(), root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mpath := filepath.Join(root, plugin, "references/language-manifest.md")
	pdir := filepath.Join(root, plugin)
	wantRoles := map[string]RoleResolution{
		"architect":     {Ref: "@python3-development:python-architect", Kind: KindAgent, Path: filepath.Join(pdir, "agents/python-architect.md")},
		"test-designer": {Ref: "general-purpose", Kind: KindGeneralPurpose},
		"code-reviewer": {Ref: "general-purpose", Kind: KindGeneralPurpose},
		"design-spec":   {Ref: "general-purpose", Kind: KindGeneralPurpose},
		"linting":       {Ref: "/python3-development:stinkysnake", Kind: KindSkill, Path: filepath.Join(pdir, "skills/stinkysnake/SKILL.md")},
	}
	if !reflect.DeepEqual(res.Roles, wantRoles) {
		t.Errorf("roles = %+v\nwant %+v", res.Roles, wantRoles)
	}
	if !warningAt(res, "agent @python3-development:missing-agent is not installed", mpath, 6) {
		t.Errorf("no warning for the missing agent at line 6: %v", res.Warnings)
	}
	if !warningAt(res, `no plugin named "not-installed"`, mpath, 7) {
		t.Errorf("no warning for the missing plugin at line 7: %v", res.Warnings)
	}
	if !warningAt(res, `unknown role "tester"`, mpath, 9) {
		t.Errorf("no warning for the unknown role at line 9: %v", res.Warnings)
	}
	wantGates := map[string]Gate{
		"format":    {Command: "uv run ruff format {files}", Alternatives: []string{}},
		"lint":      {Command: "uv run ruff check {files}", Alternatives: []string{"uv run pylint {files}"}},
		"typecheck": {Command: "", Alternatives: []string{}},
		"test":      {Command: "uv run pytest tests/", Alternatives: []string{}},
		"standards": {Command: "/python3-development:stinkysnake", Alternatives: []string{}},
	}
	if !reflect.DeepEqual(res.Gates, wantGates) || res.GateSource != GatesFromManifest {
		t.Errorf("gates (%s) = %+v\nwant %+v", res.GateSource, res.Gates, wantGates)
	}
	if res.Flow != (Flow{Kind: "override", Source: filepath.Join(pdir, "references/flows/custom.md")}) {
		t.Errorf("flow = %+v", res.Flow)
	}

	// Without the flow file the override cannot load: default, warned.
	os.Remove(filepath.Join(pdir, "references/flows/custom.md"))
	res, err = Resolve(context.Background(), root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Flow.Kind != "default" || !warningAt(res, "process flow override", mpath, 20) {
		t.Errorf("flow = %+v, warnings %v; want default with a warning at line 20", res.Flow, res.Warnings)
	}
}

func TestFallbacks(t *testing.T) {
	tests := []struct {
		name       string
		files      map[string]string
		primary    string
		gateSource string
		test       string // the test gate command
		warning    string
		wFile      string // relative to root
		wLine      int
		roleKind   string // architect's kind
	}{
		{
			name:       "no markers: general-purpose and gates inferred from .py files",
			files:      map[string]string{"tool.py": "", "lib/x.py": "", "a.go": ""},
			gateSource: GatesInferred, test: "pytest",
			warning: "no language markers", wFile: "", roleKind: KindGeneralPurpose,
		},
		{
			name:       "no markers and no sources: nothing inferred",
			files:      map[string]string{"README.md": ""},
			gateSource: GatesInferred, test: "",
			warning: "no source files of a known language", roleKind: KindGeneralPurpose,
		},
		{
			name: "malformed manifest: general-purpose for all, gates inferred",
			files: map[string]string{"Cargo.toml": "", "src/main.rs": "",
				".sluice/plugins/rust-dev/agents/arch.md": "",
				".claude/language-manifest.md":            "# Rust\n\n## Quality Gates\n\n- test: `cargo nextest run`\n"},
			primary: "rust", gateSource: GatesInferred, test: "cargo test",
			warning: "missing section \"Role Fulfillment\"", wFile: ".claude/language-manifest.md", wLine: 1, roleKind: KindGeneralPurpose,
		},
		{
			name: "partial manifest without gates: declared role kept, gates inferred",
			files: map[string]string{"go.mod": "", "main.go": "",
				".sluice/plugins/go-dev/agents/arch.md": "",
				".sluice/language-manifest.md":          "## Role Fulfillment\n\n- architect: @go-dev:arch\n"},
			primary: "go", gateSource: GatesInferred, test: "go test ./...",
			warning: "no \"Quality Gates\" section", wFile: ".sluice/language-manifest.md", roleKind: KindAgent,
		},
		{
			name: "manifest that is a directory is skipped with a warning",
			files: map[string]string{"go.mod": "",
				".sluice/language-manifest.md/x": ""},
			primary: "go", gateSource: GatesFromManifest, test: "go test ./...",
			warning: "is a directory", wFile: ".sluice/language-manifest.md", roleKind: KindGeneralPurpose,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, tt.files)
			res, err := Resolve(context.Background(), root, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Primary != tt.primary || res.GateSource != tt.gateSource || res.Gates["test"].Command != tt.test {
				t.Errorf("primary %q gates %s test %q; want %q %s %q", res.Primary, res.GateSource, res.Gates["test"].Command, tt.primary, tt.gateSource, tt.test)
			}
			if len(res.Gates) != 5 {
				t.Errorf("gates = %v, want all five keys", res.Gates)
			}
			file := root
			if tt.wFile != "" {
				file = filepath.Join(root, tt.wFile)
			}
			if tt.warning == "no source files of a known language" {
				file = ""
			}
			if !warningAt(res, tt.warning, file, tt.wLine) {
				t.Errorf("no warning %q at %s:%d in %v", tt.warning, file, tt.wLine, res.Warnings)
			}
			if res.Roles["architect"].Kind != tt.roleKind {
				t.Errorf("architect = %+v, want kind %s", res.Roles["architect"], tt.roleKind)
			}
		})
	}
}

func TestBadInputs(t *testing.T) {
	base := t.TempDir()
	if _, err := Resolve(context.Background(), filepath.Join(base, "nope"), Options{}); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing root: %v", err)
	}
	root := filepath.Join(base, "proj")
	writeTree(t, root, map[string]string{"go.mod": "", "x.go": "", ".claude/plugins/loopy/agents/a.md": ""})
	// A manifest that is a symlink loop, a plugin symlink loop and a
	// --plugin-dir that does not exist: warnings, not failures.
	mustSymlink(t, filepath.Join(root, ".sluice", "language-manifest.md"), filepath.Join(root, ".sluice", "language-manifest.md"))
	mustSymlink(t, filepath.Join(root, ".claude", "plugins", "self"), filepath.Join(root, ".claude", "plugins", "self"))
	res, err := Resolve(context.Background(), root, Options{PluginDirs: []string{filepath.Join(base, "missing-plugins")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Manifest.Source != SourceBuiltin {
		t.Errorf("manifest = %+v, want the built-in", res.Manifest)
	}
	for _, want := range []string{"cannot use language manifest", "plugin symlink cannot be followed", "plugin directory (--plugin-dir) cannot be used"} {
		if !hasWarning(res, want) {
			t.Errorf("no warning %q in %v", want, res.Warnings)
		}
	}
	if len(res.Plugins) != 1 || res.Plugins[0].Name != "loopy" {
		t.Errorf("plugins = %+v", res.Plugins)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestPluginNameAndShadowing(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "proj")
	writeTree(t, root, map[string]string{
		"go.mod": "",
		".sluice/plugins/dir-a/.claude-plugin/plugin.json":  `{"name": "shared"}`,
		".sluice/plugins/dir-a/agents/x.md":                 "",
		".claude/plugins/shared/agents/y.md":                "",
		".claude/plugins/broken/.claude-plugin/plugin.json": `{`,
		".claude/plugins/not-a-plugin/notes.txt":            "",
	})
	res, err := Resolve(context.Background(), root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range res.Plugins {
		got = append(got, p.Name+"@"+strings.TrimPrefix(p.Dir, root))
	}
	want := []string{"shared@/.sluice/plugins/dir-a", "broken@/.claude/plugins/broken"}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plugins = %v, want %v", got, want)
	}
	if !hasWarning(res, `plugin "shared" (project .claude/plugins) is shadowed by`) || !hasWarning(res, "invalid plugin.json") {
		t.Errorf("warnings = %v", res.Warnings)
	}
}

func TestPluginLanguage(t *testing.T) {
	for name, want := range map[string]string{
		"python3-development": "python", "golang-tools": "go", "go": "go", "rust_dev": "rust",
		"c++-kit": "cpp", "node-helpers": "typescript", "toolkit": "", "django": "", "java-pro": "java",
	} {
		if got := pluginLanguage(name); got != want {
			t.Errorf("pluginLanguage(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestJSONSchema pins the field names of the --json output.
func TestJSONSchema(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"go.mod": "", "a.go": ""})
	res, err := Resolve(context.Background(), root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	keys := func(v any) []string {
		var ks []string
		for k := range v.(map[string]any) {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	check := func(what string, got, want []string) {
		t.Helper()
		sort.Strings(want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s keys = %v, want %v", what, got, want)
		}
	}
	check("top", keys(m), []string{"root", "primary", "languages", "manifest", "roles", "gates", "gate_source", "flow", "warnings"})
	check("language", keys(m["languages"].([]any)[0]), []string{"name", "markers", "source_files"})
	check("manifest", keys(m["manifest"]), []string{"source", "path", "shadowed"})
	check("roles", keys(m["roles"]), []string{"architect", "test-designer", "code-reviewer", "design-spec", "linting"})
	check("role", keys(m["roles"].(map[string]any)["architect"]), []string{"ref", "kind", "path"})
	check("gates", keys(m["gates"]), []string{"format", "lint", "typecheck", "test", "standards"})
	check("gate", keys(m["gates"].(map[string]any)["test"]), []string{"command", "alternatives"})
	check("flow", keys(m["flow"]), []string{"kind", "source"})
	if w, ok := m["warnings"].([]any); !ok || len(w) != 0 {
		t.Errorf("warnings = %v, want []", m["warnings"])
	}
}

// TestThisRepository resolves sluice's own repository: Go, with the
// built-in Go manifest.
func TestThisRepository(t *testing.T) {
	res, err := Resolve(context.Background(), filepath.Join("..", ".."), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Primary != "go" || res.Manifest.Source != SourceBuiltin || res.Manifest.Path != "builtin:go.md" {
		t.Fatalf("primary %q manifest %+v; want go with builtin:go.md", res.Primary, res.Manifest)
	}
	if res.Gates["lint"].Command != "go vet ./..." || res.GateSource != GatesFromManifest {
		t.Errorf("gates = %+v", res.Gates)
	}
}

func TestCanceled(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"go.mod": "", "a/b.go": ""})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Resolve(ctx, root, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// BenchmarkResolve50k runs the whole resolution on a generated 50,000-file
// tree with a project manifest and plugins.
func BenchmarkResolve50k(b *testing.B) {
	root := b.TempDir()
	files := map[string]string{
		"go.mod": "module x\n", "package.json": "{}", ".gitignore": "/out/\n*.tmp\n",
		".sluice/plugins/go-dev/agents/arch.md": "",
		".sluice/language-manifest.md":          manifestFor("@go-dev:arch"),
	}
	writeTree(b, root, files)
	kinds := []struct {
		dir, ext string
		n        int
	}{
		{"internal", ".go", 15000}, {"docs", ".md", 5000}, {"web/src", ".ts", 5000},
		{"node_modules", ".js", 15000}, {"out", ".go", 5000}, {"assets", ".tmp", 5000},
	}
	for _, k := range kinds {
		for i := 0; i < k.n; i++ {
			dir := filepath.Join(root, k.dir, fmt.Sprintf("d%03d", i/100))
			if i%100 == 0 {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					b.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d%s", i, k.ext)), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		res, err := Resolve(context.Background(), root, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if res.Primary != "go" || res.Roles["architect"].Kind != KindAgent {
			b.Fatalf("primary %q architect %+v", res.Primary, res.Roles["architect"])
		}
	}
}
