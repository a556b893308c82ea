// Package config implements `sluice config`: the effective configuration
// and where each value came from.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/config"
)

// NewCmd returns the `config` command.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration and where each value came from",
		Long: `Config prints the configuration sluice would use here: built-in defaults,
overridden by the user's $XDG_CONFIG_HOME/sluice/config.yaml (or
~/.config/sluice/config.yaml), then the project's .sluice/config.yaml, then
the environment. Each value is shown with its source (default, file:line or
$VARIABLE). Secrets are masked.

Environment overrides: ANTHROPIC_BASE_URL and OPENAI_BASE_URL set the
base_url of the providers of those names; SLUICE_<KEY> sets a scalar key,
its dotted name upper-cased with dots as underscores (SLUICE_RUN_JOBS sets
run.jobs).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			wd, err := f.Getwd()
			if err != nil {
				return fmt.Errorf("find the current directory: %w", err)
			}
			root := config.FindProjectRoot(wd)
			cfg, src, err := config.Load(root, f.Getenv)
			if err != nil {
				if errors.Is(err, config.ErrInvalid) {
					fmt.Fprintln(f.IO.ErrOut, "sluice: invalid configuration:")
					for _, line := range strings.Split(err.Error(), "\n") {
						fmt.Fprintf(f.IO.ErrOut, "  %s\n", line)
					}
					return cmdutil.ErrSilent
				}
				return err
			}
			userFile := config.UserFile(f.Getenv)
			projectFile := config.ProjectFile(root)
			settings := config.Settings(cfg, src)
			if asJSON {
				sources := map[string]config.Source{}
				for _, s := range settings {
					sources[s.Key] = s.Source
				}
				enc := json.NewEncoder(f.IO.Out)
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					UserFile    string                   `json:"user_file"`
					ProjectFile string                   `json:"project_file"`
					Config      *config.Config           `json:"config"`
					Sources     map[string]config.Source `json:"sources"`
				}{userFile, projectFile, cfg.Masked(), sources})
			}
			fmt.Fprintf(f.IO.Out, "user config     %s%s\n", userFile, missing(userFile))
			fmt.Fprintf(f.IO.Out, "project config  %s%s\n\n", projectFile, missing(projectFile))
			tw := tabwriter.NewWriter(f.IO.Out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
			for _, s := range settings {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Key, s.Value, s.Source)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "Print the configuration and sources as JSON")
	return cmd
}

func missing(path string) string {
	if path == "" {
		return "(no $XDG_CONFIG_HOME or $HOME)"
	}
	if _, err := os.Stat(path); err != nil {
		return " (not found)"
	}
	return ""
}
