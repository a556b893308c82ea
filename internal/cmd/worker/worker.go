// Package worker implements `sluice worker`: a Temporal worker that runs
// the loop's workflow and executes its actions on this machine.
package worker

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/engine/temporal"
	"github.com/sluice-run/sluice/internal/run"
)

// NewCmd returns `sluice worker`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	var dir string
	t := run.TemporalOptions{}
	cmd := &cobra.Command{
		Use:   "worker --temporal HOST:PORT",
		Short: "Execute runs started with --engine temporal: delegations, gates, worktrees and merges",
		Long: `Poll a Temporal task queue and execute the actions of runs started with
"sluice run --engine temporal": agent delegations, quality gates, worktrees
and merges, with real components, exactly as a local run does.

A worker either shares the starter's repository path (the same machine or a
shared filesystem, the default), or works in a clone of its own with
--remote NAME, for runs started with --remote: the run's branches and files
then travel through that git remote. Every worker needs the same model and
gate configuration. Start as many as you like; a worker that dies mid-action is
replaced by another after the heartbeat timeout. Stop with ctrl+c.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if t.HostPort == "" {
				return fmt.Errorf("--temporal is required: the Temporal frontend address, e.g. --temporal 127.0.0.1:7233")
			}
			if dir == "" {
				wd, err := f.Getwd()
				if err != nil {
					return err
				}
				dir = wd
			}
			exe, _ := f.Executable()
			t.Logger = slog.New(slog.NewTextHandler(f.IO.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
			opts := run.Options{
				Root:       dir,
				Getenv:     f.Getenv,
				SandboxExe: exe,
				Notice:     func(s string) { fmt.Fprintln(f.IO.ErrOut, s) },
			}
			return run.Work(cmd.Context(), opts, t)
		},
	}
	cmd.Flags().StringVarP(&dir, "dir", "C", "", "the repository whose runs to execute (default: the current directory)")
	cmd.Flags().StringVar(&t.HostPort, "temporal", "", "the Temporal frontend address HOST:PORT")
	cmd.Flags().StringVar(&t.Namespace, "namespace", "default", "the Temporal namespace")
	cmd.Flags().StringVar(&t.TaskQueue, "task-queue", temporal.DefaultTaskQueue, "the task queue to poll")
	cmd.Flags().StringVar(&t.Remote, "remote", "", "work in this clone: fetch and publish runs started with --remote through this git remote")
	return cmd
}
