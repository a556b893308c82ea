// Package gates runs a project's quality-gate commands (format, lint,
// typecheck, test, and a project's own command clauses) on a tree, caches
// their results by tree, and judges a task's results against the run's T0
// baseline: "no worse than before".
package gates

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluice-run/sluice/internal/tailbuf"
	"github.com/sluice-run/sluice/internal/testparse"
)

// FilesPlaceholder in a command is replaced by the changed files the command
// applies to, each quoted for the shell. It must appear unquoted in the
// command (inside "$(...)" is fine: command substitution starts a new
// quoting context).
const FilesPlaceholder = "{files}"

// tailSize is how much of a command's output a Result keeps.
const tailSize = 4 << 10

// maxAttributionRuns bounds the extra runs spent finding which files a
// failing {files} command objects to.
const maxAttributionRuns = 64

// Command is one quality gate.
type Command struct {
	// Name is the gate's role: format, lint, typecheck, test, standards,
	// or a clause id.
	Name string
	// Command is a shell command line; it may contain {files}.
	Command string
	// Extensions selects the changed files {files} receives, e.g. [".go"];
	// empty means all.
	Extensions []string
}

// PerFile reports whether the command is run on files ({files}) rather than
// once on the whole tree.
func (c Command) PerFile() bool { return strings.Contains(c.Command, FilesPlaceholder) }

// Result is one command's outcome on one tree.
type Result struct {
	Name string `json:"name"`
	// Command is the gate's command as configured (with {files}).
	Command string `json:"command"`
	// Ran is the shell line that actually ran, after {files} expansion and
	// the flags that make a test runner's results readable (go test -json,
	// pytest --junitxml="$SLUICE_GATE_REPORT", cargo test --no-fail-fast);
	// empty when skipped.
	Ran      string `json:"ran,omitempty"`
	Passed   bool   `json:"passed"`
	Skipped  bool   `json:"skipped,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// ExitCode is the command's exit status; -1 when it was killed.
	ExitCode   int           `json:"exit_code"`
	Duration   time.Duration `json:"duration"`
	OutputTail string        `json:"output_tail,omitempty"`
	// Parsed is true when FailingTests names every failure: the runner's
	// output was understood, or a {files} command's failing files were
	// identified. A failed result with nothing named is never Parsed.
	Parsed       bool     `json:"parsed,omitempty"`
	FailingTests []string `json:"failing_tests,omitempty"`
	// PerFile is true for a {files} command: FailingTests are file paths.
	PerFile bool `json:"per_file,omitempty"`
	// Files is how many files a {files} command ran on.
	Files  int  `json:"files,omitempty"`
	Cached bool `json:"cached,omitempty"`
}

// Runner runs gate commands.
type Runner struct {
	// Timeout bounds each command; zero means no limit beyond ctx.
	Timeout time.Duration
	// Cache, if set, remembers results by (command line, tree).
	Cache *Cache
	// Env is added to the process environment of every command.
	Env []string
	// Log receives cache write failures; nil means slog.Default().
	Log *slog.Logger
}

// Run runs cmds in dir, in parallel, and returns their results in the order
// of cmds. changed lists the files (relative to dir) that {files} commands
// check; a {files} command with no matching file is skipped, which counts
// as a pass. treeKey identifies the content of dir (a git tree hash); results
// for a key already seen are taken from the cache without running anything.
// An empty treeKey disables caching.
func (r *Runner) Run(ctx context.Context, dir string, cmds []Command, changed []string, treeKey string) []Result {
	results := make([]Result, len(cmds))
	var wg sync.WaitGroup
	for i, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = r.runOne(ctx, dir, c, changed, treeKey)
		}()
	}
	wg.Wait()
	return results
}

func (r *Runner) runOne(ctx context.Context, dir string, c Command, changed []string, treeKey string) Result {
	if !c.PerFile() {
		line, parser := prepare(c.Command)
		res := r.exec(ctx, dir, line, parser, treeKey)
		res.Name, res.Command = c.Name, c.Command
		return res
	}
	files := Filter(changed, c.Extensions)
	if len(files) == 0 {
		return Result{Name: c.Name, Command: c.Command, Passed: true, Skipped: true, PerFile: true}
	}
	res := r.exec(ctx, dir, Expand(c.Command, files), nil, treeKey)
	res.Name, res.Command, res.PerFile, res.Files = c.Name, c.Command, true, len(files)
	if res.Passed || res.TimedOut || ctx.Err() != nil {
		return res
	}
	failing, ok := r.attribute(ctx, dir, c.Command, files, treeKey)
	res.FailingTests, res.Parsed = failing, ok && len(failing) > 0
	return res
}

// attribute finds the files a failing {files} command objects to by running
// it on both halves of the failing set, recursively and concurrently:
// O(k log n) runs for k bad files among n, in O(log n) rounds. ok is false
// when the runs disagree (a set fails but neither half does: the command is
// not a per-file check) or the run budget is spent.
func (r *Runner) attribute(ctx context.Context, dir, command string, files []string, treeKey string) (failing []string, ok bool) {
	if len(files) == 1 {
		return files, true
	}
	var (
		mu     sync.Mutex
		budget = maxAttributionRuns
	)
	take := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if budget == 0 {
			return false
		}
		budget--
		return true
	}
	// search is called on a set known to fail; it reports whether the
	// failure was pinned on at least one file and no run went wrong.
	var search func(set []string) bool
	search = func(set []string) bool {
		if len(set) == 1 {
			mu.Lock()
			failing = append(failing, set[0])
			mu.Unlock()
			return true
		}
		halves := [2][]string{set[:len(set)/2], set[len(set)/2:]}
		var failed, sound [2]bool
		var wg sync.WaitGroup
		for i, h := range halves {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if !take() || ctx.Err() != nil {
					return
				}
				res := r.exec(ctx, dir, Expand(command, h), nil, treeKey)
				if res.TimedOut {
					return
				}
				failed[i] = !res.Passed
				sound[i] = res.Passed || search(h)
			}()
		}
		wg.Wait()
		return sound[0] && sound[1] && (failed[0] || failed[1])
	}
	if !search(files) {
		return nil, false
	}
	slices.Sort(failing)
	return failing, true
}

// Filter returns the files whose names end in one of exts (all files when
// exts is empty), in their original order.
func Filter(files []string, exts []string) []string {
	if len(exts) == 0 {
		return files
	}
	var out []string
	for _, f := range files {
		for _, e := range exts {
			if !strings.HasPrefix(e, ".") {
				e = "." + e
			}
			if strings.HasSuffix(f, e) {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

// Expand replaces {files} in command with the files, each single-quoted so
// the shell passes it through literally whatever it contains ($, `, quotes,
// spaces, newlines). A name starting with "-" gets a "./" prefix so no tool
// reads it as an option.
func Expand(command string, files []string) string {
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = ShellQuote(f)
	}
	return strings.ReplaceAll(command, FilesPlaceholder, strings.Join(quoted, " "))
}

// ShellQuote quotes a path as one POSIX shell word.
func ShellQuote(path string) string {
	if strings.HasPrefix(path, "-") {
		path = "./" + path
	}
	return "'" + strings.ReplaceAll(path, "'", `'\''`) + "'"
}

// ReportEnv names the environment variable that holds the path a test
// runner writes its JUnit XML report to: a file in a fresh temporary
// directory outside the worktree, removed after the run. The prepared
// command line refers to it rather than to the path itself so the line, and
// with it the cache key, is the same on every run.
const ReportEnv = "SLUICE_GATE_REPORT"

// parsing says how a recognized test runner's results are read.
type parsing struct {
	// report: the runner writes a JUnit XML file at $SLUICE_GATE_REPORT;
	// otherwise parse reads its stdout.
	report bool
	// merged: stdout and stderr are one stream, which parse reads (cargo
	// names each test binary on stderr and its results on stdout).
	merged bool
	// exitOK lists the exit statuses whose results can be trusted to name
	// every failure; nil trusts all.
	exitOK []int
	parse  func([]byte) (testparse.Report, error)
}

// prepare recognizes the test runners whose output sluice can parse when it
// is the whole command (no pipes, lists or redirections that would change
// what the output is) and asks them for machine-readable output. A command
// that already chooses its own report format is left alone and compared by
// exit status: its report may be stale or elsewhere.
func prepare(command string) (string, *parsing) {
	trimmed := strings.TrimSpace(command)
	if strings.ContainsAny(trimmed, "|&;<>()$`\n") {
		return command, nil
	}
	fields := strings.Fields(trimmed)
	hasFlag := func(prefixes ...string) bool {
		return slices.ContainsFunc(fields, func(f string) bool {
			for _, p := range prefixes {
				if f == p || strings.HasPrefix(f, p+"=") || strings.HasPrefix(f, p+".") {
					return true
				}
			}
			return false
		})
	}
	junit := func(b []byte) (testparse.Report, error) { return testparse.JUnitXML(bytes.NewReader(b)) }
	switch {
	case len(fields) >= 2 && fields[0] == "go" && fields[1] == "test":
		line := trimmed
		if !slices.Contains(fields, "-json") {
			line = "go test -json" + strings.TrimPrefix(trimmed, "go test")
		}
		return line, &parsing{parse: func(b []byte) (testparse.Report, error) { return testparse.GoTestJSON(bytes.NewReader(b)) }}
	case len(fields) >= 2 && fields[0] == "node" && fields[1] == "--test":
		for _, f := range fields {
			if strings.HasPrefix(f, "--test-reporter") {
				return command, nil
			}
		}
		line := "node --test --test-reporter=tap" + strings.TrimPrefix(trimmed, "node --test")
		return line, &parsing{parse: func(b []byte) (testparse.Report, error) { return testparse.TAP(bytes.NewReader(b)) }}
	case len(fields) >= 2 && fields[0] == "cargo" && fields[1] == "test":
		line := trimmed
		// cargo stops at the first failing test binary: the tests of the
		// binaries after it would be missing from the failing set.
		if !slices.Contains(fields, "--no-fail-fast") {
			line = insertAfter(trimmed, fields, 1, "--no-fail-fast")
		}
		return line, &parsing{merged: true, exitOK: []int{0, 101}, parse: func(b []byte) (testparse.Report, error) {
			return testparse.CargoTest(bytes.NewReader(b))
		}}
	}
	if i := runnerIndex(fields, "pytest", [][]string{{}, {"python", "-m"}, {"python3", "-m"}, {"uv", "run"}, {"poetry", "run"}}); i >= 0 {
		if hasFlag("--junitxml", "--junit-xml") {
			return command, nil
		}
		// pytest exits 2 to 4 when interrupted or misused (a collection
		// error stops the session before any test runs) and 5 when it
		// collected nothing: its report then does not cover the suite.
		return insertAfter(trimmed, fields, i, `--junitxml="$`+ReportEnv+`"`), &parsing{report: true, exitOK: []int{0, 1}, parse: junit}
	}
	if i := runnerIndex(fields, "vitest", [][]string{{}, {"npx"}, {"pnpm"}, {"pnpm", "exec"}, {"yarn"}}); i >= 0 {
		if hasFlag("--reporter", "--outputFile") {
			return command, nil
		}
		if i+1 < len(fields) && !strings.HasPrefix(fields[i+1], "-") {
			switch fields[i+1] {
			case "run":
				i++
			case "watch", "dev", "bench", "related", "list", "init":
				return command, nil
			}
		}
		// The default reporter keeps the readable output for the tail.
		return insertAfter(trimmed, fields, i, `--reporter=default --reporter=junit --outputFile.junit="$`+ReportEnv+`"`), &parsing{report: true, parse: junit}
	}
	return command, nil
}

// runnerIndex returns the index of the field naming runner when the fields
// before it are one of the launchers, or -1.
func runnerIndex(fields []string, runner string, launchers [][]string) int {
	for _, l := range launchers {
		if len(fields) > len(l) && slices.Equal(fields[:len(l)], l) && fields[len(l)] == runner {
			return len(l)
		}
	}
	return -1
}

// insertAfter inserts text after fields[i] in line (which fields splits),
// leaving the rest of the line, its quoting and spacing, as it was.
func insertAfter(line string, fields []string, i int, text string) string {
	pos := 0
	for k := 0; k <= i; k++ {
		pos += strings.Index(line[pos:], fields[k]) + len(fields[k])
	}
	return line[:pos] + " " + text + line[pos:]
}

// exec runs one shell line, or takes its result from the cache.
func (r *Runner) exec(ctx context.Context, dir, line string, parse *parsing, treeKey string) Result {
	var key string
	if r.Cache != nil && treeKey != "" {
		key = cacheKey(line, treeKey, r.Env)
		if res, ok := r.Cache.get(key); ok {
			res.Cached = true
			return res
		}
	}

	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if r.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, r.Timeout)
	}
	defer cancel()

	cmd := exec.CommandContext(runCtx, "sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), r.Env...)
	setProcessGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	tail := tailbuf.New(tailSize)
	var stdout bytes.Buffer
	var reportPath string
	switch {
	case parse == nil:
		cmd.Stdout, cmd.Stderr = tail, tail
	case parse.report:
		cmd.Stdout, cmd.Stderr = tail, tail
		tmp, err := os.MkdirTemp("", "sluice-gate-")
		if err != nil {
			fmt.Fprintf(tail, "sluice: no directory for the test report, results compared by exit status: %v\n", err)
			break
		}
		defer os.RemoveAll(tmp)
		reportPath = filepath.Join(tmp, "report.xml")
		cmd.Env = append(cmd.Env, ReportEnv+"="+reportPath)
	case parse.merged:
		// The same writer for both: exec gives them one pipe, so the
		// streams' order is kept.
		cmd.Stdout, cmd.Stderr = &stdout, &stdout
	default:
		cmd.Stdout, cmd.Stderr = &stdout, tail
	}

	start := time.Now()
	err := cmd.Run()
	res := Result{Ran: line, Duration: time.Since(start), ExitCode: -1}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		res.Passed = true
	case errors.As(err, &ee):
	case cmd.ProcessState == nil:
		fmt.Fprintf(tail, "\nsluice: could not start %q: %v\n", line, err)
	}
	if runCtx.Err() != nil && ctx.Err() == nil {
		res.Passed, res.TimedOut = false, true
		fmt.Fprintf(tail, "\nsluice: killed after the gate timeout of %s\n", r.Timeout)
	}

	res.OutputTail = tail.String()
	switch {
	case parse == nil:
	case parse.report:
		// A missing or unreadable report leaves the result unparsed, to be
		// compared by exit status: never an empty failing set.
		if reportPath == "" {
			break
		}
		data, err := os.ReadFile(reportPath)
		var rep testparse.Report
		if err == nil {
			rep, err = parse.parse(data)
		}
		if err != nil {
			fmt.Fprintf(tail, "\nsluice: test report unusable, results compared by exit status: %v\n", err)
			res.OutputTail = tail.String()
			break
		}
		res.setParsed(rep, parse)
	default:
		rep, perr := parse.parse(stdout.Bytes())
		text := stdout.String()
		if perr == nil {
			res.setParsed(rep, parse)
			if rep.Output != "" {
				text = rep.Output
			}
		}
		res.OutputTail = tailbuf.Last(text+tail.String(), tailSize)
	}

	// A cancelled run says nothing about the tree, and a timeout may be the
	// machine's load rather than the code: neither is remembered.
	if key != "" && !res.TimedOut && ctx.Err() == nil {
		if err := r.Cache.put(key, res); err != nil {
			r.logger().Warn("gate cache write failed", "command", line, "err", err)
		}
	}
	return res
}

// setParsed records a test report's failing tests. The result is parsed
// when the report names every failure: the run passed, or failed with named
// failures and an exit status after which the runner reports the whole
// suite.
func (res *Result) setParsed(rep testparse.Report, p *parsing) {
	res.FailingTests = rep.Failing
	trusted := p.exitOK == nil || slices.Contains(p.exitOK, res.ExitCode)
	res.Parsed = !res.TimedOut && (res.Passed || (len(rep.Failing) > 0 && trusted))
}

func (r *Runner) logger() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.Default()
}
