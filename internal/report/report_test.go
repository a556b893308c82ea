package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/report/fixture"
	"github.com/sluice-run/sluice/internal/run"
	"github.com/sluice-run/sluice/internal/store"
)

func load(t *testing.T, r fixture.Run) *run.Loaded {
	t.Helper()
	dir, err := fixture.Write(filepath.Join(t.TempDir(), "runs"), r)
	if err != nil {
		t.Fatal(err)
	}
	l, err := run.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func render(t *testing.T, l *run.Loaded) string {
	t.Helper()
	out, err := Render(l)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// selfContained fails on anything that would reach outside the file.
func selfContained(t *testing.T, page string) {
	t.Helper()
	if strings.Contains(page, "ZgotmplZ") {
		t.Errorf("html/template rejected a value (ZgotmplZ) somewhere in the page")
	}
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "@import", "url(http"} {
		if strings.Contains(strings.ToLower(page), bad) {
			t.Errorf("the page contains %q: it must need no scripts and no external assets", bad)
		}
	}
	for _, m := range regexp.MustCompile(`(?:href|src)="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if strings.Contains(m[1], "://") || strings.HasPrefix(m[1], "//") {
			t.Errorf("the page links outside itself: %s", m[0])
		}
	}
}

func TestReportShowsTheRun(t *testing.T) {
	r := fixture.Simulate(fixture.Options{Tasks: 10, Jobs: 3, Revisions: 1, FailGates: []string{"t2"}, FailExecutor: []string{"t4"}})
	l := load(t, r)
	page := render(t, l)
	selfContained(t, page)

	for _, want := range []string{
		"<title>sluice run " + r.Meta.RunID + "</title>",
		"Add a search endpoint with pagination",
		`class="badge s-done">done</span>`,
		// critique history
		"split the router change into its own task", "REVISE", "APPROVE",
		// cost by model, read from the transcripts
		"claude-opus-4-1", "claude-sonnet-4-5", "claude-haiku-4-5",
		// gate clauses with output tails; t2's failing test output
		"--- FAIL: TestPart2", "go test ./...", "gofmt -l {files}",
		// links to transcripts and artifacts, relative to the run dir
		`href="transcripts/task_t1_a1_execute.jsonl"`, `href="artifacts/task_t2_a1_gates.json"`,
		// failed attempts are explained
		"attempt 1 failed at gates", "executor delegation failed (max_turns)",
		`id="task-t10"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// One graph node per task, one edge per dependency.
	deps := 0
	for _, pt := range r.State.Plan.Tasks {
		deps += len(pt.DependsOn)
	}
	if got := strings.Count(page, `marker-end="url(#arrow)"`); got != deps {
		t.Errorf("graph has %d edges, want %d", got, deps)
	}
	if got := strings.Count(page, `rx="5"`); got != len(r.State.Order) {
		t.Errorf("graph has %d nodes, want %d", got, len(r.State.Order))
	}
	// One timeline bar per issued action; failed ones marked.
	actions := 0
	for _, rec := range r.Records {
		if rec.Kind == store.KindAction {
			actions++
		}
	}
	if got := strings.Count(page, `-bar"><title>`); got != actions {
		t.Errorf("timeline has %d bars, want one per action (%d)", got, actions)
	}
	for _, want := range []string{`class="failed-bar"><title>task/t2/a1/gates`, `class="failed-bar"><title>task/t4/a1/execute`, `class="revise-bar"><title>critique/i1`} {
		if !strings.Contains(page, want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
	if strings.Contains(page, `class="failed-bar"><title>task/t2/a2/gates`) {
		t.Errorf("t2's second gates passed and must not be marked failed")
	}
}

func TestCollectSumsUsageByRoleAndModel(t *testing.T) {
	r := fixture.Simulate(fixture.Options{Tasks: 5, Jobs: 2, FailExecutor: []string{"t1"}})
	d := Collect(load(t, r))
	var total loop.Usage
	for _, s := range d.ByRole {
		total = total.Add(s.Usage)
		if want := r.State.UsageByRole[s.Name]; s.Tokens != want.Tokens || s.Calls != want.Calls {
			t.Errorf("role %s: %+v, state says %+v", s.Name, s.Usage, want)
		}
	}
	if total.Tokens != r.State.Usage.Tokens {
		t.Errorf("roles sum to %d tokens, the run used %d", total.Tokens, r.State.Usage.Tokens)
	}
	var byModel int64
	for _, s := range d.ByModel {
		if s.Name == "(unknown)" {
			t.Errorf("every delegation has a transcript naming its model")
		}
		byModel += s.Tokens
	}
	if byModel != total.Tokens {
		t.Errorf("models sum to %d tokens, roles to %d", byModel, total.Tokens)
	}
}

func TestReportEscapesEverything(t *testing.T) {
	evil := `<script>alert("x")</script><img src=x onerror=alert(1)>`
	r := fixture.Simulate(fixture.Options{Tasks: 2, Goal: evil, FailGates: []string{"t1"}})
	// A gate whose output carries markup, as test output can.
	for i, rec := range r.Records {
		if rec.Type == string(loop.EvGatesEvaluated) {
			r.Records[i].Data = bytes.ReplaceAll(rec.Data, []byte("--- FAIL"), []byte(`</pre><script>alert(2)</script>`))
		}
	}
	page := render(t, load(t, r))
	selfContained(t, page)
	if !strings.Contains(page, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
		t.Errorf("the goal should appear escaped")
	}
}

func TestReportOfARunInProgress(t *testing.T) {
	r := fixture.Simulate(fixture.Options{Tasks: 6, Jobs: 3, StopAfter: 35})
	page := render(t, load(t, r))
	selfContained(t, page)
	if !strings.Contains(page, `class="open-bar"`) || !strings.Contains(page, "no outcome") {
		t.Errorf("actions in flight should show as open bars")
	}
	if !strings.Contains(page, "s-running") {
		t.Errorf("running tasks should be marked")
	}
}

func TestReportOfARunThatNeverPlanned(t *testing.T) {
	r := fixture.Simulate(fixture.Options{Tasks: 3, StopAfter: 3})
	page := render(t, load(t, r))
	selfContained(t, page)
	if !strings.Contains(page, "No plan was approved") {
		t.Errorf("a run without a plan should say so")
	}
}

// TestReportOf128TasksIsSmall: the acceptance bound is 2 MB.
func TestReportOf128TasksIsSmall(t *testing.T) {
	var fails []string
	for i := 1; i <= 128; i += 9 {
		fails = append(fails, fmt.Sprintf("t%d", i))
	}
	r := fixture.Simulate(fixture.Options{Tasks: 128, Jobs: 8, Revisions: 2, FailGates: fails, FailExecutor: []string{"t3", "t50"}})
	if r.State.Status != loop.StatusDone || len(r.State.Order) != 128 {
		t.Fatalf("fixture: %s with %d tasks", r.State.Status, len(r.State.Order))
	}
	page := render(t, load(t, r))
	selfContained(t, page)
	t.Logf("report of a 128-task run: %d bytes (%.2f MB), %d journal records", len(page), float64(len(page))/(1<<20), len(r.Records))
	if len(page) >= 2<<20 {
		t.Fatalf("the report of a 128-task run is %d bytes, over 2 MB", len(page))
	}
	if got := strings.Count(page, `class="task" id="task-`); got != 128 {
		t.Fatalf("report details %d tasks, want 128", got)
	}
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestWriteStoresDiffsAndTheReport(t *testing.T) {
	repo := t.TempDir()
	git(t, repo, "init", "-q")
	os.WriteFile(filepath.Join(repo, "a.go"), []byte("package a\n"), 0o644)
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-qm", "base")
	base := git(t, repo, "rev-parse", "HEAD")
	os.WriteFile(filepath.Join(repo, "a.go"), []byte("package a\n\nfunc Search() {}\n"), 0o644)
	git(t, repo, "commit", "-qam", "task")
	head := git(t, repo, "rev-parse", "HEAD")

	r := fixture.Simulate(fixture.Options{Tasks: 1})
	oldHead := r.State.Tasks["t1"].Head
	for i := range r.Records {
		d := bytes.ReplaceAll(r.Records[i].Data, []byte(`"base-t1"`), []byte(`"`+base+`"`))
		r.Records[i].Data = bytes.ReplaceAll(d, []byte(`"`+oldHead+`"`), []byte(`"`+head+`"`))
	}
	dir, err := fixture.Write(filepath.Join(repo, ".sluice", "runs"), r)
	if err != nil {
		t.Fatal(err)
	}
	path, err := Write(context.Background(), dir, Options{Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, FileName) {
		t.Fatalf("wrote %s", path)
	}
	diff, err := os.ReadFile(filepath.Join(dir, "diffs", "t1.diff"))
	if err != nil || !strings.Contains(string(diff), "+func Search() {}") {
		t.Fatalf("diff of t1: %v\n%s", err, diff)
	}
	page, _ := os.ReadFile(path)
	if !strings.Contains(string(page), `href="diffs/t1.diff"`) {
		t.Fatalf("the report should link the diff")
	}
	out := filepath.Join(t.TempDir(), "elsewhere.html")
	if _, err := Write(context.Background(), dir, Options{Output: out}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(context.Background(), filepath.Join(repo, "nope"), Options{}); err == nil {
		t.Fatal("want an error for a directory that is not a run")
	}
}

// TestReportRendersInChromium takes a headless screenshot of a report. Set
// SLUICE_REPORT_SCREENSHOT to a path to keep the PNG.
func TestReportRendersInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser; skipped with -short")
	}
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no chromium on PATH (install it with `apt-get install -y chromium`) — skipping the screenshot of the report")
	}
	r := fixture.Simulate(fixture.Options{Tasks: 12, Jobs: 4, Revisions: 1, FailGates: []string{"t2", "t7"}, FailExecutor: []string{"t5"}})
	dir, err := fixture.Write(filepath.Join(t.TempDir(), "runs"), r)
	if err != nil {
		t.Fatal(err)
	}
	page, err := Write(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	shot := os.Getenv("SLUICE_REPORT_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "report.png")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The browser itself sometimes dies by a signal on a loaded machine;
	// that says nothing about the report, so it is tried three times and
	// only a browser that keeps crashing skips the test. Any other failure
	// fails it.
	var out []byte
	for try := 1; ; try++ {
		cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
			"--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir="+t.TempDir(), "--window-size=1280,2200", "--screenshot="+shot, "file://"+page)
		out, err = cmd.CombinedOutput()
		if err == nil {
			break
		}
		var exit *exec.ExitError
		crashed := errors.As(err, &exit) && exit.ProcessState != nil && !exit.ProcessState.Exited()
		if !crashed {
			t.Fatalf("chromium: %v\n%s", err, out)
		}
		if try == 3 {
			t.Skipf("chromium crashed three times (%v); the browser, not the report, is at fault here:\n%s", err, out)
		}
	}
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, out)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 20_000 {
		t.Fatalf("the screenshot is not a plausible PNG (%d bytes)", len(png))
	}
}
