// Package demo implements `sluice demo`.
package demo

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	runcmd "github.com/sluice-run/sluice/internal/cmd/run"
	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/demo"
	"github.com/sluice-run/sluice/internal/run"
	"github.com/sluice-run/sluice/internal/ui"
)

// NewCmd returns `sluice demo`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	var dir string
	var jobs int
	var jsonOut bool
	var capabilities []string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole loop offline on a sample repository with a scripted model",
		Long: `Copy a small Go repository to a temporary directory (or --dir) and run the
whole loop on it: research, a four-task plan with a diamond of dependencies,
a critic that asks for one revision, parallel execution in git worktrees, a
task whose first attempt fails "go test" and passes on retry, merging and
final verification. The engine, git and the gates are real; the model is a
scripted replay served by sluice's fake model server on 127.0.0.1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			w := f.IO.ErrOut
			if jsonOut {
				w = f.IO.Out
			}
			p := ui.NewRunPrinter(w, jsonOut, time.Now)
			p.Note("sluice demo: the model is a SCRIPTED REPLAY (sluice's fake model server), not a real model; git, worktrees and `go test` gates are real")
			exe, _ := f.Executable()
			res, err := demo.Run(cmd.Context(), demo.Options{
				Dir:          dir,
				Jobs:         jobs,
				SandboxExe:   exe,
				Capabilities: capabilities,
				Run:          run.Options{Getenv: f.Getenv, Observe: p.Entry, Notice: p.Note},
			})
			var rr *run.Result
			if res != nil {
				rr = res.Result
				if !jsonOut {
					fmt.Fprintf(f.IO.Out, "\nsample repository: %s\n", res.Dir)
				}
			}
			return runcmd.Present(cmd.Context(), f, p, jsonOut, rr, err)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "write the sample repository here instead of a new temporary directory")
	cmd.Flags().IntVarP(&jobs, "jobs", "j", 4, "tasks run in parallel")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the run's events as JSON Lines on stdout")
	cmd.Flags().StringSliceVar(&capabilities, "capability", nil, "enable a capability in the sample (security-review, design-spec); repeatable")
	return cmd
}
