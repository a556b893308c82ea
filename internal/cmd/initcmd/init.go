// Package initcmd implements `sluice init`: it writes the project's commented
// .sluice/config.yaml and the typed gate grid built from the fixed role
// contracts, the project's configuration and its resolved quality gates.
package initcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/config"
	"github.com/sluice-run/sluice/internal/contract"
	"github.com/sluice-run/sluice/internal/gitx"
	"github.com/sluice-run/sluice/internal/grid"
	"github.com/sluice-run/sluice/internal/resolve"
)

// Options are init's inputs.
type Options struct {
	// Force rewrites .sluice/config.yaml with the commented defaults, keeping
	// the previous file as config.yaml.bak.
	Force bool
}

// NewCmd returns the `init` command.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	var opts Options
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write .sluice/config.yaml and the gate grid for this repository",
		Long: `Write .sluice/config.yaml (commented defaults, only if it does not exist) and
the typed gate grid .sluice/grid.vN.yaml, built from the fixed role contracts,
the configuration and the project's resolved quality gates.

Grid files are immutable. Running init again with nothing changed writes
nothing; after the configuration or the resolved gates change, it writes the
next version and points .sluice/grid.current at it. A configuration that
tries to remove or weaken a fixed gate clause is refused, naming the clause.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return Run(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "rewrite .sluice/config.yaml with the commented defaults (the old file is kept as config.yaml.bak)")
	return cmd
}

// Run initializes the repository containing the working directory.
func Run(ctx context.Context, f *cmdutil.Factory, opts Options) error {
	wd, err := f.Getwd()
	if err != nil {
		return fmt.Errorf("init: working directory: %w", err)
	}
	repo, err := gitx.Open(ctx, wd)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	root := repo.Root()
	sluiceDir := filepath.Join(root, ".sluice")
	if err := os.MkdirAll(sluiceDir, 0o755); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	out := f.IO.Out

	cfgPath := filepath.Join(sluiceDir, "config.yaml")
	if err := writeConfig(out, root, cfgPath, opts.Force); err != nil {
		return err
	}

	cfg, _, err := config.Load(root, f.Getenv)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	res, err := resolve.Resolve(ctx, root, resolve.Options{UserConfigDir: config.UserDir(f.Getenv)})
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", w)
	}
	gates := make(map[string]string, len(res.Gates))
	for name, g := range res.Gates {
		gates[name] = g.Command
	}

	// A current grid edited by hand is never used again; say so, then write
	// a new version below.
	if _, err := grid.Load(sluiceDir); errors.Is(err, grid.ErrTampered) {
		fmt.Fprintf(f.IO.ErrOut, "warning: %v\n", err)
	}

	roles, err := contract.Roles()
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	g, err := grid.Build(roles, grid.InputFrom(cfg, gates))
	if err != nil {
		return fmt.Errorf("init: %s: %w", rel(root, cfgPath), err)
	}
	path, created, err := grid.Write(sluiceDir, g)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if created {
		fmt.Fprintf(out, "wrote %s (%s names it)\n", rel(root, path), rel(root, filepath.Join(sluiceDir, grid.CurrentFile)))
	} else {
		fmt.Fprintf(out, "unchanged %s\n", rel(root, path))
	}
	printGates(out, g)
	for _, u := range g.Unset() {
		fmt.Fprintf(f.IO.ErrOut, "warning: gate %s: no command resolved, so these clauses are reported as not run; set gates.commands in %s\n",
			u, rel(root, cfgPath))
	}
	return nil
}

// writeConfig writes the commented defaults when the file is absent, or with
// force (keeping the old file as .bak).
func writeConfig(out io.Writer, root, path string, force bool) error {
	_, err := os.Stat(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("init: %w", err)
	}
	if exists && !force {
		fmt.Fprintf(out, "kept %s\n", rel(root, path))
		return nil
	}
	text, err := renderConfig(config.Defaults())
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if exists {
		if err := os.Rename(path, path+".bak"); err != nil {
			return fmt.Errorf("init: keep the old configuration: %w", err)
		}
		fmt.Fprintf(out, "moved the old configuration to %s\n", rel(root, path+".bak"))
	}
	if err := os.WriteFile(path, text, 0o644); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	fmt.Fprintf(out, "wrote %s (commented defaults; edit it and run sluice init again)\n", rel(root, path))
	return nil
}

func printGates(out io.Writer, g *grid.Grid) {
	fmt.Fprintf(out, "quality gates:\n")
	for _, name := range contract.GateNames() {
		gate := g.Gates[name]
		cmd := gate.Command
		if cmd == "" {
			cmd = "(none)"
		}
		fmt.Fprintf(out, "  %-9s  %s  [%s]\n", name, cmd, gate.Source)
	}
	fmt.Fprintf(out, "arrows:\n")
	for _, a := range g.Arrows {
		var ids []string
		for _, c := range a.Clauses {
			ids = append(ids, c.ID)
		}
		fmt.Fprintf(out, "  %-24s %s\n", a.Name, strings.Join(ids, ", "))
	}
}

func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil {
		return r
	}
	return path
}
