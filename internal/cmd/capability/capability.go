// Package capability implements `sluice capability`: list, show, enable,
// disable and check the capabilities a project can see.
package capability

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sluice-run/sluice/internal/capability"
	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/config"
)

// NewCmd returns the `capability` command group.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	var pluginDirs []string
	cmd := &cobra.Command{
		Use:   "capability <command>",
		Short: "List, show, enable, disable and check capabilities",
		Long: `Capabilities extend the loop: each contributes text to agent roles at the
loop's extension points and may add gate clauses there. They are found in
.sluice/capabilities/<id>/, in each plugin's capabilities/<id>/ and in the
sluice binary. The enabled set lives in .sluice/config.yaml under
capabilities.enabled; without that key, capabilities that are on by default
are enabled.`,
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringArrayVar(&pluginDirs, "plugin-dir", nil, "Search `DIR` for plugins first (a plugin or a directory of plugins; repeatable)")
	env := func() (*project, error) { return load(f, pluginDirs) }
	cmd.AddCommand(newListCmd(f, env), newShowCmd(f, env), newToggleCmd(f, env, true), newToggleCmd(f, env, false), newCheckCmd(f, env))
	return cmd
}

// project is what every subcommand works from.
type project struct {
	root string
	all  []capability.Capability
	// errs are the problems Discover found.
	errs []error
	cfg  *config.Config
	// cfgErr is why the configuration could not be loaded, if it could not.
	cfgErr     error
	enabled    []string // nil: the key is absent
	pluginDirs []string
}

func load(f *cmdutil.Factory, extra []string) (*project, error) {
	wd, err := f.Getwd()
	if err != nil {
		return nil, fmt.Errorf("find the current directory: %w", err)
	}
	p := &project{root: config.FindProjectRoot(wd)}
	abs := make([]string, len(extra))
	for i, d := range extra {
		if !filepath.IsAbs(d) {
			d = filepath.Join(wd, d)
		}
		if _, err := os.Stat(d); err != nil {
			return nil, fmt.Errorf("--plugin-dir %s: %w", d, unwrap(err))
		}
		abs[i] = d
	}
	p.pluginDirs = capability.PluginDirs(capability.PluginLocations(p.root, config.UserDir(f.Getenv), abs))
	p.all, p.errs = capability.Discover(p.root, p.pluginDirs)
	cfg, src, err := config.Load(p.root, f.Getenv)
	if err != nil {
		p.cfgErr = err
		return p, nil
	}
	p.cfg = cfg
	// The list is authoritative only when a file or the environment set it.
	if s, set := src.Lookup("capabilities.enabled"); set && s.Kind != config.SourceDefault {
		p.enabled = cfg.Capabilities.Enabled
		if p.enabled == nil {
			p.enabled = []string{}
		}
	}
	return p, nil
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (p *project) backend() string {
	if p.cfg == nil || p.cfg.Backend.Kind == "" {
		return capability.DefaultBackend
	}
	return p.cfg.Backend.Kind
}

// active is the enabled set on the configured backend, with its notices.
func (p *project) active() ([]capability.Capability, []string) {
	return capability.Enabled(p.all, p.enabled, p.backend())
}

func (p *project) find(id string) (capability.Capability, error) {
	for _, c := range p.all {
		if c.ID == id {
			return c, nil
		}
	}
	var ids []string
	for _, c := range p.all {
		ids = append(ids, c.ID)
	}
	msg := fmt.Sprintf("no capability %q; known: %s", id, strings.Join(ids, ", "))
	if len(p.errs) > 0 {
		msg += fmt.Sprintf(" (%d capabilities have problems; run `sluice capability check`)", len(p.errs))
	}
	return capability.Capability{}, errors.New(msg)
}

func (p *project) warnProblems(f *cmdutil.Factory) {
	if len(p.errs) > 0 {
		fmt.Fprintf(f.IO.ErrOut, "warning: %s invalid and left out; run `sluice capability check`\n", plural(len(p.errs), "problem"))
	}
	if p.cfgErr != nil {
		fmt.Fprintf(f.IO.ErrOut, "warning: the configuration is invalid, so the built-in defaults decide what is enabled; run `sluice config`\n")
	}
}

func newListCmd(f *cmdutil.Factory, env func() (*project, error)) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List every capability and whether it is active",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := env()
			if err != nil {
				return err
			}
			active, notices := p.active()
			tw := tabwriter.NewWriter(f.IO.Out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tTIER\tVERSION\tORIGIN\tTITLE")
			for _, c := range p.all {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, status(p, c, active), c.Tier, c.Version, c.Origin, c.Title)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, n := range notices {
				fmt.Fprintf(f.IO.ErrOut, "note: %s\n", n)
			}
			p.warnProblems(f)
			return nil
		},
	}
}

// status says whether c is active and why.
func status(p *project, c capability.Capability, active []capability.Capability) string {
	isActive := slices.ContainsFunc(active, func(a capability.Capability) bool { return a.ID == c.ID })
	wanted := slices.Contains(p.enabled, c.ID) || (p.enabled == nil && c.Default == "on")
	switch {
	case isActive && wanted:
		return "on"
	case isActive:
		return "on (required)"
	case wanted && !slices.Contains(c.RuntimeCompat, p.backend()):
		return "skipped (backend " + p.backend() + ")"
	case wanted:
		return "skipped"
	default:
		return "off"
	}
}

func newShowCmd(f *cmdutil.Factory, env func() (*project, error)) *cobra.Command {
	var schema bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a capability: its contributions, gates and config keys",
		Long: `Show prints a capability in full: its status, the backends it supports,
what it requires, its config keys, each contribution with the point and
role it goes to and its text, and its gates. With --schema it prints the
JSON schema every capability.json is validated against instead.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if schema {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if schema {
				_, err := f.IO.Out.Write(capability.Schema())
				return err
			}
			p, err := env()
			if err != nil {
				return err
			}
			c, err := p.find(args[0])
			if err != nil {
				return err
			}
			active, _ := p.active()
			w := f.IO.Out
			fmt.Fprintf(w, "%s %s — %s\n", c.ID, c.Version, c.Title)
			fmt.Fprintf(w, "status:    %s\n", status(p, c, active))
			fmt.Fprintf(w, "default:   %s\n", c.Default)
			fmt.Fprintf(w, "tier:      %s\n", c.Tier)
			fmt.Fprintf(w, "backends:  %s\n", strings.Join(c.RuntimeCompat, ", "))
			fmt.Fprintf(w, "requires:  %s\n", orNone(c.Requires))
			fmt.Fprintf(w, "source:    %s\n\n%s\n", c.Source, c.Description)
			if len(c.Config) > 0 {
				fmt.Fprintf(w, "\nconfig (capabilities.config.%s):\n", c.ID)
				for _, k := range c.Config {
					fmt.Fprintf(w, "  %s (%s", k.Key, k.Type)
					if k.Default != nil {
						fmt.Fprintf(w, ", default %v", k.Default)
					}
					if len(k.Allowed) > 0 {
						fmt.Fprintf(w, ", one of %v", k.Allowed)
					}
					fmt.Fprintf(w, "): %s\n", k.Description)
				}
			}
			for _, k := range c.Contributions {
				fmt.Fprintf(w, "\ncontribution at %s into %s", k.Point, k.Into)
				if k.When != nil {
					fmt.Fprintf(w, " when %s", when(*k.When))
				}
				fmt.Fprintf(w, ":\n%s\n", indent(strings.TrimSpace(k.Text)))
			}
			for _, g := range c.Gates {
				fmt.Fprintf(w, "\ngate %s at %s (%s, %s): %s\n", g.ID, g.Point, g.Kind, g.Mode, g.Command+g.Text)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&schema, "schema", false, "Print the JSON schema of capability.json")
	return cmd
}

func when(w capability.When) string {
	var parts []string
	if len(w.Depth) > 0 {
		parts = append(parts, "depth is "+strings.Join(w.Depth, " or "))
	}
	if len(w.Schedule) > 0 {
		parts = append(parts, "schedule is "+strings.Join(w.Schedule, " or "))
	}
	if w.Config != "" {
		parts = append(parts, w.Config+" is true")
	}
	return strings.Join(parts, " and ")
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

func newToggleCmd(f *cmdutil.Factory, env func() (*project, error), enable bool) *cobra.Command {
	use, short := "enable ID", "Enable a capability in .sluice/config.yaml"
	if !enable {
		use, short = "disable ID", "Disable a capability in .sluice/config.yaml"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `.

This edits capabilities.enabled in the project's .sluice/config.yaml,
creating the file if needed and keeping its comments. When the list is
absent, it is written with the capabilities that are on by default, so only
the one named changes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := env()
			if err != nil {
				return err
			}
			id := args[0]
			c, err := p.find(id)
			if err != nil && enable {
				return err
			}
			var defaults []string
			for _, x := range p.all {
				if x.Default == "on" {
					defaults = append(defaults, x.ID)
				}
			}
			file := config.ProjectFile(p.root)
			data, err := os.ReadFile(file)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("read %s: %w", file, unwrap(err))
			}
			out, changed, err := capability.EditEnabled(data, file, id, enable, defaults)
			if err != nil {
				return err
			}
			word := map[bool]string{true: "enabled", false: "disabled"}[enable]
			if !changed {
				fmt.Fprintf(f.IO.Out, "%s is already %s in %s\n", id, word, file)
				return nil
			}
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				return fmt.Errorf("create %s: %w", filepath.Dir(file), err)
			}
			if err := writeFileAtomic(file, out); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.Out, "%s %s in %s\n", word, id, file)
			if enable {
				if !slices.Contains(c.RuntimeCompat, p.backend()) {
					fmt.Fprintf(f.IO.ErrOut, "note: %s supports the %s backend(s); on the configured %s backend it is skipped\n", id, strings.Join(c.RuntimeCompat, ", "), p.backend())
				}
				for _, r := range c.Requires {
					fmt.Fprintf(f.IO.ErrOut, "note: %s requires %s, which is enabled with it\n", id, r)
				}
			}
			return nil
		},
	}
}

// writeFileAtomic replaces file with data so a crash never leaves half a
// configuration.
func writeFileAtomic(file string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), ".config-*.yaml")
	if err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", file, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	if info, err := os.Stat(file); err == nil {
		_ = os.Chmod(tmp.Name(), info.Mode().Perm())
	} else {
		_ = os.Chmod(tmp.Name(), 0o644)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

func newCheckCmd(f *cmdutil.Factory, env func() (*project, error)) *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Validate every capability, agent manifest and capability setting",
		Long: `Check validates every capability the project can see (project, plugins,
built-in) against the capability schema and the role-family partition,
the agent manifests (.claude/agents, .sluice/agents, plugins' agents) that
declare a role, and the capabilities settings in the configuration. It
prints every problem with its file, JSON path and fix, and exits 1 if there
is any.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := env()
			if err != nil {
				return err
			}
			var msgs []string
			for _, e := range p.errs {
				msgs = append(msgs, e.Error())
			}
			decls, derrs := capability.AgentDeclarations(p.root, p.pluginDirs)
			for _, e := range derrs {
				msgs = append(msgs, e.Error())
			}
			if err := capability.CheckPartition(append(capability.Declarations(p.all), decls...)); err != nil {
				_, list, _ := strings.Cut(err.Error(), ":\n")
				for _, line := range strings.Split(list, "\n") {
					msgs = append(msgs, "role-family partition: "+line)
				}
			}
			if p.cfgErr != nil {
				msgs = append(msgs, "configuration: "+strings.ReplaceAll(p.cfgErr.Error(), "\n", "\nconfiguration: "))
			} else {
				for _, e := range capability.CheckEnabled(p.all, p.enabled, p.cfg.Capabilities.Config) {
					msgs = append(msgs, e.Error())
				}
			}
			if len(msgs) > 0 {
				for _, m := range msgs {
					fmt.Fprintln(f.IO.ErrOut, m)
				}
				fmt.Fprintf(f.IO.ErrOut, "%s\n", plural(len(msgs), "problem"))
				return &cmdutil.ExitError{Code: 1, Err: cmdutil.ErrSilent}
			}
			_, err = fmt.Fprintf(f.IO.Out, "ok: %s, %s\n", plural(len(p.all), "capability"), plural(len(decls), "agent role declaration"))
			return err
		},
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
