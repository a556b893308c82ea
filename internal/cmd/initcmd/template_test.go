package initcmd

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-run/sluice/internal/config"
)

// sample sets every field the template renders, so a key missing from the
// template, or rendered under the wrong name, shows up as a difference.
func sample() *config.Config {
	return &config.Config{
		Models: config.Models{
			Providers: map[string]config.Provider{
				"anthropic": {Kind: "anthropic", BaseURL: "https://api.anthropic.com", APIKeyEnv: "ANTHROPIC_API_KEY",
					Timeout: "10m", StallTimeout: "90s", MaxAttempts: 4},
				"local": {Kind: "openai", BaseURL: "http://127.0.0.1:11434/v1", APIKeyEnv: "OLLAMA_KEY", Timeout: "1h", StallTimeout: "5m", MaxAttempts: 2},
			},
			Tiers: map[string]config.Tier{
				"fast": {Provider: "anthropic", Model: "claude-haiku-4-5", ContextWindow: 200000, MaxTokens: 8192},
				"deep": {Provider: "anthropic", Model: "claude-opus-4-1", ContextWindow: 200000, MaxTokens: 32000},
			},
			Prices: map[string]config.Price{
				"claude-haiku-4-5": {Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25},
			},
		},
		Roles:        map[string]string{"critic": "deep", "executor": "standard"},
		Budgets:      config.Budgets{Tokens: 5000000, USD: 12.5, Timeout: "2h", TurnsPerDelegation: 60},
		Run:          config.Run{Jobs: 4, Schedule: "dag", Depth: "standard", Complexity: "medium", CriticMaxIterations: 3, TaskRetries: 2, OnCriticExhausted: "ask", GateTimeout: "10m"},
		Backend:      config.Backend{Kind: "api", Fallback: "api"},
		Instructions: config.Instructions{TokenBudget: 8000},
		Capabilities: config.Capabilities{Enabled: []string{"docs", "security review"}},
	}
}

func decodeStrict(t *testing.T, src []byte) *config.Config {
	t.Helper()
	var c config.Config
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("decode:\n%s\nerror: %v", src, err)
	}
	return &c
}

func TestTemplateDocumentsEveryKey(t *testing.T) {
	want := sample()
	out, err := renderConfig(want)
	if err != nil {
		t.Fatal(err)
	}
	got := decodeStrict(t, uncomment(out))
	if len(got.Gates.Extra) != 2 || got.Gates.Extra[0].ID != "migrations-reversible" || got.Gates.Commands["lint"] == "" {
		t.Errorf("gates examples = %+v", got.Gates)
	}
	got.Gates = config.Gates{}
	if len(got.Capabilities.Config) != 0 {
		t.Errorf("capabilities.config = %v", got.Capabilities.Config)
	}
	got.Capabilities.Config = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("uncommented template decodes to\n%+v\nwant\n%+v", got, want)
	}
}

func TestTemplateShowsDefaults(t *testing.T) {
	out, err := renderConfig(config.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	got := decodeStrict(t, uncomment(out))
	got.Gates = config.Gates{}
	got.Capabilities.Config = nil
	if len(got.Capabilities.Enabled) == 0 {
		got.Capabilities.Enabled = nil // rendered as []
	}
	if !reflect.DeepEqual(got, config.Defaults()) {
		t.Errorf("uncommented template decodes to\n%+v\nwant the defaults\n%+v", got, config.Defaults())
	}
}

func TestTemplateAsWrittenSetsNothing(t *testing.T) {
	out, err := renderConfig(sample())
	if err != nil {
		t.Fatal(err)
	}
	got := decodeStrict(t, out)
	if !reflect.DeepEqual(got, &config.Config{}) {
		t.Errorf("the commented file sets values: %+v", got)
	}
	for i, l := range strings.Split(string(out), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") && !strings.HasSuffix(l, ":") {
			t.Errorf("line %d %q is neither a comment nor a section", i+1, l)
		}
	}
}
