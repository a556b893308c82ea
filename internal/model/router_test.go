package model

import (
	"context"
	"errors"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-run/sluice/internal/config"
)

func testModels() config.Models {
	return config.Models{
		Providers: map[string]config.Provider{
			"claude": {Kind: "anthropic", APIKeyEnv: "MY_CLAUDE_KEY", Timeout: "90s", StallTimeout: "20s", MaxAttempts: 3},
			"local":  {Kind: "openai", BaseURL: "http://127.0.0.1:11434/v1"},
		},
		Tiers: map[string]config.Tier{
			"fast":     {Provider: "local", Model: "qwen"},
			"standard": {Provider: "claude", Model: "claude-sonnet"},
			"deep":     {Provider: "claude", Model: "claude-opus"},
			"extra":    {Provider: "openai", Model: "gpt-x"},
		},
		Prices: map[string]config.Price{
			"claude-sonnet": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
			"qwen":          {Input: 1, Output: 2},
		},
	}
}

func TestRouter(t *testing.T) {
	env := map[string]string{"MY_CLAUDE_KEY": "k1", "OPENAI_API_KEY": "k2"}
	r, err := NewRouter(testModels(), map[string]string{"critic": "deep", "summariser": "fast"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Tiers(); !reflect.DeepEqual(got, []string{"fast", "standard", "deep", "extra"}) {
		t.Errorf("Tiers = %v", got)
	}
	p, m, tier, err := r.ForRole("critic")
	if err != nil || p.Name() != "anthropic" || m != "claude-opus" || tier != "deep" {
		t.Errorf("ForRole(critic) = %v %q %q %v", p, m, tier, err)
	}
	p, m, tier, err = r.ForRole("nobody-configured-this")
	if err != nil || p.Name() != "anthropic" || m != "claude-sonnet" || tier != "standard" {
		t.Errorf("ForRole(unknown) = %v %q %q %v", p, m, tier, err)
	}
	p, m, err = r.ForTier("fast")
	if err != nil || p.Name() != "openai" || m != "qwen" {
		t.Errorf("ForTier(fast) = %v %q %v", p, m, err)
	}
	if _, _, err := r.ForTier("turbo"); err == nil || !strings.Contains(err.Error(), "turbo") {
		t.Errorf("ForTier(turbo) err = %v", err)
	}

	claude := r.providers["claude"].(*anthropicProvider).o
	if claude.APIKey != "k1" || claude.APIKeyEnv != "MY_CLAUDE_KEY" || claude.Timeout != 90*time.Second || claude.StallTimeout != 20*time.Second || claude.MaxAttempts != 3 {
		t.Errorf("claude options = %+v", claude)
	}
	local := r.providers["local"].(*openaiProvider)
	if local.o.BaseURL != "http://127.0.0.1:11434/v1" || local.official || local.o.APIKey != "k2" {
		t.Errorf("local options = %+v official=%v", local.o, local.official)
	}
	if !r.providers["openai"].(*openaiProvider).official {
		t.Error("the openai provider without a base URL should be the official endpoint")
	}
}

func TestRouterEnvBaseURL(t *testing.T) {
	m := config.Models{Tiers: map[string]config.Tier{"standard": {Provider: "anthropic", Model: "c"}}}
	env := map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/", "ANTHROPIC_API_KEY": "k"}
	r, err := NewRouter(m, nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	o := r.providers["anthropic"].(*anthropicProvider).o
	if o.BaseURL != "http://127.0.0.1:9/" || o.APIKey != "k" {
		t.Errorf("options = %+v", o)
	}
}

func TestRouterErrors(t *testing.T) {
	cases := []struct {
		mutate func(*config.Models, map[string]string)
		want   string
	}{
		{func(m *config.Models, _ map[string]string) { m.Tiers = nil }, "models.tiers is empty"},
		{func(m *config.Models, _ map[string]string) {
			m.Tiers["fast"] = config.Tier{Provider: "nowhere", Model: "x"}
		}, `provider "nowhere" is not in models.providers`},
		{func(m *config.Models, _ map[string]string) { m.Tiers["fast"] = config.Tier{Provider: "local"} }, "models.tiers.fast: no model"},
		{func(m *config.Models, _ map[string]string) { m.Providers["local"] = config.Provider{Kind: "gemini"} }, `unknown kind "gemini"`},
		{func(m *config.Models, _ map[string]string) {
			m.Providers["claude"] = config.Provider{Kind: "anthropic", Timeout: "soon"}
		}, "models.providers.claude.timeout"},
		{func(_ *config.Models, roles map[string]string) { roles["critic"] = "ultra" }, `roles.critic: tier "ultra"`},
	}
	for _, tc := range cases {
		m := testModels()
		roles := map[string]string{}
		tc.mutate(&m, roles)
		_, err := NewRouter(m, roles, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

func TestCost(t *testing.T) {
	r, err := NewRouter(testModels(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	u := Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 2_000_000, CacheWriteTokens: 400_000}
	want := 3 + 1.5 + 0.6 + 1.5
	if got := r.Cost("claude-sonnet", u); math.Abs(got-want) > 1e-9 {
		t.Errorf("Cost = %v, want %v", got, want)
	}
	// A dated model name finds its family's price.
	if got := r.Cost("claude-sonnet-20260101", u); math.Abs(got-want) > 1e-9 {
		t.Errorf("Cost(dated) = %v, want %v", got, want)
	}
	// Unset cache prices fall back to the input price.
	if got, want := r.Cost("qwen", u), 1+0.2+2+0.4; math.Abs(got-want) > 1e-9 {
		t.Errorf("Cost(qwen) = %v, want %v", got, want)
	}
	if _, ok := r.Price("claude-opus"); ok {
		t.Error("claude-opus has no price but Price says ok")
	}
	if got := r.Cost("claude-opus", u); got != 0 {
		t.Errorf("Cost(unpriced) = %v", got)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(30 * time.Second).Format(http.TimeFormat)}}, 30 * time.Second},
		{http.Header{"Retry-After": {now.Add(-30 * time.Second).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{nil, 0},
	}
	for _, tc := range cases {
		if got := parseRetryAfter(tc.h, now); got != tc.want {
			t.Errorf("parseRetryAfter(%v) = %v, want %v", tc.h, got, tc.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	lo := func() float64 { return 0 }
	hi := func() float64 { return 0.999999 }
	for n := 1; n <= 8; n++ {
		full := min(backoffBase<<(n-1), backoffMax)
		if got := backoff(n, lo); got != full/2 {
			t.Errorf("backoff(%d, 0) = %v, want %v", n, got, full/2)
		}
		if got := backoff(n, hi); got <= full/2 || got > full {
			t.Errorf("backoff(%d, 1) = %v, want in (%v, %v]", n, got, full/2, full)
		}
	}
	if got := backoff(60, lo); got != backoffMax/2 {
		t.Errorf("backoff overflows: %v", got)
	}
}

func TestRetryAfterBeyondDeadlineFailsAtOnce(t *testing.T) {
	o := Options{Timeout: time.Second, Sleep: func(context.Context, time.Duration) error {
		t.Error("slept although the wait passes the deadline")
		return nil
	}}.withDefaults()
	calls := 0
	_, err := call(context.Background(), &o, "anthropic", "m", nil, func(context.Context) (*Response, error) {
		calls++
		return nil, errors.New("boom")
	}, func(error) failure { return failure{retry: true, status: 429, retryAfter: 10 * time.Second} })
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 429 || calls != 1 || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("err = %v after %d calls", err, calls)
	}
}
