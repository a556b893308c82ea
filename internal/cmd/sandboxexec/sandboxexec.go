// Package sandboxexec implements the hidden `sluice __sandbox-exec` command:
// the helper through which agents' shell commands run under Landlock.
package sandboxexec

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/sandbox"
)

// NewCmd returns the hidden sandbox helper command. It restricts its own
// process to write only beneath the --rw directories, then replaces itself
// with the command after "--". It is not meant to be run by hand.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:    sandbox.Subcommand + " --rw DIR ... -- COMMAND [ARG...]",
		Short:  "Run a command that may write only beneath the given directories (internal)",
		Hidden: true,
		// The command after "--" has flags of its own; sandbox.ParseArgs
		// reads the whole line so there is exactly one parser.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			// The helper execs the command in its own place, so the command
			// inherits the environment this process was started with.
			return sandbox.Main(args, os.Environ())
		},
	}
}
