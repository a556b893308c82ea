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
	// -json for go test; empty when skipped.
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

// parser reads a command's stdout into a test report.
type parser func(stdout []byte) (testparse.Report, error)

// prepare recognizes the test runners whose output sluice can parse when it
// is the whole command (no pipes, lists or redirections that would change
// what the output is) and asks them for machine-readable output.
func prepare(command string) (string, parser) {
	trimmed := strings.TrimSpace(command)
	if strings.ContainsAny(trimmed, "|&;<>()$`\n") {
		return command, nil
	}
	fields := strings.Fields(trimmed)
	switch {
	case len(fields) >= 2 && fields[0] == "go" && fields[1] == "test":
		line := trimmed
		if !slices.Contains(fields, "-json") {
			line = "go test -json" + strings.TrimPrefix(trimmed, "go test")
		}
		return line, func(b []byte) (testparse.Report, error) { return testparse.GoTestJSON(bytes.NewReader(b)) }
	case len(fields) >= 2 && fields[0] == "node" && fields[1] == "--test":
		for _, f := range fields {
			if strings.HasPrefix(f, "--test-reporter") {
				return command, nil
			}
		}
		line := "node --test --test-reporter=tap" + strings.TrimPrefix(trimmed, "node --test")
		return line, func(b []byte) (testparse.Report, error) { return testparse.TAP(bytes.NewReader(b)) }
	}
	return command, nil
}

// exec runs one shell line, or takes its result from the cache.
func (r *Runner) exec(ctx context.Context, dir, line string, parse parser, treeKey string) Result {
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
	if parse != nil {
		cmd.Stdout, cmd.Stderr = &stdout, tail
	} else {
		cmd.Stdout, cmd.Stderr = tail, tail
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
	if parse != nil {
		rep, perr := parse(stdout.Bytes())
		text := stdout.String()
		if perr == nil {
			res.FailingTests = rep.Failing
			res.Parsed = !res.TimedOut && (res.Passed || len(rep.Failing) > 0)
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

func (r *Runner) logger() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.Default()
}
