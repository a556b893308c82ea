// Package apply implements `sluice apply [RUN]`: bring a run's branch into
// the user's current branch, when the user asks for it.
package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/gitx"
)

// NewCmd returns the `apply` command.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "apply [RUN]",
		Short: "Merge a run's branch into your current branch",
		Long: `Apply brings the run branch sluice/<RUN> into the branch you have checked
out: a fast-forward when your branch has not moved since the run started,
otherwise a merge commit. RUN defaults to the latest run in .sluice/runs.

It refuses when tracked files have uncommitted changes; commit or stash them
first. On a conflict nothing is changed and the conflicting files are named.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var run string
			if len(args) == 1 {
				run = args[0]
			}
			return applyRun(cmd.Context(), f, run)
		},
	}
}

func applyRun(ctx context.Context, f *cmdutil.Factory, runID string) error {
	wd, err := f.Getwd()
	if err != nil {
		return err
	}
	repo, err := gitx.Open(ctx, wd)
	if err != nil {
		return err
	}
	if runID == "" {
		if runID, err = LatestRun(repo.Root()); err != nil {
			return err
		}
	} else if strings.ContainsAny(runID, `/\`) || runID == "." || runID == ".." {
		return fmt.Errorf("run id %q is not a run name; list runs with `ls .sluice/runs`", runID)
	}
	branch := gitx.RunBranch(runID)
	res, err := repo.Apply(ctx, branch)
	var conflict *gitx.ConflictError
	switch {
	case errors.As(err, &conflict):
		return fmt.Errorf("%s conflicts with your branch in %s; nothing was changed. Merge it yourself with `git merge %s` and resolve the conflicts", branch, strings.Join(conflict.Files, ", "), branch)
	case errors.Is(err, gitx.ErrNoBranch):
		return fmt.Errorf("run %q has no branch %s (has the run merged anything yet?): %w", runID, branch, err)
	case err != nil:
		return err
	}
	switch {
	case res.UpToDate:
		_, err = fmt.Fprintf(f.IO.Out, "%s already contains %s; nothing to do\n", res.Branch, branch)
	case res.FastForward:
		_, err = fmt.Fprintf(f.IO.Out, "Fast-forwarded %s to %s (%s..%s)\n", res.Branch, branch, short(res.From), short(res.To))
	default:
		_, err = fmt.Fprintf(f.IO.Out, "Merged %s into %s (merge commit %s)\n", branch, res.Branch, short(res.To))
	}
	return err
}

// LatestRun returns the newest run id under root/.sluice/runs: run ids sort
// by the time they were started, so the newest is the last name.
func LatestRun(root string) (string, error) {
	dir := filepath.Join(root, ".sluice", "runs")
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("list runs: %w", err)
	}
	var runs []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			runs = append(runs, e.Name())
		}
	}
	if len(runs) == 0 {
		return "", fmt.Errorf("no runs in %s; start one with `sluice run \"GOAL\"`", dir)
	}
	slices.Sort(runs)
	return runs[len(runs)-1], nil
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
