// Package root assembles the sluice command tree. It only wires: every
// command lives in its own package under internal/cmd.
package root

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	agentscmd "github.com/sluice-run/sluice/internal/cmd/agents"
	"github.com/sluice-run/sluice/internal/cmd/apply"
	askcmd "github.com/sluice-run/sluice/internal/cmd/ask"
	capabilitycmd "github.com/sluice-run/sluice/internal/cmd/capability"
	configcmd "github.com/sluice-run/sluice/internal/cmd/config"
	democmd "github.com/sluice-run/sluice/internal/cmd/demo"
	"github.com/sluice-run/sluice/internal/cmd/fakemodel"
	gatescmd "github.com/sluice-run/sluice/internal/cmd/gates"
	"github.com/sluice-run/sluice/internal/cmd/initcmd"
	"github.com/sluice-run/sluice/internal/cmd/logcmd"
	modelscmd "github.com/sluice-run/sluice/internal/cmd/models"
	plancmd "github.com/sluice-run/sluice/internal/cmd/plan"
	reportcmd "github.com/sluice-run/sluice/internal/cmd/report"
	resolvecmd "github.com/sluice-run/sluice/internal/cmd/resolve"
	runcmd "github.com/sluice-run/sluice/internal/cmd/run"
	"github.com/sluice-run/sluice/internal/cmd/sandboxexec"
	"github.com/sluice-run/sluice/internal/cmd/status"
	"github.com/sluice-run/sluice/internal/cmd/version"
	workercmd "github.com/sluice-run/sluice/internal/cmd/worker"
	"github.com/sluice-run/sluice/internal/cmdutil"
)

// NewCmd returns the root command with every subcommand attached.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sluice",
		Short: "A gated, resumable, parallel agentic development loop for git repositories",
		Long: `sluice runs a gated, resumable, parallel agentic development loop on a git
repository: research, plan, critique, execute tasks in parallel worktrees,
check each through quality gates, merge, and report.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetIn(f.IO.In)
	cmd.SetOut(f.IO.Out)
	cmd.SetErr(f.IO.ErrOut)

	cmd.AddCommand(
		agentscmd.NewCmd(f),
		apply.NewCmd(f),
		askcmd.NewCmd(f),
		capabilitycmd.NewCmd(f),
		configcmd.NewCmd(f),
		democmd.NewCmd(f),
		fakemodel.NewCmd(f),
		gatescmd.NewCmd(f),
		initcmd.NewCmd(f),
		logcmd.NewCmd(f),
		modelscmd.NewCmd(f),
		runcmd.NewCmd(f),
		runcmd.NewResumeCmd(f),
		status.NewCmd(f),
		resolvecmd.NewCmd(f),
		sandboxexec.NewCmd(f),
		plancmd.NewCmd(f),
		reportcmd.NewCmd(f),
		version.NewCmd(f),
		workercmd.NewCmd(f),
	)
	return cmd
}

// Main runs the command line and returns the process exit status.
func Main(ctx context.Context, f *cmdutil.Factory, args []string) int {
	cmd := NewCmd(f)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var exit *cmdutil.ExitError
	if errors.As(err, &exit) {
		if exit.Err != nil && !errors.Is(exit.Err, cmdutil.ErrSilent) {
			fmt.Fprintf(f.IO.ErrOut, "sluice: %v\n", exit.Err)
		}
		return exit.Code
	}
	if !errors.Is(err, cmdutil.ErrSilent) {
		fmt.Fprintf(f.IO.ErrOut, "sluice: %v\n", err)
	}
	return 1
}
