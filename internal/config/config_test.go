package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

type env map[string]string

func (e env) get(k string) string { return e[k] }

// setup writes the user and project config files (skipped when empty) and
// returns the project root and an environment pointing at the user dir.
func setup(t *testing.T, user, project string) (root string, e env) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "proj")
	xdg := filepath.Join(base, "xdg")
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(root, 0o755)
	if user != "" {
		write(filepath.Join(xdg, "sluice", "config.yaml"), user)
	}
	if project != "" {
		write(filepath.Join(root, ".sluice", "config.yaml"), project)
	}
	return root, env{"XDG_CONFIG_HOME": xdg, "HOME": filepath.Join(base, "home")}
}

func TestLoadDefaults(t *testing.T) {
	root, e := setup(t, "", "")
	cfg, src, err := Load(root, e.get)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg, Defaults()) {
		t.Errorf("Load without files = %+v, want the defaults", cfg)
	}
	for _, k := range []string{"run.jobs", "run.schedule", "models.tiers.deep.model", "roles.planner", "budgets.tokens"} {
		if got := src.Of(k); got != "default" {
			t.Errorf("source of %s = %q, want default", k, got)
		}
	}
	if src.Of("run") != "" || src.Of("no.such") != "" {
		t.Error("non-leaf or unknown keys have a source")
	}
	if err := errors.Join(validate(Defaults(), src)...); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}

func TestLoadLayers(t *testing.T) {
	user := `# user config
run:
  jobs: 4
  depth: full
models:
  providers:
    anthropic:
      base_url: https://user.example
      timeout: 2m
`
	project := `run:
  jobs: 8
models:
  tiers:
    fast:
      model: claude-sonnet-4-5
  providers:
    local:
      kind: openai
      base_url: http://127.0.0.1:11434/v1
roles:
  executor: fast
capabilities:
  enabled: [tdd]
  config:
    tdd:
      strict: true
`
	root, e := setup(t, user, project)
	e["SLUICE_RUN_SCHEDULE"] = "waves"
	e["SLUICE_BUDGETS_USD"] = "2.5"
	cfg, src, err := Load(root, e.get)
	if err != nil {
		t.Fatal(err)
	}
	userFile := filepath.Join(e["XDG_CONFIG_HOME"], "sluice", "config.yaml")
	projFile := filepath.Join(root, ".sluice", "config.yaml")
	tests := []struct {
		key  string
		got  any
		want any
		src  string
	}{
		{"run.jobs", cfg.Run.Jobs, 8, projFile + ":2"},
		{"run.depth", cfg.Run.Depth, "full", userFile + ":4"},
		{"run.schedule", cfg.Run.Schedule, "waves", "$SLUICE_RUN_SCHEDULE"},
		{"budgets.usd", cfg.Budgets.USD, 2.5, "$SLUICE_BUDGETS_USD"},
		{"run.task_retries", cfg.Run.TaskRetries, 2, "default"},
		{"models.providers.anthropic.base_url", cfg.Models.Providers["anthropic"].BaseURL, "https://user.example", userFile + ":8"},
		// Overriding one field of a provider keeps the others.
		{"models.providers.anthropic.kind", cfg.Models.Providers["anthropic"].Kind, "anthropic", "default"},
		{"models.providers.anthropic.api_key_env", cfg.Models.Providers["anthropic"].APIKeyEnv, "ANTHROPIC_API_KEY", "default"},
		{"models.tiers.fast.model", cfg.Models.Tiers["fast"].Model, "claude-sonnet-4-5", projFile + ":6"},
		{"models.tiers.fast.provider", cfg.Models.Tiers["fast"].Provider, "anthropic", "default"},
		{"models.providers.local.kind", cfg.Models.Providers["local"].Kind, "openai", projFile + ":9"},
		{"roles.executor", cfg.Roles["executor"], "fast", projFile + ":12"},
		{"roles.planner", cfg.Roles["planner"], "deep", "default"},
		{"capabilities.enabled", cfg.Capabilities.Enabled, []string{"tdd"}, projFile + ":14"},
		{"capabilities.config.tdd.strict", cfg.Capabilities.Config["tdd"]["strict"], true, projFile + ":17"},
	}
	for _, tt := range tests {
		if !reflect.DeepEqual(tt.got, tt.want) {
			t.Errorf("%s = %#v, want %#v", tt.key, tt.got, tt.want)
		}
		if got := src.Of(tt.key); got != tt.src {
			t.Errorf("source of %s = %q, want %q", tt.key, got, tt.src)
		}
	}
}

func TestLoadEnvBaseURL(t *testing.T) {
	root, e := setup(t, "", "models:\n  providers:\n    openai:\n      base_url: http://file\n")
	e["OPENAI_BASE_URL"] = "http://env"
	e["ANTHROPIC_BASE_URL"] = "http://anthropic-env"
	cfg, src, err := Load(root, e.get)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Models.Providers["openai"].BaseURL != "http://env" || src.Of("models.providers.openai.base_url") != "$OPENAI_BASE_URL" {
		t.Errorf("openai base_url = %q from %s", cfg.Models.Providers["openai"].BaseURL, src.Of("models.providers.openai.base_url"))
	}
	if cfg.Models.Providers["anthropic"].BaseURL != "http://anthropic-env" {
		t.Errorf("anthropic base_url = %q", cfg.Models.Providers["anthropic"].BaseURL)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		user    string
		project string
		env     env
		want    []string // substrings, one per expected error
	}{
		{
			name:    "unknown key with a suggestion",
			project: "run:\n  jbos: 3\n",
			want:    []string{`PROJ:2: unknown key "jbos" in run; did you mean "jobs"?`},
		},
		{
			name:    "unknown top-level key",
			project: "modles: {}\n",
			want:    []string{`PROJ:1: unknown key "modles" at the top level; did you mean "models"?`},
		},
		{
			name: "wrong types, every one reported",
			user: "run:\n  jobs: many\nbudgets:\n  usd: [1]\n",
			want: []string{`USER:2: run.jobs: want a whole number, got "many"`, `USER:4: budgets.usd: want a number`},
		},
		{
			name:    "section that is not a mapping",
			project: "run: fast\n",
			want:    []string{`PROJ:1: run must be a mapping of keys, not the value "fast"`},
		},
		{
			name:    "duplicate key",
			project: "run:\n  jobs: 1\n  jobs: 2\n",
			want:    []string{`PROJ:3: run.jobs: set twice (first on line 2)`},
		},
		{
			name:    "YAML syntax error",
			project: "run:\n  jobs: 1\n bad: [\n",
			want:    []string{"PROJ:2: invalid YAML: did not find expected key"},
		},
		{
			name:    "schedule not dag or waves",
			project: "# comment\nrun:\n  schedule: parallel\n",
			want:    []string{`PROJ:3: run.schedule: "parallel" is not valid; set it to dag or waves`},
		},
		{
			name:    "tier naming an unknown provider",
			project: "models:\n  tiers:\n    fast:\n      provider: ollama\n",
			want:    []string{`PROJ:4: models.tiers.fast.provider: names unknown provider "ollama"; use one of anthropic, openai or add it under models.providers`},
		},
		{
			name: "role naming an unknown tier, bad duration, bad provider kind",
			user: "roles:\n  critic: huge\nrun:\n  gate_timeout: ten minutes\nmodels:\n  providers:\n    x:\n      kind: grpc\n",
			want: []string{
				`USER:8: models.providers.x.kind: "grpc" is not valid; set it to anthropic or openai`,
				`USER:2: roles.critic: names unknown tier "huge"`,
				`USER:4: run.gate_timeout: "ten minutes" is not a duration`,
			},
		},
		{
			name: "bad environment value",
			env:  env{"SLUICE_RUN_JOBS": "lots"},
			want: []string{`environment $SLUICE_RUN_JOBS: run.jobs: want a whole number, got "lots"; fix or unset SLUICE_RUN_JOBS`},
		},
		{
			name: "invalid value from the environment is located there",
			env:  env{"SLUICE_RUN_DEPTH": "deep"},
			want: []string{`environment $SLUICE_RUN_DEPTH: run.depth: "deep" is not valid`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, e := setup(t, tt.user, tt.project)
			for k, v := range tt.env {
				e[k] = v
			}
			cfg, src, err := Load(root, e.get)
			if err == nil {
				t.Fatalf("Load succeeded: %+v", cfg)
			}
			if cfg != nil || src != nil || !errors.Is(err, ErrInvalid) {
				t.Errorf("Load = %v, %v, %v; want nil, nil, ErrInvalid", cfg, src, err)
			}
			msg := strings.NewReplacer(
				filepath.Join(root, ".sluice", "config.yaml"), "PROJ",
				filepath.Join(e["XDG_CONFIG_HOME"], "sluice", "config.yaml"), "USER",
			).Replace(err.Error())
			lines := strings.Split(msg, "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("errors:\n%s\nwant %d", msg, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("error %d = %q, want it to contain %q", i, lines[i], w)
				}
			}
		})
	}
}

func TestLoadFileIsDirectory(t *testing.T) {
	root, e := setup(t, "", "")
	if err := os.MkdirAll(filepath.Join(root, ".sluice", "config.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, _, err := Load(root, e.get)
	if err == nil || !strings.Contains(err.Error(), "config.yaml: is a directory; the configuration must be a YAML file") {
		t.Fatalf("err = %v", err)
	}
}

func TestLoadEmptyAndNullFiles(t *testing.T) {
	root, e := setup(t, "# nothing yet\n", "run:\n  jobs:\n")
	cfg, src, err := Load(root, e.get)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Run.Jobs != 0 || src.Of("run.jobs") != "default" {
		t.Errorf("jobs %d from %s; a null value sets nothing", cfg.Run.Jobs, src.Of("run.jobs"))
	}
}

func TestUserDir(t *testing.T) {
	tests := []struct {
		env  env
		want string
	}{
		{env{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/x/sluice"},
		{env{"XDG_CONFIG_HOME": "relative", "HOME": "/h"}, "/h/.config/sluice"},
		{env{"HOME": "/h"}, "/h/.config/sluice"},
		{env{}, ""},
	}
	for _, tt := range tests {
		if got := UserDir(tt.env.get); got != tt.want {
			t.Errorf("UserDir(%v) = %q, want %q", tt.env, got, tt.want)
		}
	}
}

func TestMasking(t *testing.T) {
	project := `models:
  providers:
    anthropic:
      api_key: sk-ant-very-secret
capabilities:
  config:
    jira:
      api_token: abc123
      project: SLU
`
	root, e := setup(t, "", project)
	cfg, src, err := Load(root, e.get)
	if err != nil {
		t.Fatal(err)
	}
	settings := Settings(cfg, src)
	byKey := map[string]Setting{}
	for _, s := range settings {
		byKey[s.Key] = s
		if strings.Contains(s.Value, "sk-ant") || strings.Contains(s.Value, "abc123") {
			t.Errorf("secret printed: %+v", s)
		}
	}
	if s := byKey["models.providers.anthropic.api_key"]; s.Value != Mask || s.Source.Line != 4 {
		t.Errorf("api_key setting = %+v", s)
	}
	if s := byKey["capabilities.config.jira.project"]; s.Value != "SLU" {
		t.Errorf("non-secret capability value = %+v", s)
	}
	if s := byKey["models.providers.anthropic.api_key_env"]; s.Value != "ANTHROPIC_API_KEY" {
		t.Errorf("api_key_env = %+v; the variable's name is not a secret", s)
	}
	if s := byKey["instructions.token_budget"]; s.Value != "8000" {
		t.Errorf("token_budget = %+v; a token count is not a secret", s)
	}
	if _, ok := byKey["run.jobs"]; !ok {
		t.Error("run.jobs (zero) not listed")
	}
	if _, ok := byKey["models.providers.openai.timeout"]; ok {
		t.Error("empty map-held value listed")
	}
	m := cfg.Masked()
	if m.Models.Providers["anthropic"].APIKey != Mask || cfg.Models.Providers["anthropic"].APIKey != "sk-ant-very-secret" {
		t.Error("Masked did not mask, or changed the original")
	}
	if m.Capabilities.Config["jira"]["api_token"] != Mask || cfg.Capabilities.Config["jira"]["api_token"] != "abc123" {
		t.Error("Masked capability config wrong, or changed the original")
	}
}

func TestEnvVars(t *testing.T) {
	got := map[string]string{}
	for _, v := range EnvVars() {
		got[v.Name] = v.Key
	}
	for name, key := range map[string]string{
		"SLUICE_RUN_JOBS":                     "run.jobs",
		"SLUICE_BUDGETS_TURNS_PER_DELEGATION": "budgets.turns_per_delegation",
		"SLUICE_BACKEND_KIND":                 "backend.kind",
		"SLUICE_INSTRUCTIONS_TOKEN_BUDGET":    "instructions.token_budget",
		"ANTHROPIC_BASE_URL":                  "models.providers.anthropic.base_url",
	} {
		if got[name] != key {
			t.Errorf("%s → %q, want %q", name, got[name], key)
		}
	}
	if len(got) != 17 {
		t.Errorf("%d variables: %v", len(got), got)
	}
}
