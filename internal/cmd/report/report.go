// Package report implements `sluice report`.
package report

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/report"
	"github.com/sluice-run/sluice/internal/run"
)

// NewCmd returns `sluice report`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	var dir, output string
	cmd := &cobra.Command{
		Use:   "report [RUN]",
		Short: "Write a run's self-contained HTML report",
		Long: `Write a run's report: one HTML file with no scripts and nothing fetched when
it is viewed. It shows the goal and outcome, the plan as a dependency graph, a
timeline of every delegation and gate, each gate's clauses with their output,
the critique history, tokens and cost by role and by model, and links to each
task's diff, artifacts and transcripts.

The report is written to report.html in the run directory (the latest run
unless RUN names one), where its links work. sluice writes it at the end of
every run; this command writes it again, for example while a run is going.`,
		Example: `  sluice report
  sluice report 20261130-120000 -o /tmp/run.html
  sluice report -o - > run.html`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := dir
			if root == "" {
				wd, err := f.Getwd()
				if err != nil {
					return fmt.Errorf("find the current directory: %w", err)
				}
				root = wd
			}
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			l, err := run.Load(root, id)
			if err != nil {
				return err
			}
			if output == "-" {
				page, err := report.Render(l)
				if err != nil {
					return err
				}
				_, err = f.IO.Out.Write(page)
				return err
			}
			if output != "" && !filepath.IsAbs(output) {
				if wd, err := f.Getwd(); err == nil {
					output = filepath.Join(wd, output)
				}
			}
			path, err := report.WriteLoaded(cmd.Context(), l, report.Options{Repo: root, Output: output})
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.Out, "wrote %s\n", path)
			return nil
		},
	}
	cmd.Flags().StringVarP(&dir, "dir", "C", "", "the repository (default: the current directory)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "where to write the report (default: report.html in the run directory; - for stdout)")
	return cmd
}
