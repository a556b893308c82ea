package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-run/sluice/internal/agentrt"
	"github.com/sluice-run/sluice/internal/model"
)

const resultSchema = `{"type":"object","properties":{"summary":{"type":"string"},"files_modified":{"type":"array","items":{"type":"string"}}},"required":["summary","files_modified"]}`

// standinScript plays a CLI agent: invocation n records its arguments,
// stdin and working directory, then prints stream.n and exits with exit.n.
const standinScript = `#!/bin/sh
dir="$STANDIN_DIR"
n=$(cat "$dir/count" 2>/dev/null || echo 0)
n=$((n+1))
echo "$n" > "$dir/count"
for a in "$@"; do printf '%s\n' "$a"; done > "$dir/args.$n"
cat > "$dir/prompt.$n"
pwd > "$dir/cwd.$n"
[ -f "$dir/stderr.$n" ] && cat "$dir/stderr.$n" >&2
[ -f "$dir/sleep.$n" ] && { sleep 30 & echo $! > "$dir/child.$n"; wait; }
cat "$dir/stream.$n" 2>/dev/null
exit $(cat "$dir/exit.$n" 2>/dev/null || echo 0)
`

type standin struct {
	t      *testing.T
	bin    string // the script
	state  string // its recording directory
	work   string // the worktree it runs in
	env    []string
	binDir string
}

func newStandin(t *testing.T, name string) *standin {
	t.Helper()
	s := &standin{t: t, binDir: t.TempDir(), state: t.TempDir(), work: t.TempDir()}
	s.bin = filepath.Join(s.binDir, name)
	if err := os.WriteFile(s.bin, []byte(standinScript), 0o755); err != nil {
		t.Fatal(err)
	}
	s.env = append(os.Environ(), "STANDIN_DIR="+s.state)
	return s
}

// play makes invocation n print a recorded stream from testdata.
func (s *standin) play(n int, testdata string) {
	s.t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", testdata))
	if err != nil {
		s.t.Fatal(err)
	}
	s.write(n, "stream", string(b))
}

func (s *standin) write(n int, what, content string) {
	s.t.Helper()
	if err := os.WriteFile(filepath.Join(s.state, what+"."+itoa(n)), []byte(content), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

func (s *standin) read(n int, what string) string {
	s.t.Helper()
	b, err := os.ReadFile(filepath.Join(s.state, what+"."+itoa(n)))
	if err != nil {
		s.t.Fatal(err)
	}
	return string(b)
}

func itoa(n int) string { return string(rune('0' + n)) }

func spec() agentrt.Spec {
	return agentrt.Spec{
		Role:         "executor",
		Model:        "claude-sonnet-4-5",
		System:       []model.TextPart{{Text: "You are the executor."}, {Text: "Project rule: gofmt everything."}},
		Delegation:   "task_id: task-001\nfeature_name: greet the world",
		ResultSchema: json.RawMessage(resultSchema),
		MaxTurns:     12,
	}
}

func TestClaudeCodeStandin(t *testing.T) {
	s := newStandin(t, "claude")
	s.play(1, "claude_success.jsonl")
	var tools []string
	var afterCalls []model.Usage
	hooks := agentrt.Hooks{
		OnTool:    func(name string, _ json.RawMessage) { tools = append(tools, name) },
		AfterCall: func(u model.Usage) { afterCalls = append(afterCalls, u) },
	}
	var tr bytes.Buffer
	res, err := ClaudeCode{Binary: s.bin, Env: s.env}.Run(context.Background(), s.work, spec(), hooks, &tr)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Output) != `{"summary":"Changed Hello to return hello, world","files_modified":["greet.go"]}` {
		t.Errorf("output = %s", res.Output)
	}
	want := model.Usage{InputTokens: 16, OutputTokens: 271, CacheReadTokens: 46100, CacheWriteTokens: 5620}
	if res.Usage != want || res.Turns != 5 || res.Repairs != 0 {
		t.Errorf("result = %+v, want usage %+v from the result event and 5 turns", res, want)
	}
	if len(afterCalls) != 1 || afterCalls[0] != want {
		t.Errorf("AfterCall got %+v", afterCalls)
	}
	if strings.Join(tools, ",") != "Read,Edit" {
		t.Errorf("OnTool saw %v", tools)
	}

	args := strings.Split(strings.TrimSpace(s.read(1, "args")), "\n")
	joined := strings.Join(args, " ")
	for _, want := range []string{"-p", "--output-format stream-json", "--verbose", "--permission-mode acceptEdits",
		"--model claude-sonnet-4-5", "--max-turns 12"} {
		if !strings.Contains(joined, want) {
			t.Errorf("args %q lack %q", joined, want)
		}
	}
	if i := indexOf(args, "--append-system-prompt"); i < 0 || args[i+1] != "You are the executor." {
		t.Errorf("system prompt not appended: %q", args)
	}
	if strings.Contains(joined, "--resume") {
		t.Errorf("first run resumed: %q", joined)
	}
	prompt := s.read(1, "prompt")
	if !strings.HasPrefix(prompt, spec().Delegation) || !strings.Contains(prompt, "RESULT") || !strings.Contains(prompt, `"files_modified"`) {
		t.Errorf("prompt = %q", prompt)
	}
	if cwd := strings.TrimSpace(s.read(1, "cwd")); cwd != s.work {
		if real, _ := filepath.EvalSymlinks(s.work); cwd != real {
			t.Errorf("ran in %s, want the worktree %s", cwd, s.work)
		}
	}
	lines := strings.Split(strings.TrimSpace(tr.String()), "\n")
	if len(lines) != 9 || !strings.Contains(lines[0], `"subtype":"init"`) || !strings.Contains(lines[8], `"outcome":"result"`) {
		t.Errorf("transcript has %d lines: first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func TestClaudeCodeRepairResumesSession(t *testing.T) {
	s := newStandin(t, "claude")
	s.play(1, "claude_invalid.jsonl")
	s.play(2, "claude_repaired.jsonl")
	res, err := ClaudeCode{Binary: s.bin, Env: s.env}.Run(context.Background(), s.work, spec(), agentrt.Hooks{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Repairs != 1 || res.Usage.InputTokens != 40 || res.Turns != 2 {
		t.Errorf("result = %+v", res)
	}
	args := s.read(2, "args")
	if !strings.Contains(args, "--resume\n7e2a9c41-5d3b-4a6f-8e10-3b4c5d6e7f80\n") {
		t.Errorf("repair did not resume the session: %q", args)
	}
	if p := s.read(2, "prompt"); !strings.Contains(p, "files_modified") || !strings.Contains(p, "only repair attempt") {
		t.Errorf("repair prompt = %q", p)
	}
}

func TestClaudeCodeFailures(t *testing.T) {
	t.Run("invalid twice", func(t *testing.T) {
		s := newStandin(t, "claude")
		s.play(1, "claude_invalid.jsonl")
		s.play(2, "claude_invalid.jsonl")
		_, err := ClaudeCode{Binary: s.bin, Env: s.env}.Run(context.Background(), s.work, spec(), agentrt.Hooks{}, nil)
		f := failure(t, err)
		if f.Reason != agentrt.ReasonInvalidResult || !strings.Contains(f.Detail, "files_modified") {
			t.Errorf("failure = %+v", f)
		}
	})
	t.Run("max turns", func(t *testing.T) {
		s := newStandin(t, "claude")
		s.play(1, "claude_max_turns.jsonl")
		var tools []string
		hooks := agentrt.Hooks{OnTool: func(name string, _ json.RawMessage) { tools = append(tools, name) }}
		_, err := ClaudeCode{Binary: s.bin, Env: s.env}.Run(context.Background(), s.work, spec(), hooks, nil)
		f := failure(t, err)
		if f.Reason != agentrt.ReasonMaxTurns || f.Usage.InputTokens != 40 {
			t.Errorf("failure = %+v", f)
		}
		if strings.Join(tools, ",") != "Bash" {
			t.Errorf("tools = %v", tools)
		}
	})
	t.Run("crash", func(t *testing.T) {
		s := newStandin(t, "claude")
		s.write(1, "stderr", "Error: Invalid API key · Please run /login")
		s.write(1, "exit", "1")
		_, err := ClaudeCode{Binary: s.bin, Env: s.env}.Run(context.Background(), s.work, spec(), agentrt.Hooks{}, nil)
		f := failure(t, err)
		if f.Reason != agentrt.ReasonModelError || !strings.Contains(f.Detail, "Invalid API key") {
			t.Errorf("failure = %+v", f)
		}
	})
	t.Run("missing binary", func(t *testing.T) {
		_, err := ClaudeCode{Binary: filepath.Join(t.TempDir(), "claude")}.Run(context.Background(), t.TempDir(), spec(), agentrt.Hooks{}, nil)
		if f := failure(t, err); f.Reason != agentrt.ReasonModelError || !strings.Contains(f.Detail, "starting") {
			t.Errorf("failure = %+v", f)
		}
	})
	t.Run("deadline kills the process group", func(t *testing.T) {
		s := newStandin(t, "claude")
		s.write(1, "sleep", "")
		sp := spec()
		sp.Deadline = time.Now().Add(300 * time.Millisecond)
		start := time.Now()
		_, err := ClaudeCode{Binary: s.bin, Env: s.env}.Run(context.Background(), s.work, sp, agentrt.Hooks{}, nil)
		if f := failure(t, err); f.Reason != agentrt.ReasonDeadline {
			t.Errorf("failure = %+v", f)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("Run returned after %v; the agent was not killed", d)
		}
		// SIGKILL is delivered at once but a loaded machine may take a
		// moment to schedule the death; a live child after 5s is a leak.
		pid := strings.TrimSpace(s.read(1, "child"))
		for wait := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			st, err := os.ReadFile("/proc/" + pid + "/stat")
			if err != nil || strings.Contains(string(st), ") Z ") {
				break
			}
			if time.Now().After(wait) {
				t.Errorf("the agent's child %s outlived it: %s", pid, st)
				break
			}
		}
	})
	t.Run("budget refused", func(t *testing.T) {
		s := newStandin(t, "claude")
		hooks := agentrt.Hooks{BeforeCall: func(context.Context) error { return errors.New("cost budget spent") }}
		_, err := ClaudeCode{Binary: s.bin, Env: s.env}.Run(context.Background(), s.work, spec(), hooks, nil)
		if f := failure(t, err); f.Reason != agentrt.ReasonBudget {
			t.Errorf("failure = %+v", f)
		}
		if _, err := os.Stat(filepath.Join(s.state, "count")); err == nil {
			t.Error("the agent ran although the budget refused")
		}
	})
}

func failure(t *testing.T, err error) *agentrt.Failure {
	t.Helper()
	var f *agentrt.Failure
	if !errors.As(err, &f) {
		t.Fatalf("err = %v (%T), want *agentrt.Failure", err, err)
	}
	return f
}

func TestCodexStandin(t *testing.T) {
	s := newStandin(t, "codex")
	s.play(1, "codex_success.jsonl")
	var tools []string
	hooks := agentrt.Hooks{OnTool: func(name string, _ json.RawMessage) { tools = append(tools, name) }}
	res, err := Codex{Binary: s.bin, Env: s.env}.Run(context.Background(), s.work, spec(), hooks, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Output) != `{"summary":"updated greeting","files_modified":["greet.go"]}` {
		t.Errorf("output = %s", res.Output)
	}
	if want := (model.Usage{InputTokens: 315, CacheReadTokens: 24448, OutputTokens: 122}); res.Usage != want {
		t.Errorf("usage = %+v, want %+v", res.Usage, want)
	}
	if strings.Join(tools, ",") != "bash" {
		t.Errorf("tools = %v", tools)
	}
	args := strings.Fields(s.read(1, "args"))
	if strings.Join(args, " ") != "exec --json --skip-git-repo-check --sandbox workspace-write --model claude-sonnet-4-5 -" {
		t.Errorf("args = %q", args)
	}
	if p := s.read(1, "prompt"); !strings.HasPrefix(p, "You are the executor.\n\nProject rule") || !strings.Contains(p, spec().Delegation) {
		t.Errorf("prompt = %q", p)
	}
}

func TestCodexTurnFailed(t *testing.T) {
	s := newStandin(t, "codex")
	s.write(1, "stream", `{"type":"thread.started","thread_id":"t1"}
{"type":"turn.started"}
{"type":"error","message":"stream disconnected before completion"}
{"type":"turn.failed","error":{"message":"stream disconnected before completion"}}
`)
	s.write(1, "exit", "1")
	_, err := Codex{Binary: s.bin, Env: s.env}.Run(context.Background(), s.work, spec(), agentrt.Hooks{}, nil)
	if f := failure(t, err); f.Reason != agentrt.ReasonModelError || !strings.Contains(f.Detail, "stream disconnected") {
		t.Errorf("failure = %+v", f)
	}
}

func TestDetect(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "claude"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	for kind, want := range map[string]bool{KindAPI: true, KindClaudeCode: true, KindCodex: false, "gemini": false} {
		if got := Detect(kind, exec.LookPath); got != want {
			t.Errorf("Detect(%q) = %v, want %v", kind, got, want)
		}
	}
}

// TestClaudeCodeOnPath runs the stand-in found as "claude" on PATH, the way
// a user's installation is found.
func TestClaudeCodeOnPath(t *testing.T) {
	s := newStandin(t, "claude")
	s.play(1, "claude_success.jsonl")
	t.Setenv("PATH", s.binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("STANDIN_DIR", s.state)
	if !Detect(KindClaudeCode, exec.LookPath) {
		t.Fatal("the stand-in is not detected")
	}
	if _, err := (ClaudeCode{}).Run(context.Background(), s.work, spec(), agentrt.Hooks{}, nil); err != nil {
		t.Fatal(err)
	}
}
