package manifest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const bulletManifest = `# Python manifest

## Role Fulfillment

- architect: @python3-development:python-architect
- **test-designer**: ` + "`@python3-development:test-designer`" + `
- code-reviewer — @python3-development:reviewer
- design-spec: general-purpose
- linting: /python3-development:stinkysnake

## Quality Gates

- format: ` + "`uv run ruff format {files}`" + `
- lint: run ` + "`uv run ruff check {files}`" + ` or, where ruff is missing, ` + "`flake8 {files}`" + `
- typecheck: uv run mypy {files}
- test: ` + "`uv run pytest tests/`" + `
- standards: /python3-development:stinkysnake

## Process Flow Override

Use [the TDD flow](flows/tdd.md) for this language.
`

const tableManifest = `# Rust

## 1. Role Fulfillment

| Role | Agent |
|------|-------|
| architect | ` + "`@rust-dev:architect`" + ` |
| Code Reviewer | @rust-dev:reviewer |

### Notes

Sub-headings stay inside their section.

| Role | Agent |
|---|---|
| linting | (none — clippy covers it) |

## Quality Gates:

| Gate | Command |
|---|---|
| format | ` + "`cargo fmt --check`" + ` |
| Type check | ` + "`cargo check`" + ` or ` + "`cargo build`" + ` |
| test | (none) |

## Conventions

- errors: thiserror
`

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		roles    map[string]string
		gates    map[string]Gate
		hasGates bool
		flow     *Flow
		warnings []string // substrings, in order
		wLines   []int
	}{
		{
			name: "bullets",
			src:  bulletManifest,
			roles: map[string]string{
				"architect":     "@python3-development:python-architect",
				"test-designer": "@python3-development:test-designer",
				"code-reviewer": "@python3-development:reviewer",
				"design-spec":   "general-purpose",
				"linting":       "/python3-development:stinkysnake",
			},
			gates: map[string]Gate{
				"format":    {Command: "uv run ruff format {files}", Alternatives: []string{}},
				"lint":      {Command: "uv run ruff check {files}", Alternatives: []string{"flake8 {files}"}},
				"typecheck": {Command: "uv run mypy {files}", Alternatives: []string{}},
				"test":      {Command: "uv run pytest tests/", Alternatives: []string{}},
				"standards": {Command: "/python3-development:stinkysnake", Alternatives: []string{}},
			},
			hasGates: true,
			flow:     &Flow{Ref: "flows/tdd.md", Text: "Use the TDD flow for this language.", Line: 21},
		},
		{
			name: "tables",
			src:  tableManifest,
			roles: map[string]string{
				"architect":     "@rust-dev:architect",
				"code-reviewer": "@rust-dev:reviewer",
			},
			gates: map[string]Gate{
				"format":    {Command: "cargo fmt --check", Alternatives: []string{}},
				"typecheck": {Command: "cargo check", Alternatives: []string{"cargo build"}},
				"test":      {Command: "", Alternatives: []string{}},
			},
			hasGates: true,
		},
		{
			name: "partial manifest without gates",
			src:  "## Role Fulfillment\n\n- architect: @go-dev:architect\n",
			roles: map[string]string{
				"architect": "@go-dev:architect",
			},
			gates:    map[string]Gate{},
			warnings: []string{"no \"Quality Gates\" section"},
			wLines:   []int{0},
		},
		{
			name: "bad entries warn with their lines",
			src: `## Role Fulfillment

- architect: @a:b
- reviewer: @a:c
- linting: ask someone
- architect: @a:d
- just prose here

## Quality Gates

- speed: ` + "`go test -bench .`" + `
- test: ` + "`go test ./...`" + `

## Role Fulfillment

- design-spec: @a:e
`,
			roles:    map[string]string{"architect": "@a:b"},
			gates:    map[string]Gate{"test": {Command: "go test ./...", Alternatives: []string{}}},
			hasGates: true,
			warnings: []string{
				`unknown role "reviewer"`,
				`role linting: "ask someone" is not`,
				"role architect declared again; keeping the declaration on line 3",
				`entry "just prose here" has no "key: value" form`,
				`unknown quality gate "speed"`,
				`section "Role Fulfillment" appears more than once`,
			},
			wLines: []int{4, 5, 6, 7, 11, 14},
		},
		{
			name:     "role section with prose only",
			src:      "## Role Fulfillment\n\nAsk the team lead.\n\n## Quality Gates\n\n- test: `make test`\n",
			roles:    map[string]string{},
			gates:    map[string]Gate{"test": {Command: "make test", Alternatives: []string{}}},
			hasGates: true,
			warnings: []string{"Role Fulfillment has no entries"},
			wLines:   []int{1},
		},
		{
			name:  "inline flow override",
			src:   "## Role Fulfillment\n\n- architect: (none)\n\n## Quality Gates\n\n## Process Flow Override\n\nSkip the critique phase.\n",
			roles: map[string]string{},
			gates: map[string]Gate{}, hasGates: true,
			flow: &Flow{Text: "Skip the critique phase.", Line: 7},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse("m.md", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			roles := map[string]string{}
			for k, v := range m.Roles {
				roles[k] = v.Ref
			}
			if !reflect.DeepEqual(roles, tt.roles) {
				t.Errorf("roles = %v\nwant %v", roles, tt.roles)
			}
			gates := map[string]Gate{}
			for k, g := range m.Gates {
				g.Line = 0
				gates[k] = g
			}
			if !reflect.DeepEqual(gates, tt.gates) {
				t.Errorf("gates = %#v\nwant %#v", gates, tt.gates)
			}
			if m.HasGates != tt.hasGates {
				t.Errorf("HasGates = %v, want %v", m.HasGates, tt.hasGates)
			}
			if !reflect.DeepEqual(m.Flow, tt.flow) {
				t.Errorf("flow = %+v, want %+v", m.Flow, tt.flow)
			}
			if len(m.Warnings) != len(tt.warnings) {
				t.Fatalf("warnings = %+v, want %d", m.Warnings, len(tt.warnings))
			}
			for i, w := range m.Warnings {
				if !strings.Contains(w.Message, tt.warnings[i]) || w.Line != tt.wLines[i] || w.File != "m.md" {
					t.Errorf("warning %d = %+v, want %q at m.md:%d", i, w, tt.warnings[i], tt.wLines[i])
				}
			}
		})
	}
}

func TestParseLines(t *testing.T) {
	m, err := Parse("m.md", []byte(bulletManifest))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Roles["linting"].Line; got != 9 {
		t.Errorf("linting line = %d, want 9", got)
	}
	if got := m.Gates["lint"].Line; got != 14 {
		t.Errorf("lint gate line = %d, want 14", got)
	}
	tm, err := Parse("t.md", []byte(tableManifest))
	if err != nil {
		t.Fatal(err)
	}
	if got := tm.Gates["typecheck"].Line; got != 23 {
		t.Errorf("table typecheck line = %d, want 23", got)
	}
	if len(tm.Conventions) != 1 || tm.Conventions[0].Key != "errors" || tm.Conventions[0].Value != "thiserror" {
		t.Errorf("conventions = %+v", tm.Conventions)
	}
}

func TestParseMalformed(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"no role section", "# Manifest\n\n## Quality Gates\n\n- test: `go test`\n", "missing section \"Role Fulfillment\""},
		{"empty", "", "missing section"},
		{"binary", "## Role Fulfillment\n\x00\x01", "not a UTF-8 Markdown text file"},
		{"invalid utf-8", "## Role Fulfillment\n\xff\xfe", "not a UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse("bad.md", []byte(tt.src))
			if m != nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "bad.md") {
				t.Fatalf("Parse = %v, %v; want ErrMalformed naming bad.md and %q", m, err, tt.want)
			}
		})
	}
}

func TestParseRef(t *testing.T) {
	tests := []struct {
		ref                string
		kind, plugin, name string
		ok                 bool
	}{
		{"@python3-development:python-architect", KindAgent, "python3-development", "python-architect", true},
		{"/python3-development:stinkysnake", KindSkill, "python3-development", "stinkysnake", true},
		{"@p:../etc", "", "", "", false},
		{"@p:a/b", "", "", "", false},
		{"@:a", "", "", "", false},
		{"@p", "", "", "", false},
		{"p:a", "", "", "", false},
	}
	for _, tt := range tests {
		kind, plugin, name, err := ParseRef(tt.ref)
		if (err == nil) != tt.ok || kind != tt.kind || plugin != tt.plugin || name != tt.name {
			t.Errorf("ParseRef(%q) = %q %q %q %v", tt.ref, kind, plugin, name, err)
		}
	}
}

func TestBuiltins(t *testing.T) {
	for _, lang := range []string{"go", "python", "typescript", "rust", "java", "cpp"} {
		t.Run(lang, func(t *testing.T) {
			m, err := Builtin(lang)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Warnings) != 0 {
				t.Errorf("warnings: %+v", m.Warnings)
			}
			if len(m.Roles) != 5 {
				t.Errorf("roles = %v, want all five declared", m.Roles)
			}
			for _, g := range []string{"format", "lint", "typecheck", "test"} {
				if m.Gates[g].Command == "" {
					t.Errorf("gate %s has no command", g)
				}
			}
			if m.Flow != nil {
				t.Errorf("flow = %+v, want none", m.Flow)
			}
		})
	}
	if _, err := Builtin("cobol"); err == nil {
		t.Error("Builtin(cobol) succeeded")
	}
}

// TestGoFormatGateFails runs the built-in Go format gate the way the gate
// runner does (sh -c, {files} replaced by quoted paths): it must fail on an
// unformatted file and on a syntax error, and pass on a formatted one.
func TestGoFormatGateFails(t *testing.T) {
	if _, err := exec.LookPath("gofmt"); err != nil {
		t.Skip("gofmt not on PATH")
	}
	m, err := Builtin("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"good.go":       "package a\n\nfunc F() {}\n",
		"bad.go":        "package a\nfunc  F() {}\n",
		"syntax.go":     "package a\nfunc {\n",
		"with space.go": "package a\n\nfunc G() {}\n",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, wantOK := range map[string]bool{"good.go": true, "bad.go": false, "syntax.go": false, "with space.go": true} {
		cmd := exec.Command("sh", "-c", strings.ReplaceAll(m.Gates["format"].Command, "{files}", "'"+name+"'"))
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if (err == nil) != wantOK {
			t.Errorf("format gate on %s: err = %v (output %q), want pass = %v", name, err, out, wantOK)
		}
	}
}
