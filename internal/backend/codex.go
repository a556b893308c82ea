package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"

	"github.com/sluice-run/sluice/internal/agentrt"
	"github.com/sluice-run/sluice/internal/model"
)

// Codex runs delegations with the Codex CLI:
//
//	codex exec --json --skip-git-repo-check --sandbox S [--model X] [resume ID] -
//
// with the system prompt and the delegation on stdin. agent_message items
// give the final message, turn.completed events the usage.
type Codex struct {
	// Binary is the codex executable ("" = "codex" on PATH).
	Binary string
	// Sandbox is passed to --sandbox ("" = "workspace-write": writes only
	// inside the worktree).
	Sandbox string
	// Env is the agent's environment (nil = sluice's own).
	Env []string
}

// Run runs one delegation in dir.
func (c Codex) Run(ctx context.Context, dir string, spec agentrt.Spec, hooks agentrt.Hooks, transcript io.Writer) (*agentrt.Result, error) {
	return drive(ctx, spec, hooks, transcript, func(ctx context.Context, prompt, resume string) (*turnOutput, error) {
		if resume == "" {
			// codex exec has no system prompt flag: the stable part goes
			// first in the prompt.
			if s := systemText(spec); s != "" {
				prompt = s + "\n\n" + prompt
			}
		}
		return c.turn(ctx, dir, spec, hooks, transcript, prompt, resume)
	})
}

func (c Codex) args(spec agentrt.Spec, resume string) []string {
	sandbox := c.Sandbox
	if sandbox == "" {
		sandbox = "workspace-write"
	}
	args := []string{"exec", "--json", "--skip-git-repo-check", "--sandbox", sandbox}
	if spec.Model != "" {
		args = append(args, "--model", spec.Model)
	}
	if resume != "" {
		args = append(args, "resume", resume)
	}
	return append(args, "-")
}

type codexEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Item     *struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Command string `json:"command"`
		Tool    string `json:"tool"`
		Server  string `json:"server"`
	} `json:"item"`
	Usage *struct {
		InputTokens       int64 `json:"input_tokens"`
		CachedInputTokens int64 `json:"cached_input_tokens"`
		OutputTokens      int64 `json:"output_tokens"`
	} `json:"usage"`
	Error   *struct{ Message string } `json:"error"`
	Message string                    `json:"message"`
}

func (c Codex) turn(ctx context.Context, dir string, spec agentrt.Spec, hooks agentrt.Hooks, transcript io.Writer, prompt, resume string) (*turnOutput, error) {
	bin := c.Binary
	if bin == "" {
		bin = "codex"
	}
	cmd := exec.CommandContext(ctx, bin, c.args(spec, resume)...)
	cmd.Dir = dir
	cmd.Env = c.Env

	out := &turnOutput{}
	var (
		failed    string
		completed bool
	)
	stderr, err := runProcess(cmd, prompt, transcript, func(line []byte) {
		var e codexEvent
		if json.Unmarshal(line, &e) != nil {
			return
		}
		switch e.Type {
		case "thread.started":
			out.session = e.ThreadID
		case "item.started":
			if e.Item != nil && hooks.OnTool != nil {
				switch e.Item.Type {
				case "command_execution":
					in, _ := json.Marshal(map[string]string{"command": e.Item.Command})
					hooks.OnTool("bash", in)
				case "mcp_tool_call":
					hooks.OnTool("mcp__"+e.Item.Server+"__"+e.Item.Tool, nil)
				}
			}
		case "item.completed":
			if e.Item != nil && e.Item.Type == "agent_message" {
				out.final = e.Item.Text
				if hooks.OnDelta != nil {
					hooks.OnDelta(model.Delta{Type: model.DeltaText, Text: e.Item.Text})
				}
			}
		case "turn.completed":
			completed = true
			out.turns++
			if u := e.Usage; u != nil {
				// Codex counts cached tokens inside input_tokens.
				out.usage = out.usage.Add(model.Usage{InputTokens: u.InputTokens - u.CachedInputTokens,
					CacheReadTokens: u.CachedInputTokens, OutputTokens: u.OutputTokens})
			}
		case "turn.failed":
			if e.Error != nil {
				failed = e.Error.Message
			} else {
				failed = "turn failed"
			}
		case "error":
			failed = e.Message
		}
	})
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	switch {
	case failed != "":
		out.failure = &agentrt.Failure{Reason: agentrt.ReasonModelError, Detail: "codex: " + withStderr(failed, stderr)}
		return out, nil
	case err != nil:
		return out, fmt.Errorf("%s failed: %s", bin, withStderr(err.Error(), stderr))
	case !completed:
		return out, fmt.Errorf("%s printed no turn.completed event; is it Codex with --json output?%s", bin, withStderr("", stderr))
	}
	return out, nil
}
