// Package ask implements `sluice ask`: one streamed model turn, the quickest
// way to check a model configuration or test a server.
package ask

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/config"
	"github.com/sluice-run/sluice/internal/model"
)

type options struct {
	tier, provider, model, baseURL, system string
	maxTokens                              int
}

// NewCmd returns the `ask` command.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "ask [--tier T | --provider anthropic|openai --model M] [--base-url URL] PROMPT",
		Short: "Send one streamed turn to a model and print the reply",
		Long: `ask sends PROMPT (or standard input, when PROMPT is "-") to the model of a
tier (default: standard) or to a provider and model named on the command line,
prints the reply on standard output as it arrives, then the token usage and
cost on standard error.`,
		Example: `  sluice ask "Say hello"
  sluice ask --tier deep "Review this plan: ..."
  sluice ask --provider openai --model llama3.1 --base-url http://localhost:11434/v1 "Hi"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, f, o, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.tier, "tier", "", "tier whose model answers: fast, standard or deep (default standard)")
	fl.StringVar(&o.provider, "provider", "", "provider to ask instead of a tier: a configured provider, anthropic or openai")
	fl.StringVar(&o.model, "model", "", "model name, with --provider")
	fl.StringVar(&o.baseURL, "base-url", "", "override the provider's base URL")
	fl.StringVar(&o.system, "system", "", "system prompt")
	fl.IntVar(&o.maxTokens, "max-tokens", 1024, "most tokens to generate")
	return cmd
}

func run(cmd *cobra.Command, f *cmdutil.Factory, o options, args []string) error {
	switch {
	case o.provider != "" && o.tier != "":
		return errors.New("--tier and --provider both given: use one")
	case o.provider != "" && o.model == "":
		return errors.New("--provider needs --model: the model name to ask")
	case o.provider == "" && o.model != "":
		return errors.New("--model needs --provider; to use a configured model, pass --tier")
	case o.maxTokens <= 0:
		return fmt.Errorf("--max-tokens %d must be positive", o.maxTokens)
	}
	prompt := strings.Join(args, " ")
	if prompt == "-" {
		b, err := io.ReadAll(f.IO.In)
		if err != nil {
			return fmt.Errorf("read prompt from standard input: %w", err)
		}
		prompt = string(b)
	}
	if strings.TrimSpace(prompt) == "" {
		return errors.New("the prompt is empty")
	}

	wd, err := f.Getwd()
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	cfg, _, err := config.Load(config.FindProjectRoot(wd), f.Getenv)
	if err != nil {
		return err
	}
	models, tier := selectModels(cfg.Models, o)
	router, err := model.NewRouter(models, nil, f.Getenv)
	if err != nil {
		return err
	}
	p, modelName, err := router.ForTier(tier)
	if err != nil {
		return err
	}
	req := model.Request{
		Model:     modelName,
		Messages:  []model.Message{{Role: model.RoleUser, Content: []model.Block{{Type: model.BlockText, Text: prompt}}}},
		MaxTokens: o.maxTokens,
	}
	if o.system != "" {
		req.System = []model.TextPart{{Text: o.system}}
	}
	endsInNewline := true
	resp, err := p.Stream(cmd.Context(), req, func(d model.Delta) {
		switch d.Type {
		case model.DeltaText:
			fmt.Fprint(f.IO.Out, d.Text)
			endsInNewline = strings.HasSuffix(d.Text, "\n")
		case model.DeltaRetry:
			if !endsInNewline {
				fmt.Fprintln(f.IO.Out)
				endsInNewline = true
			}
			fmt.Fprintf(f.IO.ErrOut, "sluice: %s\n", d.Text)
		}
	})
	if !endsInNewline {
		fmt.Fprintln(f.IO.Out)
	}
	if err != nil {
		return err
	}
	for _, c := range resp.ToolCalls {
		fmt.Fprintf(f.IO.ErrOut, "tool call %s %s\n", c.Name, c.Input)
	}
	u := resp.Usage
	fmt.Fprintf(f.IO.ErrOut, "%s %s (tier %s): stop %s; tokens: %d input, %d output, %d cache read, %d cache write\n",
		p.Name(), resp.Model, tier, resp.StopReason, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens)
	if price, ok := router.Price(resp.Model); ok {
		fmt.Fprintf(f.IO.ErrOut, "cost: $%.6f\n", model.CostOf(price, u))
	} else {
		fmt.Fprintf(f.IO.ErrOut, "cost: unknown (no price for %s in models.prices)\n", resp.Model)
	}
	return nil
}

// selectModels narrows the configuration to what the flags ask for: a
// configured tier, or a one-off tier for --provider/--model.
func selectModels(m config.Models, o options) (config.Models, string) {
	out := config.Models{Prices: m.Prices, Providers: maps.Clone(m.Providers)}
	if out.Providers == nil {
		out.Providers = map[string]config.Provider{}
	}
	tier := o.tier
	if o.provider != "" {
		tier = "ask"
		out.Tiers = map[string]config.Tier{tier: {Provider: o.provider, Model: o.model}}
	} else {
		if tier == "" {
			tier = model.TierStandard
		}
		out.Tiers = map[string]config.Tier{}
		if t, ok := m.Tiers[tier]; ok {
			out.Tiers[tier] = t
		} else {
			// Keep every tier so the router's error lists them.
			out.Tiers = m.Tiers
		}
	}
	if o.baseURL != "" {
		if t, ok := out.Tiers[tier]; ok {
			pc, ok := out.Providers[t.Provider]
			if !ok {
				pc = config.Provider{Kind: t.Provider}
			}
			pc.BaseURL = o.baseURL
			out.Providers[t.Provider] = pc
		}
	}
	return out, tier
}
