// Package gates implements `sluice gates`: run the project's resolved
// quality gates on the current tree, exactly as sluice holds tasks to them,
// and optionally compare with a baseline commit.
package gates

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/config"
	"github.com/sluice-run/sluice/internal/gates"
	"github.com/sluice-run/sluice/internal/gitx"
	"github.com/sluice-run/sluice/internal/resolve"
)

type options struct {
	changed  bool
	json     bool
	baseline string
	noCache  bool
	timeout  time.Duration
}

// NewCmd returns the `gates` command.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	var opts options
	cmd := &cobra.Command{
		Use:   "gates",
		Short: "Run the project's quality gates on the current tree",
		Long: `Gates runs the project's resolved quality gates (format, lint, typecheck,
test, standards; see sluice resolve) on the working tree, uncommitted
changes included, the way sluice runs them on every task.

Commands with {files} check every file of the project's language, or with
--changed only the files that differ from HEAD. Results are cached by the
tree's content in .sluice/cache/gates, so an unchanged tree runs nothing.

--baseline REF also runs the gates on REF (in a temporary worktree) and
judges the current results against it the way a task is judged against a
run's base commit: a gate that passed at REF must pass; a failing test suite
may only fail tests that already failed at REF.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.changed, "changed", false, "check only files changed since HEAD with {files} commands")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the results as JSON")
	cmd.Flags().StringVar(&opts.baseline, "baseline", "", "also evaluate the gates at `REF` and judge the current tree against it")
	cmd.Flags().BoolVar(&opts.noCache, "no-cache", false, "run every command even if the tree's results are cached")
	cmd.Flags().DurationVar(&opts.timeout, "timeout", 10*time.Minute, "time limit for each gate command")
	return cmd
}

// report is the JSON form of the command's output.
type report struct {
	Tree     string          `json:"tree"`
	Results  []gates.Result  `json:"results"`
	Baseline *baselineReport `json:"baseline,omitempty"`
	Passed   bool            `json:"passed"`
}

type baselineReport struct {
	Ref      string          `json:"ref"`
	Commit   string          `json:"commit"`
	Results  []gates.Result  `json:"results"`
	Verdicts []gates.Verdict `json:"verdicts"`
}

func run(ctx context.Context, f *cmdutil.Factory, opts options) error {
	wd, err := f.Getwd()
	if err != nil {
		return err
	}
	repo, err := gitx.Open(ctx, wd)
	if err != nil {
		return err
	}
	root := repo.Root()
	res, err := resolve.Resolve(ctx, root, resolve.Options{UserConfigDir: config.UserDir(f.Getenv)})
	if err != nil {
		return fmt.Errorf("resolve quality gates: %w", err)
	}
	cmds := gates.Commands(res)
	if len(cmds) == 0 {
		return fmt.Errorf("no quality gates are set for %s: add a Quality Gates section to .sluice/language-manifest.md (see `sluice resolve`)", root)
	}

	runner := &gates.Runner{Timeout: opts.timeout}
	if !opts.noCache {
		if runner.Cache, err = gates.NewCache(filepath.Join(root, ".sluice", "cache", "gates")); err != nil {
			return err
		}
	}

	var files []string
	if opts.changed {
		files, err = repo.DirtyFiles(ctx, root)
	} else {
		files, err = allFiles(ctx, repo, root)
	}
	if err != nil {
		return err
	}
	tree, err := repo.WorkTreeHash(ctx, root)
	if err != nil {
		return err
	}
	out := report{Tree: tree, Results: runner.Run(ctx, root, cmds, files, tree), Passed: true}
	for _, r := range out.Results {
		out.Passed = out.Passed && r.Passed
	}

	if opts.baseline != "" {
		b, err := evalBaseline(ctx, repo, runner, cmds, opts.baseline)
		if err != nil {
			return err
		}
		out.Baseline = b
		out.Passed = true
		for i := range cmds {
			v := gates.Judge(b.Results[i], out.Results[i])
			b.Verdicts = append(b.Verdicts, v)
			out.Passed = out.Passed && v.Pass
		}
	}

	if opts.json {
		enc := json.NewEncoder(f.IO.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else if err := printReport(f.IO.Out, out); err != nil {
		return err
	}
	if !out.Passed {
		return &cmdutil.ExitError{Code: 1, Err: cmdutil.ErrSilent}
	}
	return nil
}

// allFiles is every file a commit of the tree would hold: tracked files
// plus untracked ones that are not ignored, minus deleted ones.
func allFiles(ctx context.Context, repo *gitx.Repo, dir string) ([]string, error) {
	tracked, err := repo.TrackedFiles(ctx, dir)
	if err != nil {
		return nil, err
	}
	dirty, err := repo.DirtyFiles(ctx, dir)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var files []string
	for _, f := range append(tracked, dirty...) {
		if seen[f] {
			continue
		}
		seen[f] = true
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			files = append(files, f)
		}
	}
	return files, nil
}

// evalBaseline runs the gates at ref in a temporary worktree. {files}
// commands check every tracked file of their extensions there: the T0
// baseline of a run is evaluated the same way.
func evalBaseline(ctx context.Context, repo *gitx.Repo, runner *gates.Runner, cmds []gates.Command, ref string) (*baselineReport, error) {
	tree, err := repo.TreeHash(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("baseline %q: %w", ref, err)
	}
	// Under .sluice, which gates and tree hashes leave out, rather than
	// $TMPDIR, which may lie inside the working tree.
	parent := filepath.Join(repo.Root(), ".sluice", "tmp")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(parent, "baseline-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	wt := filepath.Join(tmp, "tree")
	if err := repo.AddDetachedWorktree(ctx, wt, ref); err != nil {
		return nil, fmt.Errorf("baseline %q: %w", ref, err)
	}
	// A fresh context: the worktree registration must go even when the
	// gates were interrupted.
	defer repo.RemoveWorktree(context.WithoutCancel(ctx), wt)
	wtRepo, err := gitx.Open(ctx, wt)
	if err != nil {
		return nil, err
	}
	_, commit, err := wtRepo.Head(ctx)
	if err != nil {
		return nil, err
	}
	files, err := repo.TrackedFiles(ctx, wt)
	if err != nil {
		return nil, err
	}
	return &baselineReport{Ref: ref, Commit: commit, Results: runner.Run(ctx, wt, cmds, files, tree)}, nil
}

func printReport(w io.Writer, rep report) error {
	var b strings.Builder
	for _, r := range rep.Results {
		writeResult(&b, r)
	}
	if bl := rep.Baseline; bl != nil {
		fmt.Fprintf(&b, "\nCompared with %s (%s):\n", bl.Ref, short(bl.Commit))
		for i, v := range bl.Verdicts {
			status := "ok  "
			if !v.Pass {
				status = "FAIL"
			} else if v.PreExisting {
				status = "pre "
			}
			at := "passed"
			if t0 := bl.Results[i]; t0.Skipped {
				at = "skipped"
			} else if !t0.Passed {
				at = "failed"
				if len(t0.FailingTests) > 0 {
					at += ": " + strings.Join(t0.FailingTests, ", ")
				}
			}
			fmt.Fprintf(&b, "  %s %-10s %s (at %s: %s)\n", status, v.Name, v.Reason, bl.Ref, at)
		}
	}
	if rep.Passed {
		b.WriteString("\nAll gates passed.\n")
	} else {
		b.WriteString("\nGates failed.\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeResult(b *strings.Builder, r gates.Result) {
	status := "ok  "
	switch {
	case r.Skipped:
		status = "skip"
	case r.TimedOut:
		status = "TIME"
	case !r.Passed:
		status = "FAIL"
	}
	note := r.Duration.Round(time.Millisecond).String()
	switch {
	case r.Skipped:
		note = "no matching files"
	case r.Cached:
		note = "cached"
	}
	fmt.Fprintf(b, "%s %-10s %-10s %s\n", status, r.Name, note, r.Command)
	if r.Passed {
		return
	}
	if len(r.FailingTests) > 0 {
		label := "failing tests"
		if r.PerFile {
			label = "failing files"
		}
		fmt.Fprintf(b, "     %s: %s\n", label, strings.Join(r.FailingTests, ", "))
	}
	for _, line := range strings.Split(strings.TrimRight(r.OutputTail, "\n"), "\n") {
		fmt.Fprintf(b, "     | %s\n", line)
	}
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
