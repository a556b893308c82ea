// Package models implements `sluice models`: the configured tiers, and with
// --check a tiny call to each.
package models

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/config"
	"github.com/sluice-run/sluice/internal/model"
)

// NewCmd returns the `models` command.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	var check bool
	cmd := &cobra.Command{
		Use:   "models [--check]",
		Short: "List the model tiers, and check each is reachable",
		Long: `models lists each configured tier with its provider, model and price (USD
per million input, output, cache-read and cache-write tokens). With --check it
sends each tier one tiny request and reports ok or the error; it exits 1 if
any check fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd.Context(), f, check)
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "make one tiny call per tier")
	return cmd
}

func run(ctx context.Context, f *cmdutil.Factory, check bool) error {
	wd, err := f.Getwd()
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	cfg, _, err := config.Load(config.FindProjectRoot(wd), f.Getenv)
	if err != nil {
		return err
	}
	// A check should answer quickly: two attempts, a short deadline.
	base := model.Options{MaxAttempts: 2, Timeout: time.Minute, StallTimeout: 30 * time.Second}
	r, err := model.NewRouter(cfg.Models, cfg.Roles, f.Getenv, model.WithBaseOptions(base))
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	header := "TIER\tPROVIDER\tMODEL\tPRICE in/out/cache-read/cache-write ($/Mtok)"
	if check {
		header += "\tCHECK"
	}
	fmt.Fprintln(tw, header)
	failed := 0
	for _, tier := range r.Tiers() {
		t, _ := r.Tier(tier)
		p, modelName, _ := r.ForTier(tier)
		price := "unknown"
		if pr, ok := r.Price(modelName); ok {
			price = fmt.Sprintf("%g/%g/%g/%g", pr.Input, pr.Output, pr.CacheRead, pr.CacheWrite)
		}
		line := fmt.Sprintf("%s\t%s (%s)\t%s\t%s", tier, t.Provider, p.Name(), modelName, price)
		if check {
			line += "\t" + ping(ctx, p, modelName, &failed)
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if failed > 0 {
		return &cmdutil.ExitError{Code: 1, Err: fmt.Errorf("%d of %d tiers failed the check", failed, len(r.Tiers()))}
	}
	return nil
}

func ping(ctx context.Context, p model.Provider, modelName string, failed *int) string {
	start := time.Now()
	_, err := p.Stream(ctx, model.Request{
		Model:     modelName,
		Messages:  []model.Message{{Role: model.RoleUser, Content: []model.Block{{Type: model.BlockText, Text: "Reply with the single word: ok"}}}},
		MaxTokens: 16,
	}, nil)
	if err != nil {
		*failed++
		return "error: " + err.Error()
	}
	return fmt.Sprintf("ok (%s)", time.Since(start).Round(time.Millisecond))
}
