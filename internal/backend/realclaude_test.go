package backend

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sluice-run/sluice/internal/agentrt"
	"github.com/sluice-run/sluice/internal/model/fake"
)

// TestRealClaudeCodeAgainstFakeServer runs the installed Claude Code
// against the fake model server (ANTHROPIC_BASE_URL on 127.0.0.1). It is
// skipped where claude is not installed.
func TestRealClaudeCodeAgainstFakeServer(t *testing.T) {
	bin, err := exec.LookPath("claude")
	if err != nil {
		t.Skip("claude (Claude Code) is not on PATH; npm install -g @anthropic-ai/claude-code to run this test")
	}
	// Every request Claude Code makes (the task, and any side requests
	// such as a quota probe or a title) gets the same final answer.
	script, err := fake.ParseScript([]byte(`
turns:
  - name: answer
    repeat: true
    response:
      usage: {input: 120, output: 30}
      text: "Nothing to change.\n\nRESULT\n` + "```json" + `\n{\"summary\": \"looked around\", \"files_modified\": []}\n` + "```" + `"
`))
	if err != nil {
		t.Fatal(err)
	}
	srv := fake.NewServer(script)
	hs := httptest.NewServer(srv)
	defer hs.Close()

	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "CLAUDE") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"HOME="+t.TempDir(),
		"ANTHROPIC_BASE_URL="+hs.URL,
		"ANTHROPIC_API_KEY=sk-ant-api03-fake-key-for-tests",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sp := spec()
	sp.MaxTurns = 3
	res, err := ClaudeCode{Binary: bin, Env: env}.Run(ctx, t.TempDir(), sp, agentrt.Hooks{}, nil)
	if err != nil {
		t.Fatalf("%v (the fake server saw %d requests)", err, len(srv.Requests()))
	}
	if string(res.Output) != `{"summary":"looked around","files_modified":[]}` {
		t.Errorf("output = %s", res.Output)
	}
	var sawTask bool
	for _, r := range srv.Requests() {
		body := string(r.Body)
		if strings.Contains(body, "greet the world") && strings.Contains(body, "Project rule: gofmt everything.") {
			sawTask = true
		}
	}
	if !sawTask {
		t.Errorf("no request carried the delegation and the appended system prompt (%d requests)", len(srv.Requests()))
	}
	// The result event sums the usage of every request the fake answered.
	if res.Usage.InputTokens < 120 || res.Usage.OutputTokens < 30 {
		t.Errorf("usage = %+v, want at least the scripted 120 in / 30 out", res.Usage)
	}
}
