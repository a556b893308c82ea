// Package plan implements `sluice plan check` and `sluice plan show`.
package plan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/plan"
)

// NewCmd returns the `plan` command group.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan <command>",
		Short: "Check or render a plan.yaml",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newCheckCmd(f), newShowCmd(f))
	return cmd
}

func newCheckCmd(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE",
		Short: "Report every problem in a plan.yaml",
		Long: `Check a plan.yaml and print every problem at once: unknown fields and
values of the wrong shape (with their line), duplicate or missing task ids,
dependencies that do not exist, dependency cycles (named), tasks without
acceptance criteria, file paths that are absolute, escape the repository or
lie in .git/ or .sluice/, and unknown review depths or efforts.

Exits 1 if there is any problem.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := args[0]
			p, err := load(f, file)
			if err != nil {
				return err
			}
			probs := plan.Validate(p)
			if len(probs) > 0 {
				for _, pr := range probs {
					fmt.Fprintf(f.IO.ErrOut, "%s: %s\n", file, pr.Error())
				}
				fmt.Fprintf(f.IO.ErrOut, "%s: %s\n", file, count(len(probs), "problem"))
				return &cmdutil.ExitError{Code: 1, Err: cmdutil.ErrSilent}
			}
			waves, err := plan.Waves(p)
			if err != nil {
				// Validate accepted the plan, so its graph is a DAG.
				return fmt.Errorf("%s: %w", file, err)
			}
			_, err = fmt.Fprintf(f.IO.Out, "%s: ok: %s in %s\n", file, count(len(p.Tasks), "task"), count(len(waves), "wave"))
			return err
		},
	}
}

func newShowCmd(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "show FILE",
		Short: "Render a plan.yaml as plan.md",
		Long: `Render a plan.yaml as Markdown (the run's plan.md) on standard output.
A plan with problems is still rendered; a warning on standard error says
how many there are.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := args[0]
			p, err := load(f, file)
			if err != nil {
				return err
			}
			if _, err := f.IO.Out.Write(plan.RenderMarkdown(p)); err != nil {
				return err
			}
			if probs := plan.Validate(p); len(probs) > 0 {
				fmt.Fprintf(f.IO.ErrOut, "%s: warning: the plan has %s; run `sluice plan check %s` to list them\n", file, count(len(probs), "problem"), file)
			}
			return nil
		},
	}
}

// load reads the plan, printing a parse error's every line itself so each
// keeps its file:line prefix.
func load(f *cmdutil.Factory, file string) (*plan.Plan, error) {
	path := file
	if !filepath.IsAbs(path) {
		wd, err := f.Getwd()
		if err != nil {
			return nil, fmt.Errorf("find the working directory: %w", err)
		}
		path = filepath.Join(wd, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	p, err := plan.Parse(data, file)
	var pe *plan.ParseError
	if errors.As(err, &pe) {
		fmt.Fprintln(f.IO.ErrOut, pe.Error())
		fmt.Fprintf(f.IO.ErrOut, "%s: %s\n", file, count(len(pe.Errs), "problem"))
		return nil, &cmdutil.ExitError{Code: 1, Err: cmdutil.ErrSilent}
	}
	return p, err
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
