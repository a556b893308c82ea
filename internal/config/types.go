// Package config is sluice's effective configuration: the project's
// .sluice/config.yaml over the user's config over built-in defaults, with
// environment overrides, and where every value came from.
package config

// Config is the whole configuration. Zero values mean "not set"; Defaults
// fills them.
type Config struct {
	Models       Models            `yaml:"models" json:"models"`
	Roles        map[string]string `yaml:"roles" json:"roles"` // agent role → tier
	Budgets      Budgets           `yaml:"budgets" json:"budgets"`
	Run          Run               `yaml:"run" json:"run"`
	Backend      Backend           `yaml:"backend" json:"backend"`
	Gates        Gates             `yaml:"gates" json:"gates"`
	Instructions Instructions      `yaml:"instructions" json:"instructions"`
	Capabilities Capabilities      `yaml:"capabilities" json:"capabilities"`
	MCP          MCP               `yaml:"mcp" json:"mcp"`
}

// MCP offers the tools of the project's MCP servers (.mcp.json) to agents.
type MCP struct {
	// Roles are the agent roles that get MCP tools; empty: none.
	Roles []string `yaml:"roles,omitempty" json:"roles,omitempty"`
	// Servers limits which servers of .mcp.json start; empty: all.
	Servers []string `yaml:"servers,omitempty" json:"servers,omitempty"`
}

// Models maps tiers to providers and models, and models to prices.
type Models struct {
	Providers map[string]Provider `yaml:"providers" json:"providers"`
	Tiers     map[string]Tier     `yaml:"tiers" json:"tiers"` // fast, standard, deep
	Prices    map[string]Price    `yaml:"prices" json:"prices"`
}

// Provider is a model API endpoint.
type Provider struct {
	// Kind is the wire protocol: "anthropic" or "openai".
	Kind    string `yaml:"kind" json:"kind"`
	BaseURL string `yaml:"base_url,omitempty" json:"base_url,omitempty"`
	// APIKey is a literal key (discouraged; masked when printed).
	APIKey string `yaml:"api_key,omitempty" json:"api_key,omitempty"`
	// APIKeyEnv names the environment variable that holds the key.
	APIKeyEnv string `yaml:"api_key_env,omitempty" json:"api_key_env,omitempty"`
	// Timeout per call and stall timeout (no bytes), as Go durations.
	Timeout      string `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	StallTimeout string `yaml:"stall_timeout,omitempty" json:"stall_timeout,omitempty"`
	MaxAttempts  int    `yaml:"max_attempts,omitempty" json:"max_attempts,omitempty"`
}

// Tier names the provider and model that serve a tier.
type Tier struct {
	Provider string `yaml:"provider" json:"provider"`
	Model    string `yaml:"model" json:"model"`
	// ContextWindow in tokens; compaction starts near it.
	ContextWindow int `yaml:"context_window,omitempty" json:"context_window,omitempty"`
	MaxTokens     int `yaml:"max_tokens,omitempty" json:"max_tokens,omitempty"`
}

// Price is USD per million tokens.
type Price struct {
	Input      float64 `yaml:"input" json:"input"`
	Output     float64 `yaml:"output" json:"output"`
	CacheRead  float64 `yaml:"cache_read,omitempty" json:"cache_read,omitempty"`
	CacheWrite float64 `yaml:"cache_write,omitempty" json:"cache_write,omitempty"`
}

// Budgets are shared by every agent of a run. Zero means unlimited.
type Budgets struct {
	Tokens             int64   `yaml:"tokens,omitempty" json:"tokens,omitempty"`
	USD                float64 `yaml:"usd,omitempty" json:"usd,omitempty"`
	Timeout            string  `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	TurnsPerDelegation int     `yaml:"turns_per_delegation,omitempty" json:"turns_per_delegation,omitempty"`
}

// Run holds the loop's knobs.
type Run struct {
	Jobs     int    `yaml:"jobs,omitempty" json:"jobs,omitempty"`
	Schedule string `yaml:"schedule,omitempty" json:"schedule,omitempty"` // dag | waves
	Depth    string `yaml:"depth,omitempty" json:"depth,omitempty"`       // lightweight | standard | full
	// Complexity of research: simple | medium | complex (1/2/3 passes).
	Complexity          string `yaml:"complexity,omitempty" json:"complexity,omitempty"`
	CriticMaxIterations int    `yaml:"critic_max_iterations,omitempty" json:"critic_max_iterations,omitempty"`
	TaskRetries         int    `yaml:"task_retries,omitempty" json:"task_retries,omitempty"`
	// OnCriticExhausted: "ask" (stop and ask) or "proceed" (record the
	// remaining objections and execute).
	OnCriticExhausted string `yaml:"on_critic_exhausted,omitempty" json:"on_critic_exhausted,omitempty"`
	GateTimeout       string `yaml:"gate_timeout,omitempty" json:"gate_timeout,omitempty"`
}

// Backend chooses how agents run: "api", "claude-code" or "codex".
type Backend struct {
	Kind     string `yaml:"kind,omitempty" json:"kind,omitempty"`
	Fallback string `yaml:"fallback,omitempty" json:"fallback,omitempty"`
}

// Gates holds project-added clauses on arrows (domain rules). Fixed
// clauses cannot be removed or weakened here.
type Gates struct {
	Extra []Clause `yaml:"extra,omitempty" json:"extra,omitempty"`
	// Overrides of resolved quality-gate commands by gate name
	// (format, lint, typecheck, test, standards).
	Commands map[string]string `yaml:"commands,omitempty" json:"commands,omitempty"`
}

// Clause is a project-added gate clause.
type Clause struct {
	Arrow   string `yaml:"arrow" json:"arrow"` // e.g. "implementer->integrator"
	ID      string `yaml:"id" json:"id"`
	Kind    string `yaml:"kind" json:"kind"` // command | attested
	Command string `yaml:"command,omitempty" json:"command,omitempty"`
	Text    string `yaml:"text,omitempty" json:"text,omitempty"`
	Depth   string `yaml:"depth,omitempty" json:"depth,omitempty"`
}

// Instructions bounds the project instructions (CLAUDE.md, AGENTS.md).
type Instructions struct {
	TokenBudget int `yaml:"token_budget,omitempty" json:"token_budget,omitempty"`
}

// Capabilities lists enabled capabilities and their config values.
type Capabilities struct {
	Enabled []string                  `yaml:"enabled,omitempty" json:"enabled,omitempty"`
	Config  map[string]map[string]any `yaml:"config,omitempty" json:"config,omitempty"`
}
