package gates

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkPy is a Python "linter": it records the exact argv it received and
// fails on every file containing "BAD", printing its name.
const checkPy = `import json, sys
with open("argv.json", "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\n")
bad = [p for p in sys.argv[1:] if "BAD" in open(p).read()]
for p in bad:
    print("style error in", p)
sys.exit(1 if bad else 0)
`

// pythonFixture makes a project whose file names test quoting: spaces,
// both quote kinds, a command substitution, a leading dash.
func pythonFixture(t *testing.T) (dir string, files []string) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	dir = t.TempDir()
	write(t, filepath.Join(dir, "check.py"), checkPy)
	files = []string{
		"plain.py",
		"with space.py",
		`it's "quoted".py`,
		"$(touch pwned).py",
		"`touch pwned2`.py",
		"-rf.py",
		"notes.txt",
	}
	for _, f := range files {
		write(t, filepath.Join(dir, f), "x = 1\n")
	}
	return dir, files
}

func argvCalls(t *testing.T, dir string) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "argv.json"))
	if err != nil {
		t.Fatal(err)
	}
	var calls [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var argv []string
		if err := json.Unmarshal([]byte(line), &argv); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, argv)
	}
	return calls
}

func TestFilesQuotingNoInjection(t *testing.T) {
	dir, files := pythonFixture(t)
	r := &Runner{Timeout: time.Minute}
	res := r.Run(context.Background(), dir, []Command{
		{Name: "lint", Command: "python3 check.py {files}", Extensions: []string{".py"}},
	}, files, "")
	if !res[0].Passed || res[0].Files != 6 {
		t.Fatalf("result = %+v", res[0])
	}
	calls := argvCalls(t, dir)
	want := []string{"plain.py", "with space.py", `it's "quoted".py`, "$(touch pwned).py", "`touch pwned2`.py", "./-rf.py"}
	if len(calls) != 1 || !slices.Equal(calls[0], want) {
		t.Errorf("check.py received %q, want %q", calls, want)
	}
	for _, f := range []string{"pwned", "pwned2"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("a file name was executed by the shell: %s exists", f)
		}
	}
}

func TestFilesFailureAttribution(t *testing.T) {
	dir, files := pythonFixture(t)
	write(t, filepath.Join(dir, "with space.py"), "BAD\n")
	write(t, filepath.Join(dir, "$(touch pwned).py"), "BAD\n")
	r := &Runner{}
	// grep, not check.py: attribution takes several runs and Python's
	// start-up is slow on a loaded machine. Same quoting, same files.
	res := r.Run(context.Background(), dir, []Command{
		{Name: "lint", Command: "! grep -H BAD {files}", Extensions: []string{"py"}},
	}, files, "")[0]
	if res.Passed || !res.PerFile || !res.Parsed {
		t.Fatalf("result = %+v, want a parsed per-file failure", res)
	}
	want := []string{"$(touch pwned).py", "with space.py"}
	if !slices.Equal(res.FailingTests, want) {
		t.Errorf("FailingTests = %q, want %q", res.FailingTests, want)
	}
	if !strings.Contains(res.OutputTail, "with space.py:BAD") {
		t.Errorf("OutputTail lacks the command's output: %q", res.OutputTail)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("attribution runs executed a file name")
	}
}

func TestSkippedWithoutMatchingFiles(t *testing.T) {
	dir := t.TempDir()
	r := &Runner{}
	res := r.Run(context.Background(), dir, []Command{
		{Name: "format", Command: "touch ran; false {files}", Extensions: []string{".go"}},
	}, []string{"README.md"}, "")[0]
	if !res.Skipped || !res.Passed {
		t.Errorf("result = %+v, want skipped and passed", res)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("a skipped command ran")
	}
}

func TestCacheUnchangedTreeRunsNothing(t *testing.T) {
	dir := t.TempDir()
	cache, err := NewCache(filepath.Join(t.TempDir(), "cache"))
	if err != nil {
		t.Fatal(err)
	}
	// Each command counts its own executions in a file.
	cmds := []Command{
		{Name: "test", Command: "echo x >> test.count"},
		{Name: "lint", Command: "echo x >> lint.count; ls {files} >/dev/null", Extensions: []string{".py"}},
		{Name: "typecheck", Command: "echo x >> typecheck.count; echo failing; exit 3"},
	}
	write(t, filepath.Join(dir, "a.py"), "")
	count := func(name string) int {
		b, _ := os.ReadFile(filepath.Join(dir, name+".count"))
		return strings.Count(string(b), "x")
	}
	r := &Runner{Cache: cache}
	ctx := context.Background()
	first := r.Run(ctx, dir, cmds, []string{"a.py"}, "tree-1")
	second := r.Run(ctx, dir, cmds, []string{"a.py"}, "tree-1")
	for _, name := range []string{"test", "lint", "typecheck"} {
		if n := count(name); n != 1 {
			t.Errorf("%s ran %d times on an unchanged tree, want 1", name, n)
		}
	}
	for i := range cmds {
		if first[i].Cached || !second[i].Cached {
			t.Errorf("%s: Cached = %v then %v, want false then true", cmds[i].Name, first[i].Cached, second[i].Cached)
		}
		if second[i].Passed != first[i].Passed || second[i].ExitCode != first[i].ExitCode || second[i].OutputTail != first[i].OutputTail {
			t.Errorf("%s: cached result %+v differs from the original %+v", cmds[i].Name, second[i], first[i])
		}
	}
	if second[2].ExitCode != 3 || second[2].Passed {
		t.Errorf("a cached failure lost its status: %+v", second[2])
	}

	// A fresh cache on the same directory (another process) also hits.
	again, _ := NewCache(cache.dir)
	(&Runner{Cache: again}).Run(ctx, dir, cmds, []string{"a.py"}, "tree-1")
	if n := count("test"); n != 1 {
		t.Errorf("a second cache instance re-ran the command: %d runs", n)
	}

	// A new tree runs again; so does a different file set; no key, no cache.
	r.Run(ctx, dir, cmds, []string{"a.py"}, "tree-2")
	if n := count("test"); n != 2 {
		t.Errorf("test ran %d times after the tree changed, want 2", n)
	}
	write(t, filepath.Join(dir, "b.py"), "")
	r.Run(ctx, dir, cmds, []string{"a.py", "b.py"}, "tree-2")
	if n := count("lint"); n != 3 {
		t.Errorf("lint ran %d times after its file set changed, want 3", n)
	}
	r.Run(ctx, dir, cmds, []string{"a.py"}, "")
	r.Run(ctx, dir, cmds, []string{"a.py"}, "")
	if n := count("test"); n != 4 {
		t.Errorf("test ran %d times with caching disabled, want 4", n)
	}
	// The environment is part of the key.
	(&Runner{Cache: cache, Env: []string{"MODE=strict"}}).Run(ctx, dir, cmds[:1], nil, "tree-1")
	if n := count("test"); n != 5 {
		t.Errorf("test ran %d times with a new environment, want 5", n)
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	r := &Runner{Timeout: 500 * time.Millisecond}
	res := r.Run(context.Background(), dir, []Command{
		{Name: "test", Command: "sleep 60 & echo $! > child.pid; echo started; wait"},
	}, nil, "")[0]
	if !res.TimedOut || res.Passed {
		t.Fatalf("result = %+v, want timed out", res)
	}
	if !strings.Contains(res.OutputTail, "started") || !strings.Contains(res.OutputTail, "gate timeout") {
		t.Errorf("OutputTail = %q", res.OutputTail)
	}
	b, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// The background child was in the gate's process group and was killed
	// with it; give the kernel a moment to reap it.
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("background child %d survived the gate's timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestParallelCommands(t *testing.T) {
	// Each command waits for the other's marker file: they can only both
	// finish if they run at the same time.
	dir := t.TempDir()
	wait := func(mine, other string) string {
		return "touch " + mine + "; i=0; while [ ! -f " + other + " ]; do i=$((i+1)); [ $i -gt 500 ] && exit 1; sleep 0.01; done"
	}
	res := (&Runner{Timeout: time.Minute}).Run(context.Background(), dir, []Command{
		{Name: "a", Command: wait("a", "b")},
		{Name: "b", Command: wait("b", "a")},
	}, nil, "")
	if !res[0].Passed || !res[1].Passed {
		t.Errorf("commands did not run in parallel: %+v", res)
	}
	if res[0].Name != "a" || res[1].Name != "b" {
		t.Errorf("results out of order: %s, %s", res[0].Name, res[1].Name)
	}
}

func TestGoTestParsed(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not installed")
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "go.mod"), "module example.com/m\n\ngo 1.22\n")
	write(t, filepath.Join(dir, "m_test.go"), `package m

import "testing"

func TestOK(t *testing.T) {}

func TestBroken(t *testing.T) {
	t.Run("with spaces", func(t *testing.T) { t.Fatal("boom") })
}
`)
	res := (&Runner{Timeout: 2 * time.Minute}).Run(context.Background(), dir, []Command{
		{Name: "test", Command: "go test ./..."},
	}, nil, "")[0]
	if res.Passed || !res.Parsed {
		t.Fatalf("result = %+v", res)
	}
	if res.Command != "go test ./..." || res.Ran != "go test -json ./..." {
		t.Errorf("Command, Ran = %q, %q", res.Command, res.Ran)
	}
	want := []string{"example.com/m.TestBroken", "example.com/m.TestBroken/with_spaces"}
	if !slices.Equal(res.FailingTests, want) {
		t.Errorf("FailingTests = %q, want %q", res.FailingTests, want)
	}
	// The tail is go test's readable text, not the JSON stream.
	if !strings.Contains(res.OutputTail, "boom") || strings.Contains(res.OutputTail, `"Action"`) {
		t.Errorf("OutputTail = %q", res.OutputTail)
	}
}

func TestPrepare(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		parsed   bool
	}{
		{"go test ./...", "go test -json ./...", true},
		{"go test -race -json ./...", "go test -race -json ./...", true},
		{"go test ./... | tee out", "go test ./... | tee out", false},
		{"go vet ./...", "go vet ./...", false},
		{"node --test", "node --test --test-reporter=tap", true},
		{"node --test --test-reporter=spec", "node --test --test-reporter=spec", false},
		{"cd x && go test ./...", "cd x && go test ./...", false},
		{"cargo test", "cargo test --no-fail-fast", true},
		{"cargo test --workspace -- --test-threads=1", "cargo test --no-fail-fast --workspace -- --test-threads=1", true},
		{"cargo test --no-fail-fast", "cargo test --no-fail-fast", true},
		{"cargo build", "cargo build", false},
		{"pytest", `pytest --junitxml="$SLUICE_GATE_REPORT"`, true},
		{"pytest -k 'a  and b' tests", `pytest --junitxml="$SLUICE_GATE_REPORT" -k 'a  and b' tests`, true},
		{"python -m pytest -q", `python -m pytest --junitxml="$SLUICE_GATE_REPORT" -q`, true},
		{"python3 -m pytest", `python3 -m pytest --junitxml="$SLUICE_GATE_REPORT"`, true},
		{"uv run pytest tests", `uv run pytest --junitxml="$SLUICE_GATE_REPORT" tests`, true},
		{"poetry run pytest", `poetry run pytest --junitxml="$SLUICE_GATE_REPORT"`, true},
		{"pytest --junitxml=out.xml", "pytest --junitxml=out.xml", false},
		{"pytest --junit-xml out.xml", "pytest --junit-xml out.xml", false},
		{"python -m pytestish", "python -m pytestish", false},
		{"vitest run src", `vitest run --reporter=default --reporter=junit --outputFile.junit="$SLUICE_GATE_REPORT" src`, true},
		{"npx vitest", `npx vitest --reporter=default --reporter=junit --outputFile.junit="$SLUICE_GATE_REPORT"`, true},
		{"npx vitest run --reporter=dot", "npx vitest run --reporter=dot", false},
		{"npx vitest watch", "npx vitest watch", false},
		{"npx jest", "npx jest", false},
	} {
		got, p := prepare(tc.in)
		if got != tc.want || (p != nil) != tc.parsed {
			t.Errorf("prepare(%q) = %q, parsed %v; want %q, %v", tc.in, got, p != nil, tc.want, tc.parsed)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for _, name := range []string{"a b", "it's", `"x"`, "$(id)", "`id`", "a\nb", "-n", "\\", "*"} {
		out, err := exec.Command("sh", "-c", "printf %s "+ShellQuote(name)).Output()
		if err != nil {
			t.Fatal(err)
		}
		want := name
		if strings.HasPrefix(name, "-") {
			want = "./" + name
		}
		if string(out) != want {
			t.Errorf("sh received %q for %q", out, name)
		}
	}
}

func TestAttributionNotPerFile(t *testing.T) {
	// A command that fails on the set but on no single file is not a
	// per-file check: nothing is pinned on a file and the result is not
	// parsed, so Judge cannot excuse it as pre-existing.
	dir := t.TempDir()
	res := (&Runner{}).Run(context.Background(), dir, []Command{
		{Name: "typecheck", Command: "set -- {files}; [ $# -lt 2 ]"},
	}, []string{"a.py", "b.py", "c.py"}, "")[0]
	if res.Passed || res.Parsed || len(res.FailingTests) != 0 {
		t.Errorf("result = %+v, want an unattributed failure", res)
	}
	if v := Judge(Result{Ran: "x", Passed: false, PerFile: true}, res); v.Pass {
		t.Errorf("Judge passed an unattributed {files} failure: %+v", v)
	}
}
