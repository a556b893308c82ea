package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/sluice-run/sluice/internal/config"
	"github.com/sluice-run/sluice/internal/model"
)

// ErrNoModel means no model could be found to drive a run.
var ErrNoModel = errors.New(`no model is configured. Set ANTHROPIC_API_KEY; or OPENAI_API_KEY (with OPENAI_BASE_URL for any OpenAI-compatible server); or configure models and tiers in .sluice/config.yaml (see "sluice config"); or start an Ollama server on localhost:11434. To see a whole run offline, try "sluice demo"`)

// pickModels chooses what drives the run: the configuration when it names
// models, else the first of Anthropic, OpenAI-compatible and a local Ollama
// server that the environment makes available.
func pickModels(ctx context.Context, cfg *config.Config, getenv func(string) string) (*model.Router, string, error) {
	configured := !reflect.DeepEqual(cfg.Models, config.Defaults().Models)
	switch {
	case configured:
		r, err := model.NewRouter(cfg.Models, cfg.Roles, getenv)
		return r, describeTiers(cfg.Models), err
	case getenv("ANTHROPIC_API_KEY") != "":
		r, err := model.NewRouter(cfg.Models, cfg.Roles, getenv)
		return r, describeTiers(cfg.Models) + " (ANTHROPIC_API_KEY)", err
	case getenv("OPENAI_API_KEY") != "" || getenv("OPENAI_BASE_URL") != "":
		name := getenv("SLUICE_OPENAI_MODEL")
		if name == "" {
			name = "gpt-4.1"
		}
		r, err := model.NewRouter(singleTier(cfg, "openai", getenv("OPENAI_BASE_URL"), "OPENAI_API_KEY", name), cfg.Roles, getenv)
		return r, fmt.Sprintf("OpenAI-compatible %s (OPENAI_API_KEY/OPENAI_BASE_URL)", name), err
	}
	if name, ok := ollamaModel(ctx); ok {
		r, err := model.NewRouter(singleTier(cfg, "ollama", "http://localhost:11434/v1", "", name), cfg.Roles, getenv)
		return r, "Ollama on localhost:11434 (" + name + ")", err
	}
	return nil, "", ErrNoModel
}

// singleTier serves every tier from one OpenAI-compatible model.
func singleTier(cfg *config.Config, provider, baseURL, keyEnv, modelName string) config.Models {
	m := config.Models{
		Providers: map[string]config.Provider{provider: {Kind: "openai", BaseURL: baseURL, APIKeyEnv: keyEnv}},
		Tiers:     map[string]config.Tier{},
		Prices:    cfg.Models.Prices,
	}
	for _, tier := range []string{"fast", "standard", "deep"} {
		m.Tiers[tier] = config.Tier{Provider: provider, Model: modelName, ContextWindow: 128000}
	}
	return m
}

// ollamaModel asks a local Ollama server for its first model.
func ollamaModel(ctx context.Context) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://localhost:11434/api/tags", nil)
	if err != nil {
		return "", false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	var tags struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&tags) != nil || len(tags.Models) == 0 {
		return "", false
	}
	return tags.Models[0].Name, true
}

// describeTiers names the provider and model of each tier.
func describeTiers(m config.Models) string {
	var parts []string
	for _, tier := range []string{"fast", "standard", "deep"} {
		if t, ok := m.Tiers[tier]; ok {
			parts = append(parts, fmt.Sprintf("%s=%s/%s", tier, t.Provider, t.Model))
		}
	}
	return strings.Join(parts, " ")
}
