// Package resolve implements `sluice resolve`: what seed 000 steps 1-5
// decide for a project, as a table or as JSON.
package resolve

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/config"
	"github.com/sluice-run/sluice/internal/manifest"
	"github.com/sluice-run/sluice/internal/resolve"
)

// NewCmd returns the `resolve` command.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	var (
		asJSON     bool
		pluginDirs []string
	)
	cmd := &cobra.Command{
		Use:   "resolve [PATH]",
		Short: "Show the detected language, the agent for each role, the quality gates and the flow",
		Long: `Resolve detects the project's language (from marker files and source
counts), finds its language manifest (project .sluice/ or .claude/
language-manifest.md, then language plugins, then any plugin, then the
built-in manifest), and shows the agent or skill filling each of the five
roles, the quality-gate commands and the process flow. Problems are
warnings; nothing here stops a run.

Plugins are searched in --plugin-dir, .sluice/plugins, .claude/plugins and
the user config dir's plugins/ ($XDG_CONFIG_HOME/sluice/plugins).`,
		Example: `  sluice resolve
  sluice resolve ../service --json
  sluice resolve --plugin-dir ~/plugins/python3-development`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := ""
			if len(args) == 1 {
				root = args[0]
			} else {
				wd, err := f.Getwd()
				if err != nil {
					return fmt.Errorf("find the current directory: %w", err)
				}
				root = wd
			}
			res, err := resolve.Resolve(cmd.Context(), root, resolve.Options{
				PluginDirs:    pluginDirs,
				UserConfigDir: config.UserDir(f.Getenv),
			})
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(f.IO.Out)
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			return writeText(f.IO.Out, res)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "Print the result as JSON")
	cmd.Flags().StringArrayVar(&pluginDirs, "plugin-dir", nil, "Search `DIR` for plugins first (a plugin or a directory of plugins; repeatable)")
	return cmd
}

func writeText(out io.Writer, res *resolve.Result) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "root\t%s\n", res.Root)
	primary := res.Primary
	if primary == "" {
		primary = "(none detected)"
	}
	fmt.Fprintf(tw, "primary\t%s\n", primary)
	for i, l := range res.Languages {
		label := ""
		if i == 0 {
			label = "languages"
		}
		files := "source files"
		if l.SourceFiles == 1 {
			files = "source file"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d %s\t%s\n", label, l.Name, l.SourceFiles, files, strings.Join(l.Markers, ", "))
	}
	fmt.Fprintf(tw, "manifest\t%s\t%s\n", res.Manifest.Source, res.Manifest.Path)
	for _, s := range res.Manifest.Shadowed {
		fmt.Fprintf(tw, "  shadowed\t%s\t%s\n", s.Source, s.Path)
	}
	fmt.Fprintln(tw, "roles")
	for _, role := range manifest.RoleNames() {
		r := res.Roles[role]
		if r.Kind == resolve.KindGeneralPurpose {
			fmt.Fprintf(tw, "  %s\t%s\n", role, r.Kind)
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", role, r.Kind, r.Ref, r.Path)
	}
	fmt.Fprintf(tw, "gates (%s)\n", res.GateSource)
	for _, name := range manifest.GateNames() {
		g := res.Gates[name]
		cmd := g.Command
		if cmd == "" {
			cmd = "(unset)"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, cmd)
		for _, alt := range g.Alternatives {
			fmt.Fprintf(tw, "\tor: %s\n", alt)
		}
	}
	fmt.Fprintf(tw, "flow\t%s\t%s\n", res.Flow.Kind, res.Flow.Source)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(res.Warnings) > 0 {
		fmt.Fprintf(out, "warnings (%d)\n", len(res.Warnings))
		for _, w := range res.Warnings {
			fmt.Fprintf(out, "  %s\n", w)
		}
	}
	return nil
}
