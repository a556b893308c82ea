package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// validate checks values that decode but make no sense, locating each
// problem where its value came from.
func validate(c *Config, src *Sources) []error {
	var errs []error
	bad := func(key, msg string, args ...any) {
		s, _ := src.Lookup(key)
		errs = append(errs, &Error{Source: s, Key: key, Msg: fmt.Sprintf(msg, args...)})
	}
	oneOf := func(key, val string, allowed ...string) {
		if !slices.Contains(allowed, val) {
			bad(key, "%q is not valid; set it to %s", val, strings.Join(allowed, " or "))
		}
	}
	duration := func(key, val string) {
		if val == "" {
			return
		}
		if d, err := time.ParseDuration(val); err != nil || d < 0 {
			bad(key, "%q is not a duration; write it like 90s, 10m or 1h30m", val)
		}
	}
	nonNeg := func(key string, n float64) {
		if n < 0 {
			bad(key, "%v is negative; use 0 or more", n)
		}
	}

	providers := sortedNames(c.Models.Providers)
	for _, name := range providers {
		p := c.Models.Providers[name]
		k := "models.providers." + name
		if p.Kind == "" {
			bad(k+".kind", "missing; set it to anthropic or openai")
		} else {
			oneOf(k+".kind", p.Kind, "anthropic", "openai")
		}
		duration(k+".timeout", p.Timeout)
		duration(k+".stall_timeout", p.StallTimeout)
		nonNeg(k+".max_attempts", float64(p.MaxAttempts))
	}
	tiers := sortedNames(c.Models.Tiers)
	for _, name := range tiers {
		t := c.Models.Tiers[name]
		k := "models.tiers." + name
		if _, ok := c.Models.Providers[t.Provider]; !ok {
			bad(k+".provider", "names unknown provider %q; use one of %s or add it under models.providers", t.Provider, strings.Join(providers, ", "))
		}
		if t.Model == "" {
			bad(k+".model", "missing; name the model this tier uses")
		}
		nonNeg(k+".context_window", float64(t.ContextWindow))
		nonNeg(k+".max_tokens", float64(t.MaxTokens))
	}
	for _, name := range sortedNames(c.Models.Prices) {
		p := c.Models.Prices[name]
		k := "models.prices." + name
		nonNeg(k+".input", p.Input)
		nonNeg(k+".output", p.Output)
		nonNeg(k+".cache_read", p.CacheRead)
		nonNeg(k+".cache_write", p.CacheWrite)
	}
	for _, role := range sortedNames(c.Roles) {
		if _, ok := c.Models.Tiers[c.Roles[role]]; !ok {
			bad("roles."+role, "names unknown tier %q; use one of %s", c.Roles[role], strings.Join(tiers, ", "))
		}
	}

	nonNeg("budgets.tokens", float64(c.Budgets.Tokens))
	nonNeg("budgets.usd", c.Budgets.USD)
	duration("budgets.timeout", c.Budgets.Timeout)
	nonNeg("budgets.turns_per_delegation", float64(c.Budgets.TurnsPerDelegation))

	nonNeg("run.jobs", float64(c.Run.Jobs))
	oneOf("run.schedule", c.Run.Schedule, "dag", "waves")
	oneOf("run.depth", c.Run.Depth, "lightweight", "standard", "full")
	oneOf("run.complexity", c.Run.Complexity, "simple", "medium", "complex")
	nonNeg("run.critic_max_iterations", float64(c.Run.CriticMaxIterations))
	nonNeg("run.task_retries", float64(c.Run.TaskRetries))
	oneOf("run.on_critic_exhausted", c.Run.OnCriticExhausted, "ask", "proceed")
	duration("run.gate_timeout", c.Run.GateTimeout)

	oneOf("backend.kind", c.Backend.Kind, "api", "claude-code", "codex")
	if c.Backend.Fallback != "" {
		oneOf("backend.fallback", c.Backend.Fallback, "api", "claude-code", "codex")
	}

	for _, g := range sortedNames(c.Gates.Commands) {
		oneOf("gates.commands."+g, g, "format", "lint", "typecheck", "test", "standards")
	}
	for i, cl := range c.Gates.Extra {
		var missing []string
		if cl.Arrow == "" {
			missing = append(missing, "arrow")
		}
		if cl.ID == "" {
			missing = append(missing, "id")
		}
		if cl.Kind == "command" && cl.Command == "" {
			missing = append(missing, "command")
		}
		if cl.Kind == "attested" && cl.Text == "" {
			missing = append(missing, "text")
		}
		if len(missing) > 0 {
			bad("gates.extra", "clause %d lacks %s", i+1, strings.Join(missing, ", "))
		}
		if cl.Kind != "command" && cl.Kind != "attested" {
			bad("gates.extra", "clause %d has kind %q; set it to command or attested", i+1, cl.Kind)
		}
		if cl.Depth != "" && !slices.Contains([]string{"lightweight", "standard", "full"}, cl.Depth) {
			bad("gates.extra", "clause %d has depth %q; set it to lightweight, standard or full", i+1, cl.Depth)
		}
	}
	nonNeg("instructions.token_budget", float64(c.Instructions.TokenBudget))
	return errs
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
