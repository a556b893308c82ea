package config

// Defaults returns the built-in configuration: every layer above it
// overrides single values, never whole sections.
func Defaults() *Config {
	return &Config{
		Models: Models{
			Providers: map[string]Provider{
				"anthropic": {Kind: "anthropic", APIKeyEnv: "ANTHROPIC_API_KEY"},
				"openai":    {Kind: "openai", APIKeyEnv: "OPENAI_API_KEY"},
			},
			Tiers: map[string]Tier{
				"fast":     {Provider: "anthropic", Model: "claude-haiku-4-5", ContextWindow: 200000},
				"standard": {Provider: "anthropic", Model: "claude-sonnet-4-5", ContextWindow: 200000},
				"deep":     {Provider: "anthropic", Model: "claude-opus-4-1", ContextWindow: 200000},
			},
			// USD per million tokens, from the providers' published prices.
			Prices: map[string]Price{
				"claude-haiku-4-5":  {Input: 1, Output: 5, CacheRead: 0.10, CacheWrite: 1.25},
				"claude-sonnet-4-5": {Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75},
				"claude-opus-4-1":   {Input: 15, Output: 75, CacheRead: 1.50, CacheWrite: 18.75},
				"gpt-4.1":           {Input: 2, Output: 8, CacheRead: 0.50},
				"gpt-4.1-mini":      {Input: 0.40, Output: 1.60, CacheRead: 0.10},
				"o4-mini":           {Input: 1.10, Output: 4.40, CacheRead: 0.275},
			},
		},
		Roles: map[string]string{
			"researcher":    "fast",
			"planner":       "deep",
			"critic":        "deep",
			"executor":      "standard",
			"verifier":      "standard",
			"architect":     "deep",
			"test-designer": "standard",
			"code-reviewer": "standard",
			"design-spec":   "standard",
			"linting":       "fast",
		},
		Budgets: Budgets{TurnsPerDelegation: 40},
		Run: Run{
			Jobs:                0, // the number of CPUs
			Schedule:            "dag",
			Depth:               "standard",
			Complexity:          "medium",
			CriticMaxIterations: 3,
			TaskRetries:         2,
			OnCriticExhausted:   "ask",
			GateTimeout:         "10m",
		},
		Backend:      Backend{Kind: "api", Fallback: "api"},
		Instructions: Instructions{TokenBudget: 8000},
	}
}
