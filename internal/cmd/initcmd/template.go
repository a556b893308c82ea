package initcmd

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-run/sluice/internal/config"
)

// configTemplate is the .sluice/config.yaml that init writes. Top-level
// sections are present and empty; every key under them is commented out and
// shows its built-in default, so the user's own configuration and the
// defaults apply until a person uncomments a line. Lines are commented as
// "#key" / "#  key" (no space after the mark) and documentation as "# text",
// so uncommenting is deleting the "#".
const configTemplate = `# sluice project configuration.
#
# Every setting is commented out and shows its built-in default. To change one,
# delete the "#" in front of it (and in front of the map keys above it, such as
# a provider's name). Values here override your user configuration
# (~/.config/sluice/config.yaml) and the defaults.
# After changing the gates or run sections, run ` + "`sluice init`" + ` again: it writes a
# new immutable gate grid (.sluice/grid.vN.yaml) when the gates changed.

# models: which provider and model serve each tier, and what models cost.
models:
# providers: model API endpoints, by a name you choose.
#  providers:
{{- range $name, $p := .Models.Providers}}
#    {{y $name}}:
#      # kind: the wire protocol, anthropic or openai (any OpenAI-compatible
#      # server: OpenAI, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter).
#      kind: {{y $p.Kind}}
#      # base_url: the API endpoint; empty means the provider's own.
#      base_url: {{y $p.BaseURL}}
#      # api_key_env: the environment variable that holds the API key.
#      api_key_env: {{y $p.APIKeyEnv}}
#      # api_key: a literal key. Discouraged: prefer api_key_env.
#      api_key: ""
#      # timeout: the longest one model call may take (a Go duration).
#      timeout: {{y $p.Timeout}}
#      # stall_timeout: give up on a call that sends no bytes for this long.
#      stall_timeout: {{y $p.StallTimeout}}
#      # max_attempts: tries per call, with backoff honouring retry-after.
#      max_attempts: {{y $p.MaxAttempts}}
{{- end}}
# tiers: fast, standard and deep, each served by a provider's model.
#  tiers:
{{- range $name, $t := .Models.Tiers}}
#    {{y $name}}:
#      provider: {{y $t.Provider}}
#      model: {{y $t.Model}}
#      # context_window: the model's window in tokens; compaction starts near it.
#      context_window: {{y $t.ContextWindow}}
#      # max_tokens: the most output tokens per response.
#      max_tokens: {{y $t.MaxTokens}}
{{- end}}
# prices: USD per million tokens, by model, for the cost budget and report.
#  prices:
{{- range $name, $p := .Models.Prices}}
#    {{y $name}}:
#      input: {{y $p.Input}}
#      output: {{y $p.Output}}
#      cache_read: {{y $p.CacheRead}}
#      cache_write: {{y $p.CacheWrite}}
{{- end}}

# roles: the tier each agent role runs on (fast, standard or deep).
roles:
{{- range $role, $tier := .Roles}}
#  {{$role}}: {{y $tier}}
{{- end}}

# budgets: shared by every agent of a run; 0 or empty means unlimited. When a
# budget is spent, no new work starts and the run pauses with its reason.
budgets:
# tokens: input plus output tokens.
#  tokens: {{y .Budgets.Tokens}}
# usd: cost in US dollars, from the prices table.
#  usd: {{y .Budgets.USD}}
# timeout: wall time of the whole run (a Go duration such as 2h).
#  timeout: {{y .Budgets.Timeout}}
# turns_per_delegation: model turns one agent may take for one delegation.
#  turns_per_delegation: {{y .Budgets.TurnsPerDelegation}}

# run: the loop's knobs.
run:
# jobs: how many tasks run at once, each in its own git worktree; 0 means
# the number of CPUs.
#  jobs: {{y .Run.Jobs}}
# schedule: dag (a task starts when its dependencies are merged) or waves
# (barriers between waves of independent tasks).
#  schedule: {{y .Run.Schedule}}
# depth: the default review depth: lightweight (no adversarial review),
# standard (a critic attacks the plan, a code-reviewer each diff) or full
# (standard plus the full test suite on every task).
#  depth: {{y .Run.Depth}}
# complexity: research passes: simple (1), medium (2) or complex (3).
#  complexity: {{y .Run.Complexity}}
# critic_max_iterations: plan revisions the critic may ask for (at most 3).
#  critic_max_iterations: {{y .Run.CriticMaxIterations}}
# task_retries: fresh-context retries of a failed task (at most 2).
#  task_retries: {{y .Run.TaskRetries}}
# on_critic_exhausted: when the critic still objects after the last
# iteration: ask (stop and ask you) or proceed (record the objections as
# accepted risks and execute).
#  on_critic_exhausted: {{y .Run.OnCriticExhausted}}
# gate_timeout: the longest one quality-gate command may run (a Go duration).
#  gate_timeout: {{y .Run.GateTimeout}}

# backend: how agents run: api (sluice's own tool loop), claude-code or codex
# (a coding-agent CLI started in the task's worktree).
backend:
#  kind: {{y .Backend.Kind}}
# fallback: the backend used when kind's CLI is not installed.
#  fallback: {{y .Backend.Fallback}}

# gates: the project's quality gates. The fixed clauses of the role contracts
# (format, lint, typecheck and test on every task; the full suite on the
# merged branch) cannot be removed or weakened here; a project may add its own.
gates:
# commands: override a resolved quality-gate command (format, lint, typecheck,
# test, standards). {files} becomes the task's changed files, shell-quoted; a
# command without {files} runs once on the whole tree. An empty command for a
# gate a fixed clause runs is refused. ` + "`sluice resolve`" + ` shows the resolved ones.
# For example:
#  commands:
#    lint: golangci-lint run
# extra: clauses the project adds to an arrow (analyst->architect,
# architect->implementer, implementer->integrator, integrator->done).
# kind is command (passes when the command exits 0) or attested (the
# arrow's critic or verifier must confirm text, with evidence; only on
# architect->implementer and implementer->integrator). depth is the least
# review depth at which the clause applies (default lightweight: always).
# For example:
#  extra:
#    - arrow: implementer->integrator
#      id: migrations-reversible
#      kind: command
#      command: make check-migrations
#      depth: standard
#    - arrow: implementer->integrator
#      id: no-new-dependencies
#      kind: attested
#      text: The change adds no new third-party dependency

# instructions: project instructions (CLAUDE.md, AGENTS.md) given to every agent.
instructions:
# token_budget: the most tokens of instructions included; the rest is cut.
#  token_budget: {{y .Instructions.TokenBudget}}

# capabilities: plug-in capabilities that contribute to roles.
capabilities:
# enabled: capability names to turn on.
#  enabled: {{y .Capabilities.Enabled}}
# config: per-capability settings, by capability name.
#  config: {}

# mcp: tools of the MCP servers in .mcp.json (Claude Code's format, stdio).
mcp:
# roles: agent roles offered the servers' tools, e.g. roles: [executor, researcher];
# none by default.
# servers: which servers of .mcp.json to start, e.g. servers: [github]; all by default.
`

// renderConfig renders the commented configuration with defaults' values.
func renderConfig(defaults *config.Config) ([]byte, error) {
	t, err := template.New("config.yaml").Funcs(template.FuncMap{"y": yamlScalar}).Parse(configTemplate)
	if err != nil {
		return nil, fmt.Errorf("parse config template: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, defaults); err != nil {
		return nil, fmt.Errorf("render config template: %w", err)
	}
	return b.Bytes(), nil
}

// yamlScalar renders v as one line of YAML flow style, quoted where YAML
// needs it.
func yamlScalar(v any) (string, error) {
	if l, ok := v.([]string); ok && l == nil {
		return "[]", nil
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	node := &yaml.Node{}
	if err := node.Encode(v); err != nil {
		return "", fmt.Errorf("render %v: %w", v, err)
	}
	setFlow(node)
	if err := enc.Encode(node); err != nil {
		return "", fmt.Errorf("render %v: %w", v, err)
	}
	if err := enc.Close(); err != nil {
		return "", fmt.Errorf("render %v: %w", v, err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func setFlow(n *yaml.Node) {
	if n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode {
		n.Style = yaml.FlowStyle
	}
	for _, c := range n.Content {
		setFlow(c)
	}
}

// uncomment turns the rendered configuration into the YAML it documents:
// every "#key" and "#  key" line loses its "#"; documentation ("# text")
// stays a comment. Tests use it to check the template against the Config
// type and the defaults.
func uncomment(src []byte) []byte {
	lines := strings.SplitAfter(string(src), "\n")
	for i, l := range lines {
		setting := strings.HasPrefix(l, "#  ") ||
			(len(l) > 1 && l[0] == '#' && l[1] != ' ' && l[1] != '\n')
		if setting {
			lines[i] = l[1:]
		}
	}
	return []byte(strings.Join(lines, ""))
}
