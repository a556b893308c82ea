package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-run/sluice/internal/redact"
	"github.com/sluice-run/sluice/internal/sandbox"
)

// TestMain lets the test binary stand in for the sluice binary in the bash
// sandbox: run as "<test> __sandbox-exec ...", it is the sandbox helper,
// running the same code as `sluice __sandbox-exec`.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.Subcommand {
		err := sandbox.Main(os.Args[2:], os.Environ())
		fmt.Fprintln(os.Stderr, err)
		os.Exit(127)
	}
	os.Exit(m.Run())
}

type toolSet map[string]Tool

func newSet(t *testing.T, opts Options) toolSet {
	t.Helper()
	if opts.Root == "" {
		opts.Root = t.TempDir()
	}
	if opts.Env == nil {
		opts.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	}
	ts, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	set := toolSet{}
	for _, tool := range ts {
		spec := tool.Spec()
		if !json.Valid(spec.Schema) {
			t.Fatalf("tool %s has an invalid JSON schema: %s", spec.Name, spec.Schema)
		}
		set[spec.Name] = tool
	}
	return set
}

func (s toolSet) call(t *testing.T, name string, input any) (string, error) {
	t.Helper()
	tool, ok := s[name]
	if !ok {
		t.Fatalf("no tool %q", name)
	}
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	return tool.Call(context.Background(), raw)
}

func (s toolSet) must(t *testing.T, name string, input any) string {
	t.Helper()
	out, err := s.call(t, name, input)
	if err != nil {
		t.Fatalf("%s(%v): %v", name, input, err)
	}
	return out
}

type obj = map[string]any

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewToolNames(t *testing.T) {
	names := func(s toolSet) []string {
		var n []string
		for k := range s {
			n = append(n, k)
		}
		slices.Sort(n)
		return n
	}
	rw := newSet(t, Options{})
	if got, want := names(rw), []string{"bash", "edit_file", "glob", "grep", "list", "read_file", "write_file"}; !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	ro := newSet(t, Options{ReadOnly: true})
	if got, want := names(ro), []string{"bash", "glob", "grep", "list", "read_file"}; !slices.Equal(got, want) {
		t.Errorf("read-only tools = %v, want %v", got, want)
	}
	for _, n := range []string{"read_file", "list", "glob", "grep"} {
		if !rw[n].ReadOnly() {
			t.Errorf("%s.ReadOnly() = false", n)
		}
	}
	for _, n := range []string{"write_file", "edit_file", "bash"} {
		if rw[n].ReadOnly() {
			t.Errorf("%s.ReadOnly() = true", n)
		}
	}
}

func TestNewRequiresTempDirForSandbox(t *testing.T) {
	_, err := New(Options{Root: t.TempDir(), SandboxExe: os.Args[0]})
	if err == nil || !strings.Contains(err.Error(), "TempDir") {
		t.Errorf("err = %v, want a TempDir error", err)
	}
	if _, err := New(Options{Root: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("New with a missing root succeeded")
	}
}

func TestInvalidArguments(t *testing.T) {
	s := newSet(t, Options{})
	_, err := s["read_file"].Call(context.Background(), json.RawMessage(`{"path":"a","lines":3}`))
	if err == nil || !strings.Contains(err.Error(), `unknown field "lines"`) {
		t.Errorf("unknown field: err = %v", err)
	}
	_, err = s["read_file"].Call(context.Background(), json.RawMessage(`{"path":7}`))
	if err == nil || !strings.Contains(err.Error(), "invalid arguments for read_file") {
		t.Errorf("wrong type: err = %v", err)
	}
}

// TestSandboxPaths covers every way a path might leave the worktree or reach
// git's or sluice's own files; each is a tool error, and nothing outside the
// worktree is read or changed.
func TestSandboxPaths(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(outside, "secret.txt"), "outside secret\n")
	writeFile(t, filepath.Join(root, ".git", "config"), "[core]\n")
	writeFile(t, filepath.Join(root, ".sluice", "state.json"), "{}\n")
	writeFile(t, filepath.Join(root, "ok.txt"), "fine\n")
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "secret-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git", filepath.Join(root, "gitlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "not-yet"), filepath.Join(root, "dangling")); err != nil {
		t.Fatal(err)
	}
	s := newSet(t, Options{Root: root})

	cases := []struct {
		name   string
		tool   string
		input  obj
		target error
		msg    string
	}{
		{"dotdot read", "read_file", obj{"path": "../x"}, ErrOutsideWorktree, "path ../x escapes the worktree"},
		{"dotdot write", "write_file", obj{"path": "sub/../../x", "content": "x"}, ErrOutsideWorktree, "escapes the worktree"},
		{"absolute outside", "read_file", obj{"path": filepath.Join(outside, "secret.txt")}, ErrOutsideWorktree, "outside the worktree"},
		{"absolute etc", "write_file", obj{"path": "/etc/sluice-test", "content": "x"}, ErrOutsideWorktree, "outside the worktree"},
		{"symlinked dir read", "read_file", obj{"path": "out/secret.txt"}, ErrOutsideWorktree, "symbolic link"},
		{"symlinked dir write", "write_file", obj{"path": "out/new.txt", "content": "x"}, ErrOutsideWorktree, "symbolic link"},
		{"symlinked file", "read_file", obj{"path": "secret-link"}, ErrOutsideWorktree, "symbolic link"},
		{"symlinked file edit", "edit_file", obj{"path": "secret-link", "old_string": "outside", "new_string": "x"}, ErrOutsideWorktree, "symbolic link"},
		{"dangling symlink write", "write_file", obj{"path": "dangling", "content": "x"}, nil, "broken symbolic link"},
		{"symlink list", "list", obj{"path": "out"}, ErrOutsideWorktree, "symbolic link"},
		{"symlink grep", "grep", obj{"pattern": "secret", "path": "out"}, ErrOutsideWorktree, "symbolic link"},
		{"git config write", "write_file", obj{"path": ".git/config", "content": "[core]\n\tbare = true\n"}, ErrForbiddenPath, "inside .git"},
		{"git config read", "read_file", obj{"path": ".git/config"}, ErrForbiddenPath, "inside .git"},
		{"git via dotdot", "write_file", obj{"path": "sub/../.git/config", "content": "x"}, ErrForbiddenPath, "inside .git"},
		{"git via symlink", "write_file", obj{"path": "gitlink/config", "content": "x"}, ErrForbiddenPath, "inside .git"},
		{"nested git", "write_file", obj{"path": "vendor/x/.git/HEAD", "content": "x"}, ErrForbiddenPath, "inside .git"},
		{"sluice state", "write_file", obj{"path": ".sluice/state.json", "content": "{}"}, ErrForbiddenPath, "inside .sluice"},
		{"sluice state edit", "edit_file", obj{"path": ".sluice/state.json", "old_string": "{}", "new_string": "[]"}, ErrForbiddenPath, "inside .sluice"},
		{"sluice list", "list", obj{"path": ".sluice"}, ErrForbiddenPath, "inside .sluice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := s.call(t, c.tool, c.input)
			if err == nil {
				t.Fatalf("%s(%v) succeeded: %q", c.tool, c.input, out)
			}
			if c.target != nil && !errors.Is(err, c.target) {
				t.Errorf("err = %v, want it to wrap %v", err, c.target)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("err = %q, want it to say %q", err, c.msg)
			}
		})
	}
	if got := readFile(t, filepath.Join(root, ".git", "config")); got != "[core]\n" {
		t.Errorf(".git/config changed: %q", got)
	}
	if got := readFile(t, filepath.Join(root, ".sluice", "state.json")); got != "{}\n" {
		t.Errorf(".sluice/state.json changed: %q", got)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("files appeared outside the worktree: %v", entries)
	}
	if _, err := os.Stat("/etc/sluice-test"); err == nil {
		t.Error("/etc/sluice-test was written")
	}

	// Absolute paths inside the worktree, and symbolic links that stay
	// inside, are fine.
	if out := s.must(t, "read_file", obj{"path": filepath.Join(root, "ok.txt")}); !strings.Contains(out, "fine") {
		t.Errorf("absolute path inside: %q", out)
	}
	if err := os.Symlink("ok.txt", filepath.Join(root, "ok-link")); err != nil {
		t.Fatal(err)
	}
	if out := s.must(t, "read_file", obj{"path": "ok-link"}); !strings.Contains(out, "fine") {
		t.Errorf("symlink inside: %q", out)
	}
	// grep and list of the root do not show .git or .sluice.
	if out := s.must(t, "list", obj{}); strings.Contains(out, ".git/") || strings.Contains(out, ".sluice") {
		t.Errorf("list shows forbidden dirs:\n%s", out)
	}
	if out := s.must(t, "grep", obj{"pattern": "core|\\{\\}"}); strings.Contains(out, ".git") || strings.Contains(out, ".sluice") {
		t.Errorf("grep searched forbidden dirs:\n%s", out)
	}
}

func TestRedactOption(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "creds"), "token=configured-secret-value\n")
	s := newSet(t, Options{Root: root, Redact: redact.New("configured-secret-value")})
	if out := s.must(t, "read_file", obj{"path": "creds"}); strings.Contains(out, "configured-secret-value") || !strings.Contains(out, redact.Mask) {
		t.Errorf("read_file result not redacted: %q", out)
	}
	if out := s.must(t, "bash", obj{"command": "cat creds"}); strings.Contains(out, "configured-secret-value") {
		t.Errorf("bash result not redacted: %q", out)
	}
	_, err := s.call(t, "read_file", obj{"path": "configured-secret-value"})
	if err == nil || strings.Contains(err.Error(), "configured-secret-value") {
		t.Errorf("error not redacted: %v", err)
	}
}

func TestWriteFile(t *testing.T) {
	root := t.TempDir()
	s := newSet(t, Options{Root: root})
	out := s.must(t, "write_file", obj{"path": "a/b/c.txt", "content": "one\ntwo\n"})
	if !strings.Contains(out, "created a/b/c.txt") || !strings.Contains(out, "2 lines") {
		t.Errorf("output %q", out)
	}
	if got := readFile(t, filepath.Join(root, "a/b/c.txt")); got != "one\ntwo\n" {
		t.Errorf("content %q", got)
	}
	if out := s.must(t, "write_file", obj{"path": "a/b/c.txt", "content": "x"}); !strings.Contains(out, "overwrote") {
		t.Errorf("output %q", out)
	}
	_, err := s.call(t, "write_file", obj{"path": "bad.go", "content": "package x\nfunc {"})
	if err == nil || !strings.Contains(err.Error(), "would no longer parse") {
		t.Errorf("broken Go write: err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "bad.go")); !os.IsNotExist(err) {
		t.Error("a Go file that does not parse was written")
	}
	// testdata may hold deliberately broken Go.
	s.must(t, "write_file", obj{"path": "p/testdata/bad.go", "content": "package x\nfunc {"})
}

func TestReadFileWindows(t *testing.T) {
	root := t.TempDir()
	var b strings.Builder
	for i := 1; i <= 250; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	writeFile(t, filepath.Join(root, "f.txt"), b.String())
	writeFile(t, filepath.Join(root, "long.txt"), strings.Repeat("x", 5000)+"\nshort")
	writeFile(t, filepath.Join(root, "bin"), "ab\x00cd")
	writeFile(t, filepath.Join(root, "empty"), "")
	s := newSet(t, Options{Root: root})

	out := s.must(t, "read_file", obj{"path": "f.txt"})
	if !strings.HasPrefix(out, "f.txt: lines 1-100 of 250\n") {
		t.Errorf("header: %q", out[:min(len(out), 60)])
	}
	if !strings.Contains(out, "     1\tline 1\n") || !strings.Contains(out, "   100\tline 100\n") || strings.Contains(out, "line 101\n") {
		t.Errorf("default window is not lines 1-100:\n%s", out)
	}
	if !strings.Contains(out, "(150 more lines; call read_file with offset 101 to continue)") {
		t.Errorf("no continuation note:\n%s", out)
	}

	out = s.must(t, "read_file", obj{"path": "f.txt", "offset": 201, "limit": 100})
	if !strings.HasPrefix(out, "f.txt: lines 201-250 of 250\n") || !strings.Contains(out, "   250\tline 250\n") || strings.Contains(out, "more lines") {
		t.Errorf("last window:\n%s", out)
	}
	out = s.must(t, "read_file", obj{"path": "f.txt", "offset": 10, "limit": 3})
	if got := strings.Count(out, "\tline "); got != 3 || !strings.Contains(out, "    12\tline 12") {
		t.Errorf("offset 10 limit 3:\n%s", out)
	}

	if _, err := s.call(t, "read_file", obj{"path": "f.txt", "offset": 300}); err == nil || !strings.Contains(err.Error(), "has 250 lines") {
		t.Errorf("offset past the end: err = %v", err)
	}
	if out := s.must(t, "read_file", obj{"path": "long.txt"}); !strings.Contains(out, "line truncated; 5000 bytes") || len(out) > 3000 {
		t.Errorf("long line not truncated (%d bytes)", len(out))
	}
	if _, err := s.call(t, "read_file", obj{"path": "bin"}); err == nil || !strings.Contains(err.Error(), "binary") {
		t.Errorf("binary: err = %v", err)
	}
	if out := s.must(t, "read_file", obj{"path": "empty"}); !strings.Contains(out, "empty") {
		t.Errorf("empty: %q", out)
	}
	if _, err := s.call(t, "read_file", obj{"path": "nope.txt"}); err == nil || err.Error() != "nope.txt does not exist" {
		t.Errorf("missing: err = %v", err)
	}
}

func TestEditFileMatchCounts(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "t.txt"), "alpha\nbeta\nalpha\ngamma\nalpha\n")
	s := newSet(t, Options{Root: root})

	_, err := s.call(t, "edit_file", obj{"path": "t.txt", "old_string": "delta", "new_string": "x"})
	if err == nil || !strings.Contains(err.Error(), "matches 0 times") {
		t.Errorf("no match: err = %v", err)
	}
	_, err = s.call(t, "edit_file", obj{"path": "t.txt", "old_string": "alpha", "new_string": "x"})
	if err == nil || !strings.Contains(err.Error(), "matches 3 times") || !strings.Contains(err.Error(), "lines 1, 3, 5") {
		t.Errorf("three matches: err = %v", err)
	}
	if got := readFile(t, filepath.Join(root, "t.txt")); got != "alpha\nbeta\nalpha\ngamma\nalpha\n" {
		t.Fatalf("a refused edit changed the file: %q", got)
	}
	out := s.must(t, "edit_file", obj{"path": "t.txt", "old_string": "beta\nalpha", "new_string": "BETA\nALPHA"})
	if !strings.Contains(out, "replaced 1 occurrence") || !strings.Contains(out, "     2\tBETA") {
		t.Errorf("output:\n%s", out)
	}
	if got := readFile(t, filepath.Join(root, "t.txt")); got != "alpha\nBETA\nALPHA\ngamma\nalpha\n" {
		t.Errorf("after unique edit: %q", got)
	}
	s.must(t, "edit_file", obj{"path": "t.txt", "old_string": "alpha", "new_string": "omega", "replace_all": true})
	if got := readFile(t, filepath.Join(root, "t.txt")); got != "omega\nBETA\nALPHA\ngamma\nomega\n" {
		t.Errorf("after replace_all: %q", got)
	}
	if _, err := s.call(t, "edit_file", obj{"path": "t.txt", "old_string": "", "new_string": "x"}); err == nil {
		t.Error("empty old_string accepted")
	}
	if _, err := s.call(t, "edit_file", obj{"path": "missing.txt", "old_string": "a", "new_string": "b"}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing file: err = %v", err)
	}
}

func TestEditFileRejectsBrokenGo(t *testing.T) {
	root := t.TempDir()
	src := "package demo\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"
	writeFile(t, filepath.Join(root, "demo.go"), src)
	s := newSet(t, Options{Root: root})

	_, err := s.call(t, "edit_file", obj{"path": "demo.go", "old_string": "return a + b\n}", "new_string": "return a + b\n"})
	if err == nil {
		t.Fatal("an edit that breaks Go syntax was accepted")
	}
	if !strings.Contains(err.Error(), "edit rejected, demo.go is unchanged") || !strings.Contains(err.Error(), "demo.go:") {
		t.Errorf("err = %v, want the rejection and the parser's position", err)
	}
	if got := readFile(t, filepath.Join(root, "demo.go")); got != src {
		t.Errorf("rejected edit changed the file:\n%s", got)
	}
	s.must(t, "edit_file", obj{"path": "demo.go", "old_string": "a + b", "new_string": "b + a"})
	if got := readFile(t, filepath.Join(root, "demo.go")); !strings.Contains(got, "return b + a") {
		t.Errorf("valid edit not applied:\n%s", got)
	}
	// Non-Go files are not parsed.
	writeFile(t, filepath.Join(root, "notes.md"), "func {\n")
	s.must(t, "edit_file", obj{"path": "notes.md", "old_string": "func {", "new_string": "func {{"})
}

func TestGrepCapsAndSummarises(t *testing.T) {
	root := t.TempDir()
	for i, n := range []int{60, 40, 20} {
		var b strings.Builder
		for j := 0; j < n; j++ {
			fmt.Fprintf(&b, "needle %d\nhay\n", j)
		}
		writeFile(t, filepath.Join(root, fmt.Sprintf("d%d/f.txt", i)), b.String())
	}
	writeFile(t, filepath.Join(root, "bin.dat"), "needle\x00needle")
	writeFile(t, filepath.Join(root, ".git", "x"), "needle\n")
	writeFile(t, filepath.Join(root, "code.go"), "package x // Needle\n")
	s := newSet(t, Options{Root: root})

	out := s.must(t, "grep", obj{"pattern": "needle \\d+"})
	if got := strings.Count(out, "\n") - 2; got != MaxGrepResults {
		t.Errorf("shown %d match lines, want %d:\n%s", got, MaxGrepResults, out)
	}
	if !strings.Contains(out, "d0/f.txt:1: needle 0\n") || !strings.Contains(out, "d0/f.txt:99: needle 49\n") {
		t.Errorf("first matches missing or misnumbered:\n%s", out)
	}
	if !strings.Contains(out, "120 matches in 3 files in all; 70 more not shown, in: d0/f.txt (10), d1/f.txt (40), d2/f.txt (20)") {
		t.Errorf("summary missing:\n%s", out[strings.LastIndex(out, "needle"):])
	}
	if strings.Contains(out, "bin.dat") || strings.Contains(out, ".git") {
		t.Errorf("binary or .git searched:\n%s", out)
	}

	out = s.must(t, "grep", obj{"pattern": "needle", "glob": "**/*.go", "ignore_case": true})
	if out != "code.go:1: package x // Needle\n1 matches in 1 files\n" {
		t.Errorf("glob+ignore_case: %q", out)
	}
	out = s.must(t, "grep", obj{"pattern": "needle 5$", "path": "d2/f.txt"})
	if out != "d2/f.txt:11: needle 5\n1 matches in 1 files\n" {
		t.Errorf("single file: %q", out)
	}
	if out := s.must(t, "grep", obj{"pattern": "absent"}); !strings.HasPrefix(out, "no matches") {
		t.Errorf("no matches: %q", out)
	}
	if _, err := s.call(t, "grep", obj{"pattern": "("}); err == nil || !strings.Contains(err.Error(), "bad regular expression") {
		t.Errorf("bad regexp: err = %v", err)
	}
}

func TestGlob(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"a.go", "a_test.go", "x/b.go", "x/y/c_test.go", "x/y/d.txt", ".git/e.go"} {
		writeFile(t, filepath.Join(root, p), "")
	}
	s := newSet(t, Options{Root: root})
	cases := map[string]string{
		"**/*_test.go": "a_test.go\nx/y/c_test.go\n",
		"*.go":         "a.go\na_test.go\n",
		"x/**/*.go":    "x/b.go\nx/y/c_test.go\n",
		"x/*/*":        "x/y/c_test.go\nx/y/d.txt\n",
		"**/**/d.txt":  "x/y/d.txt\n",
	}
	for pat, want := range cases {
		if got := s.must(t, "glob", obj{"pattern": pat}); got != want {
			t.Errorf("glob %q = %q, want %q", pat, got, want)
		}
	}
	if got := s.must(t, "glob", obj{"pattern": "*.go", "path": "x"}); got != "x/b.go\n" {
		t.Errorf("glob under x = %q", got)
	}
	if _, err := s.call(t, "glob", obj{"pattern": "[a"}); err == nil {
		t.Error("bad pattern accepted")
	}
}

func TestList(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "f.txt"), "abc")
	writeFile(t, filepath.Join(root, "sub", "g"), "")
	writeFile(t, filepath.Join(root, ".git", "HEAD"), "")
	s := newSet(t, Options{Root: root})
	if got := s.must(t, "list", obj{}); got != "f.txt (3 bytes)\nsub/\n" {
		t.Errorf("list = %q", got)
	}
	if got := s.must(t, "list", obj{"path": "sub"}); got != "g (0 bytes)\n" {
		t.Errorf("list sub = %q", got)
	}
}

func TestBashBasics(t *testing.T) {
	root := t.TempDir()
	s := newSet(t, Options{Root: root})
	out := s.must(t, "bash", obj{"command": "echo hello; echo oops >&2"})
	if out != "hello\noops\n[exit status 0]" {
		t.Errorf("out = %q", out)
	}
	if out := s.must(t, "bash", obj{"command": "exit 3"}); out != "[exit status 3]" {
		t.Errorf("exit 3: %q", out)
	}
	real, _ := filepath.EvalSymlinks(root)
	if out := s.must(t, "bash", obj{"command": "pwd"}); out != real+"\n[exit status 0]" {
		t.Errorf("pwd = %q, want the worktree %s", out, real)
	}
}

func TestBashEnvironmentHasNoSecrets(t *testing.T) {
	s := newSet(t, Options{Env: []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=/nonexistent-home",
		"ANTHROPIC_API_KEY=sk-ant-api03-should-never-be-seen",
		"OPENAI_API_KEY=sk-proj-should-never-be-seen",
		"GITHUB_TOKEN=ghp_should_never_be_seen",
		"GOFLAGS=-mod=mod",
		"RANDOM_OTHER=dropped",
	}})
	out := s.must(t, "bash", obj{"command": `echo "a=$ANTHROPIC_API_KEY o=$OPENAI_API_KEY g=$GITHUB_TOKEN r=$RANDOM_OTHER f=$GOFLAGS h=$HOME"; env | grep -c -e KEY -e TOKEN`})
	if !strings.HasPrefix(out, "a= o= g= r= f=-mod=mod h=/nonexistent-home\n0\n") {
		t.Errorf("environment leaked or lost variables: %q", out)
	}
}

func TestFilterEnvDropsCredentialsEvenIfAllowlisted(t *testing.T) {
	got := FilterEnv([]string{"PATH=/bin", "GOPROXY_TOKEN=x", "HOME=/h", "NPM_TOKEN=y", "MY_PASSWORD=z", "AWS_SECRET_ACCESS_KEY=w", "BAD"})
	if want := []string{"PATH=/bin", "HOME=/h"}; !slices.Equal(got, want) {
		t.Errorf("FilterEnv = %q, want %q", got, want)
	}
}

func TestBashTimeoutKillsProcessGroup(t *testing.T) {
	root := t.TempDir()
	s := newSet(t, Options{Root: root, BashTimeout: time.Second})
	pidFile := filepath.Join(root, "grandchild.pid")
	// The grandchild runs in a subshell in the background; only a
	// process-group kill reaches it.
	start := time.Now()
	_, err := s.call(t, "bash", obj{"command": "(sleep 300 & echo $! > grandchild.pid; wait) & sleep 300"})
	if err == nil || !strings.Contains(err.Error(), "timed out after 1s") || !strings.Contains(err.Error(), "killed with all its child processes") {
		t.Fatalf("err = %v, want a timeout error", err)
	}
	if elapsed := time.Since(start); elapsed > 30*time.Second {
		t.Errorf("the call took %s; the timeout did not stop it", elapsed)
	}
	var pid int
	if _, err := fmt.Sscan(readFile(t, pidFile), &pid); err != nil {
		t.Fatalf("grandchild pid: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); alive(pid); {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still running after the timeout", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

func TestBashTimeoutBelowDefault(t *testing.T) {
	s := newSet(t, Options{BashTimeout: time.Minute})
	_, err := s.call(t, "bash", obj{"command": "sleep 60", "timeout_seconds": 1})
	if err == nil || !strings.Contains(err.Error(), "timed out after 1s") {
		t.Errorf("err = %v", err)
	}
}

func TestBashCancelledIsNotATimeout(t *testing.T) {
	s := newSet(t, Options{BashTimeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := s["bash"].Call(ctx, json.RawMessage(`{"command":"sleep 60"}`))
	if err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("err = %v, want a cancellation", err)
	}
}

func TestBashBackgroundChildDoesNotHang(t *testing.T) {
	s := newSet(t, Options{BashTimeout: time.Minute})
	start := time.Now()
	out := s.must(t, "bash", obj{"command": "sleep 120 & echo started"})
	if !strings.HasPrefix(out, "started\n") {
		t.Errorf("out = %q", out)
	}
	if elapsed := time.Since(start); elapsed > 30*time.Second {
		t.Errorf("a background child held the call for %s", elapsed)
	}
}

func TestBashOutputCap(t *testing.T) {
	s := newSet(t, Options{OutputCap: 10_000})
	// 50 MB: the head is "a"s, the tail ends with a marker.
	out := s.must(t, "bash", obj{"command": "head -c 52428800 /dev/zero | tr '\\0' a; echo; echo THE-END"})
	if len(out) > 10_000+300 {
		t.Errorf("output is %d bytes, want about 10000", len(out))
	}
	if !strings.Contains(out, "bytes of output cut (52428809 bytes in all)") {
		t.Errorf("no cut note in %q...", out[4900:5200])
	}
	if !strings.HasPrefix(out, "aaaa") || !strings.HasSuffix(out, "THE-END\n[exit status 0]") {
		t.Errorf("head or tail lost: %q ... %q", out[:10], out[len(out)-30:])
	}
}

func TestCapBuffer(t *testing.T) {
	c := newCapBuffer(10)
	for _, s := range []string{"01", "234", "56789abc", "de", "f"} {
		c.Write([]byte(s))
	}
	want := "01234\n[... 6 bytes of output cut (16 bytes in all); showing the first 5 and the last 5 bytes ...]\nbcdef\n"
	if got := c.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	small := newCapBuffer(10)
	small.Write([]byte("hi\n"))
	if got := small.String(); got != "hi\n" {
		t.Errorf("small = %q", got)
	}
}

func requireLandlock(t *testing.T) {
	t.Helper()
	if _, err := sandbox.ABI(); err != nil {
		t.Skipf("skipped: this kernel lacks Landlock, so bash's writes cannot be confined here (%v)", err)
	}
}

func TestBashLandlockConfinesWrites(t *testing.T) {
	requireLandlock(t)
	root, home, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	var warnings []string
	s := newSet(t, Options{
		Root: root, TempDir: tmp, SandboxExe: os.Args[0],
		Env:  []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home},
		Warn: func(w string) { warnings = append(warnings, w) },
	})
	if len(warnings) > 0 {
		t.Errorf("warnings with Landlock available: %q", warnings)
	}
	out := s.must(t, "bash", obj{"command": `echo x > "$HOME/escaped"`})
	if !strings.Contains(out, "Permission denied") || strings.HasSuffix(out, "[exit status 0]") {
		t.Errorf("write to $HOME was not refused: %q", out)
	}
	if _, err := os.Stat(filepath.Join(home, "escaped")); !os.IsNotExist(err) {
		t.Errorf("$HOME/escaped exists (stat err %v)", err)
	}
	out = s.must(t, "bash", obj{"command": `mkdir -p a/b && echo in > a/b/f && echo t > "$TMPDIR/t" && echo "$TMPDIR" && cat a/b/f`})
	if out != tmp+"\nin\n[exit status 0]" {
		t.Errorf("writes inside the worktree and TMPDIR: %q", out)
	}
}

func TestBashLandlockReadOnlyRole(t *testing.T) {
	requireLandlock(t)
	root, tmp := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(root, "f.txt"), "original\n")
	s := newSet(t, Options{Root: root, TempDir: tmp, SandboxExe: os.Args[0], ReadOnly: true})
	out := s.must(t, "bash", obj{"command": `echo changed > f.txt`})
	if !strings.Contains(out, "Permission denied") {
		t.Errorf("read-only role wrote the worktree: %q", out)
	}
	if got := readFile(t, filepath.Join(root, "f.txt")); got != "original\n" {
		t.Errorf("f.txt = %q", got)
	}
	out = s.must(t, "bash", obj{"command": `cat f.txt && echo scratch > "$TMPDIR/s" && cat "$TMPDIR/s"`})
	if out != "original\nscratch\n[exit status 0]" {
		t.Errorf("read-only role could not read or use TMPDIR: %q", out)
	}
}

func TestBashEnvGoCacheUnderSandbox(t *testing.T) {
	tmp := t.TempDir()
	cache := filepath.Join(t.TempDir(), "gocache")
	env := bashEnv([]string{"PATH=/bin", "GOCACHE=" + cache}, tmp, true, []string{tmp})
	if !slices.Contains(env, "GOCACHE="+filepath.Join(tmp, "go-build")) || !slices.Contains(env, "TMPDIR="+tmp) {
		t.Errorf("unwritable GOCACHE not moved into the temp dir: %q", env)
	}
	env = bashEnv([]string{"PATH=/bin", "GOCACHE=" + cache}, tmp, true, []string{tmp, filepath.Dir(cache)})
	if !slices.Contains(env, "GOCACHE="+cache) {
		t.Errorf("writable GOCACHE replaced: %q", env)
	}
	env = bashEnv([]string{"PATH=/bin", "GOCACHE=" + cache}, tmp, false, nil)
	if !slices.Contains(env, "GOCACHE="+cache) {
		t.Errorf("GOCACHE replaced without a sandbox: %q", env)
	}
}
