package gates

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestJudgeWholeTree(t *testing.T) {
	pass := Result{Name: "test", Ran: "go test -json ./...", Passed: true, Parsed: true}
	failing := func(parsed bool, tests ...string) Result {
		return Result{Name: "test", Ran: "go test -json ./...", ExitCode: 1, Parsed: parsed, FailingTests: tests}
	}
	for _, tc := range []struct {
		name        string
		t0, now     Result
		pass, pre   bool
		newFailures []string
		reason      string
	}{
		{
			name: "passed at T0, now failing: blocked, naming the test",
			t0:   pass, now: failing(true, "m.TestA"),
			newFailures: []string{"m.TestA"}, reason: "passed at the base commit, fails now: m.TestA",
		},
		{
			name: "passed at T0, now failing unparseably: blocked",
			t0:   pass, now: failing(false),
			reason: "passed at the base commit, fails now (exit status 1)",
		},
		{
			name: "failed at T0, same failures now: passes as pre-existing",
			t0:   failing(true, "m.TestFlaky"), now: failing(true, "m.TestFlaky"),
			pass: true, pre: true, reason: "failing before and after",
		},
		{
			name: "failed at T0, fewer failures now: passes",
			t0:   failing(true, "m.TestA", "m.TestB"), now: failing(true, "m.TestB"),
			pass: true, pre: true,
		},
		{
			name: "failed at T0, a new failing test now: blocked, naming only it",
			t0:   failing(true, "m.TestFlaky"), now: failing(true, "m.TestFlaky", "m.TestNew"),
			newFailures: []string{"m.TestNew"}, reason: "new failures: m.TestNew",
		},
		{
			name: "failed at T0 unparseably, failing now: not blocking",
			t0:   failing(false), now: failing(false),
			pass: true, pre: true, reason: "failing before and after",
		},
		{
			name: "parsed at T0, unparseable now: blocked",
			t0:   failing(true, "m.TestA"), now: failing(false),
			reason: "cannot be parsed",
		},
		{
			name: "timed out now, finished at T0: blocked",
			t0:   failing(false), now: Result{Name: "test", Ran: "x", TimedOut: true, ExitCode: -1, Duration: time.Minute},
			reason: "timed out",
		},
		{
			name: "no baseline: must pass",
			t0:   Result{}, now: failing(true, "m.TestA"),
			newFailures: []string{"m.TestA"},
		},
		{
			name: "passing now always passes",
			t0:   failing(true, "m.TestA"), now: pass,
			pass: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.t0, tc.now)
			if v.Pass != tc.pass || v.PreExisting != tc.pre || !slices.Equal(v.NewFailures, tc.newFailures) {
				t.Errorf("Judge = %+v; want pass=%v pre=%v new=%q", v, tc.pass, tc.pre, tc.newFailures)
			}
			if !strings.Contains(v.Reason, tc.reason) {
				t.Errorf("Reason = %q, want it to contain %q", v.Reason, tc.reason)
			}
			if v.Name != "test" {
				t.Errorf("Name = %q", v.Name)
			}
		})
	}
}

// TestJudgeGofmtBaseline runs the real gofmt gate on a fixture with one
// unformatted file at T0, the way the engine does: T0 on every tracked .go
// file, a task on the files it changed.
func TestJudgeGofmtBaseline(t *testing.T) {
	if _, err := exec.LookPath("gofmt"); err != nil {
		t.Skip("gofmt not installed")
	}
	ctx := context.Background()
	gate := Command{Name: "format", Command: `test -z "$(gofmt -l {files})"`, Extensions: []string{".go"}}
	r := &Runner{Timeout: time.Minute}

	base := t.TempDir()
	write(t, filepath.Join(base, "good.go"), "package m\n\nfunc Good() int { return 1 }\n")
	write(t, filepath.Join(base, "bad.go"), "package m\n\nfunc Bad() int {\n        return 2\n}\n")
	write(t, filepath.Join(base, "other.go"), "package m\n\nvar X = 1\n")
	t0 := r.Run(ctx, base, []Command{gate}, []string{"bad.go", "good.go", "other.go"}, "")[0]
	if t0.Passed || !t0.Parsed || !slices.Equal(t0.FailingTests, []string{"bad.go"}) {
		t.Fatalf("T0 = %+v, want a failure attributed to bad.go", t0)
	}

	task := func(files map[string]string) Verdict {
		dir := t.TempDir()
		var changed []string
		for name, content := range files {
			write(t, filepath.Join(dir, name), content)
			changed = append(changed, name)
		}
		slices.Sort(changed)
		return Judge(t0, r.Run(ctx, dir, []Command{gate}, changed, "")[0])
	}

	// A task that adds an unrelated, formatted file: bad.go is not its
	// business and does not block it.
	if v := task(map[string]string{"new.go": "package m\n\nvar Y = 2\n"}); !v.Pass {
		t.Errorf("unrelated task blocked: %+v", v)
	}
	// A task that makes the unformatted file worse: blocked, and the
	// reason says the file was already failing.
	v := task(map[string]string{"bad.go": "package m\n\nfunc Bad() int {\n        return 2\n}\n\nfunc Worse( ) int {\n\t\t\treturn 3 }\n"})
	if v.Pass || !strings.Contains(v.Reason, "bad.go, which already failed at the base commit") {
		t.Errorf("task making bad.go worse: %+v, want blocked naming bad.go as pre-existing", v)
	}
	// A task that breaks a formatted file: blocked, the file a new failure.
	v = task(map[string]string{"good.go": "package m\n\nfunc Good() int {  return 1 }\n", "new.go": "package m\n"})
	if v.Pass || !slices.Equal(v.NewFailures, []string{"good.go"}) {
		t.Errorf("task unformatting good.go: %+v, want blocked with good.go new", v)
	}
	// A task that edits bad.go and leaves it formatted: passes.
	if v := task(map[string]string{"bad.go": "package m\n\nfunc Bad() int {\n\treturn 2\n}\n"}); !v.Pass {
		t.Errorf("task fixing bad.go blocked: %+v", v)
	}
	// A task that changes no Go file: the gate is skipped and passes.
	if v := task(map[string]string{"README.md": "hi\n"}); !v.Pass || !strings.Contains(v.Reason, "skipped") {
		t.Errorf("task without Go files: %+v", v)
	}
}
