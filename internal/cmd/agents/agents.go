// Package agents implements `sluice agents list` and `sluice agents show`.
package agents

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sluice-run/sluice/internal/agents"
	"github.com/sluice-run/sluice/internal/capability"
	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/config"
	"github.com/sluice-run/sluice/internal/delegate"
	"github.com/sluice-run/sluice/internal/instructions"
	"github.com/sluice-run/sluice/internal/plan"
)

// NewCmd returns the `agents` command group.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agents <command>",
		Short: "List the agents of each role and show what they are told",
		Long: `sluice ships one built-in agent per role. A project replaces an agent's prompt
(never its output contract, checks or tools) with a Markdown file in
.claude/agents/ or .sluice/agents/ whose front matter has a role: key; the one
in .sluice/agents/ wins.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newListCmd(f), newShowCmd(f))
	return cmd
}

func projectRoot(f *cmdutil.Factory) (string, error) {
	wd, err := f.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the project: %w", err)
	}
	return config.FindProjectRoot(wd), nil
}

func loadRegistry(f *cmdutil.Factory) (*agents.Registry, string, error) {
	root, err := projectRoot(f)
	if err != nil {
		return nil, "", err
	}
	reg, warns, err := agents.Load(root)
	if err != nil {
		return nil, "", err
	}
	for _, w := range warns {
		fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", w)
	}
	return reg, root, nil
}

func newListCmd(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the agent of every role and where it came from",
		Long: `List the effective agent of every role: its name, role, model tier, source
(builtin or the override file) and its prompt size in tokens (bytes/4).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, _, err := loadRegistry(f)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tROLE\tTIER\tTOKENS\tSOURCE")
			for _, a := range reg.All() {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", a.Name, a.Role, a.Tier, agents.Tokens(a.Prompt), a.Source)
			}
			return tw.Flush()
		},
	}
}

func newShowCmd(f *cmdutil.Factory) *cobra.Command {
	var composed bool
	var role string
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show an agent's definition, or the exact prompt a delegation would send",
		Long: `Show an agent, named by its name or its role: its front matter and prompt.

With --composed, print exactly what a delegation of the agent for a sample task
sends: the system prompt (agent prompt, the project's instructions, capability
contributions for the role) and the first user message (the delegation), with
the token count (bytes/4) of each part. --role composes the delegation for
another role's contract with this agent's prompt.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, root, err := loadRegistry(f)
			if err != nil {
				return err
			}
			a, ok := reg.Lookup(args[0])
			if !ok {
				var names []string
				for _, x := range reg.All() {
					names = append(names, x.Name)
				}
				return fmt.Errorf("no agent named %q: use one of %s, or a role", args[0], strings.Join(names, ", "))
			}
			if role != "" && !cmd.Flags().Changed("composed") {
				return fmt.Errorf("--role needs --composed")
			}
			if !composed {
				return showDefinition(f, a)
			}
			if role != "" {
				if _, err := delegate.Contract(role); err != nil {
					return fmt.Errorf("--role: %w", err)
				}
				a.Role = role
			}
			return showComposed(f, a, root)
		},
	}
	cmd.Flags().BoolVar(&composed, "composed", false, "print the system prompt and first message of a delegation for a sample task")
	cmd.Flags().StringVar(&role, "role", "", "compose the delegation for this role (default: the agent's role)")
	return cmd
}

func showDefinition(f *cmdutil.Factory, a agents.Agent) error {
	out := f.IO.Out
	fmt.Fprintf(out, "name: %s\ndescription: %s\nrole: %s\ntools: %s\ntier: %s\nsource: %s\ntokens: %d\n\n%s\n",
		a.Name, a.Description, a.Role, strings.Join(a.Tools, ", "), a.Tier, a.Source, agents.Tokens(a.Prompt), a.Prompt)
	return nil
}

// showComposed prints a delegation of a for a sample task with the
// project's real instructions and capability contributions.
func showComposed(f *cmdutil.Factory, a agents.Agent, root string) error {
	cfg, _, err := config.Load(root, f.Getenv)
	if err != nil {
		return err
	}
	instr, err := instructions.Load(root, config.UserDir(f.Getenv), cfg.Instructions.TokenBudget)
	if err != nil {
		return err
	}
	contribs, warns := contributions(f, root, cfg, a.Role)
	for _, w := range warns {
		fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", w)
	}
	p, err := agents.Compose(a, instr.Text(), contribs, SampleInput(a.Role))
	if err != nil {
		return err
	}

	out := f.IO.Out
	section := func(title, text string) {
		fmt.Fprintf(out, "===== %s: %d tokens =====\n", title, agents.Tokens(text))
		if text != "" {
			fmt.Fprintln(out, strings.TrimRight(text, "\n"))
		}
	}
	// System parts are agent prompt, then instructions if any, then one
	// part per contribution.
	i := 0
	section("system: agent "+a.Name+" ("+a.Source+")", p.System[i].Text)
	i++
	instrText := ""
	if strings.TrimSpace(instr.Text()) != "" {
		instrText = p.System[i].Text
		i++
	}
	section("system: instructions", instrText)
	var cs []string
	for ; i < len(p.System); i++ {
		cs = append(cs, p.System[i].Text)
	}
	contribText := strings.Join(cs, "\n\n")
	section(fmt.Sprintf("system: contributions (%d)", len(cs)), contribText)
	section("delegation (first user message)", p.Message)
	system := 0
	for _, part := range p.System {
		system += agents.Tokens(part.Text)
	}
	_, err = fmt.Fprintf(out, "===== total: %d tokens (system %d, delegation %d) =====\n", system+agents.Tokens(p.Message), system, agents.Tokens(p.Message))
	return err
}

// contributions are what the project's enabled capabilities contribute to
// a delegation of role, as the engine gathers them.
func contributions(f *cmdutil.Factory, root string, cfg *config.Config, role string) ([]agents.Contribution, []string) {
	var warns []string
	dirs := capability.PluginDirs(capability.PluginLocations(root, config.UserDir(f.Getenv), nil))
	all, errs := capability.Discover(root, dirs)
	for _, e := range errs {
		warns = append(warns, e.Error())
	}
	active, notices := capability.Enabled(all, cfg.Capabilities.Enabled, cfg.Backend.Kind)
	warns = append(warns, notices...)
	depth := cfg.Run.Depth
	if depth == "" {
		depth = plan.DepthStandard
	}
	frags := capability.ForDelegation(active, role, delegate.RolePhase(role), capability.Conditions{
		Depth: depth, Schedule: cfg.Run.Schedule, Config: cfg.Capabilities.Config,
	})
	out := make([]agents.Contribution, len(frags))
	for i, fr := range frags {
		out[i] = agents.Contribution{Capability: fr.Capability, Into: fr.Into, Text: fr.Text}
	}
	return out, warns
}
