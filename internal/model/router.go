package model

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sluice-run/sluice/internal/config"
)

// Tier names (seed 002 ADR-007).
const (
	TierFast     = "fast"
	TierStandard = "standard"
	TierDeep     = "deep"
)

// Router resolves agent roles to tiers, tiers to a provider and model, and
// prices calls. Providers are built once and shared: they are safe for
// concurrent use.
type Router struct {
	models    config.Models
	roles     map[string]string
	providers map[string]Provider // by configured provider name
}

// RouterOption adjusts a Router.
type RouterOption func(*Options)

// WithBaseOptions sets the options every provider starts from (HTTP
// client, Sleep, Rand, Logger); configuration fills the rest.
func WithBaseOptions(base Options) RouterOption {
	return func(o *Options) { *o = base }
}

// kindDefaults are the usual environment variables of each wire protocol.
var kindDefaults = map[string]struct{ keyEnv, baseURLEnv string }{
	"anthropic": {"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"},
	"openai":    {"OPENAI_API_KEY", "OPENAI_BASE_URL"},
}

// NewRouter checks the model configuration and builds its providers. The
// API key of a provider is its api_key, else the variable its api_key_env
// names, else the kind's usual variable (ANTHROPIC_API_KEY,
// OPENAI_API_KEY); the base URL is its base_url, else ANTHROPIC_BASE_URL or
// OPENAI_BASE_URL. A tier may name "anthropic" or "openai" directly without
// a providers entry.
func NewRouter(cfg config.Models, roleTiers map[string]string, getenv func(string) string, opts ...RouterOption) (*Router, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	r := &Router{models: cfg, roles: roleTiers, providers: map[string]Provider{}}
	if len(cfg.Tiers) == 0 {
		return nil, fmt.Errorf("models.tiers is empty: configure at least the %q tier with a provider and model", TierStandard)
	}
	for _, name := range sortedKeys(cfg.Tiers) {
		t := cfg.Tiers[name]
		if t.Model == "" {
			return nil, fmt.Errorf("models.tiers.%s: no model named", name)
		}
		if t.Provider == "" {
			return nil, fmt.Errorf("models.tiers.%s: no provider named (want one of models.providers, or anthropic or openai)", name)
		}
		if _, ok := r.providers[t.Provider]; ok {
			continue
		}
		pc, ok := cfg.Providers[t.Provider]
		if !ok {
			if _, known := kindDefaults[t.Provider]; !known {
				return nil, fmt.Errorf("models.tiers.%s: provider %q is not in models.providers", name, t.Provider)
			}
			pc = config.Provider{Kind: t.Provider}
		}
		p, err := buildProvider(t.Provider, pc, getenv, opts)
		if err != nil {
			return nil, err
		}
		r.providers[t.Provider] = p
	}
	for _, role := range sortedKeys(roleTiers) {
		if _, ok := cfg.Tiers[roleTiers[role]]; !ok {
			return nil, fmt.Errorf("roles.%s: tier %q is not configured in models.tiers (have %s)", role, roleTiers[role], strings.Join(sortedKeys(cfg.Tiers), ", "))
		}
	}
	return r, nil
}

func buildProvider(name string, pc config.Provider, getenv func(string) string, opts []RouterOption) (Provider, error) {
	kind := pc.Kind
	if kind == "" {
		kind = name
	}
	def, ok := kindDefaults[kind]
	if !ok {
		return nil, fmt.Errorf("models.providers.%s: unknown kind %q (want anthropic or openai)", name, pc.Kind)
	}
	var o Options
	for _, opt := range opts {
		opt(&o)
	}
	o.BaseURL = pc.BaseURL
	if o.BaseURL == "" {
		o.BaseURL = getenv(def.baseURLEnv)
	}
	o.APIKeyEnv = def.keyEnv
	if pc.APIKeyEnv != "" {
		o.APIKeyEnv = pc.APIKeyEnv
	}
	o.APIKey = pc.APIKey
	if o.APIKey == "" {
		o.APIKey = getenv(o.APIKeyEnv)
	}
	var err error
	if o.Timeout, err = parseDuration(pc.Timeout); err != nil {
		return nil, fmt.Errorf("models.providers.%s.timeout: %w", name, err)
	}
	if o.StallTimeout, err = parseDuration(pc.StallTimeout); err != nil {
		return nil, fmt.Errorf("models.providers.%s.stall_timeout: %w", name, err)
	}
	if pc.MaxAttempts < 0 {
		return nil, fmt.Errorf("models.providers.%s.max_attempts: %d is negative", name, pc.MaxAttempts)
	}
	if pc.MaxAttempts > 0 {
		o.MaxAttempts = pc.MaxAttempts
	}
	if kind == "anthropic" {
		return NewAnthropic(o), nil
	}
	return NewOpenAI(o), nil
}

func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration like 90s or 5m", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q must be positive", s)
	}
	return d, nil
}

// TierOf returns the tier a role uses: its configured tier, else standard.
func (r *Router) TierOf(role string) string {
	if t, ok := r.roles[role]; ok && t != "" {
		return t
	}
	return TierStandard
}

// ForRole returns the provider, model and tier for an agent role. Roles
// without a configured tier use the standard tier.
func (r *Router) ForRole(role string) (p Provider, modelName string, tier string, err error) {
	tier = r.TierOf(role)
	p, modelName, err = r.ForTier(tier)
	if err != nil {
		return nil, "", "", fmt.Errorf("role %s: %w", role, err)
	}
	return p, modelName, tier, nil
}

// ForTier returns the provider and model serving a tier.
func (r *Router) ForTier(tier string) (Provider, string, error) {
	t, ok := r.models.Tiers[tier]
	if !ok {
		return nil, "", fmt.Errorf("tier %q is not configured in models.tiers (have %s)", tier, strings.Join(r.Tiers(), ", "))
	}
	return r.providers[t.Provider], t.Model, nil
}

// Tier returns a tier's configuration.
func (r *Router) Tier(tier string) (config.Tier, bool) {
	t, ok := r.models.Tiers[tier]
	return t, ok
}

// Tiers lists the configured tiers: fast, standard, deep first, then any
// others by name.
func (r *Router) Tiers() []string {
	rank := map[string]int{TierFast: 0, TierStandard: 1, TierDeep: 2}
	names := sortedKeys(r.models.Tiers)
	sort.SliceStable(names, func(i, j int) bool {
		ri, oki := rank[names[i]]
		rj, okj := rank[names[j]]
		switch {
		case oki && okj:
			return ri < rj
		case oki != okj:
			return oki
		}
		return false
	})
	return names
}

// Price returns a model's price. A model is priced by its exact name, else
// by the longest priced name it starts with (so "claude-x-20250101" finds
// "claude-x"); ok is false when the model has no price.
func (r *Router) Price(modelName string) (config.Price, bool) {
	if p, ok := r.models.Prices[modelName]; ok {
		return p, true
	}
	best := ""
	for name := range r.models.Prices {
		if strings.HasPrefix(modelName, name) && len(name) > len(best) {
			best = name
		}
	}
	if best == "" {
		return config.Price{}, false
	}
	return r.models.Prices[best], true
}

// Cost is the USD cost of a call. Unpriced models cost 0 (use Price to
// tell). Cache prices left at zero fall back to the input price, which
// over-estimates rather than hides spending.
func (r *Router) Cost(modelName string, u Usage) float64 {
	p, ok := r.Price(modelName)
	if !ok {
		return 0
	}
	return CostOf(p, u)
}

// CostOf prices a usage with a price (USD per million tokens).
func CostOf(p config.Price, u Usage) float64 {
	cr, cw := p.CacheRead, p.CacheWrite
	if cr == 0 {
		cr = p.Input
	}
	if cw == 0 {
		cw = p.Input
	}
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*cr + float64(u.CacheWriteTokens)*cw) / 1e6
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
