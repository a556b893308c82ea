// Package version implements `sluice version`.
package version

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/sluice-run/sluice/internal/cmdutil"
)

// NewCmd returns the `version` command.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the sluice version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(f.IO.Out, "sluice %s\n", Version())
			return err
		},
	}
}

// Version is the module version the binary was built from, or "devel".
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
