package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"

	"github.com/sluice-run/sluice/internal/agentrt"
	"github.com/sluice-run/sluice/internal/model"
)

// ClaudeCode runs delegations with Claude Code in print mode:
//
//	claude -p --output-format stream-json --verbose --permission-mode M
//	       [--model X] [--max-turns N] [--append-system-prompt S] [--resume ID]
//
// with the prompt on stdin. The stream's result event gives the final
// message and the usage.
type ClaudeCode struct {
	// Binary is the claude executable ("" = "claude" on PATH).
	Binary string
	// PermissionMode is passed to --permission-mode ("" = "acceptEdits":
	// file edits are allowed, other tools only as AllowedTools permits).
	PermissionMode string
	// AllowedTools is passed to --allowedTools, e.g. "Bash(go test:*)".
	AllowedTools []string
	// Env is the agent's environment (nil = sluice's own).
	Env []string
}

// Run runs one delegation in dir.
func (c ClaudeCode) Run(ctx context.Context, dir string, spec agentrt.Spec, hooks agentrt.Hooks, transcript io.Writer) (*agentrt.Result, error) {
	return drive(ctx, spec, hooks, transcript, func(ctx context.Context, prompt, resume string) (*turnOutput, error) {
		return c.turn(ctx, dir, spec, hooks, transcript, prompt, resume)
	})
}

func (c ClaudeCode) args(spec agentrt.Spec, resume string) []string {
	mode := c.PermissionMode
	if mode == "" {
		mode = "acceptEdits"
	}
	args := []string{"-p", "--output-format", "stream-json", "--verbose", "--permission-mode", mode}
	if spec.Model != "" {
		args = append(args, "--model", spec.Model)
	}
	if spec.MaxTurns > 0 {
		args = append(args, "--max-turns", strconv.Itoa(spec.MaxTurns))
	}
	if len(c.AllowedTools) > 0 {
		args = append(args, "--allowedTools", strings.Join(c.AllowedTools, ","))
	}
	if s := systemText(spec); s != "" {
		args = append(args, "--append-system-prompt", s)
	}
	if resume != "" {
		args = append(args, "--resume", resume)
	}
	return args
}

// claudeEvent is the part of a stream-json event sluice reads.
type claudeEvent struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	Message   *struct {
		ID      string `json:"id"`
		Content []struct {
			Type  string          `json:"type"`
			Text  string          `json:"text"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
		Usage *claudeUsage `json:"usage"`
	} `json:"message"`
	Result   string       `json:"result"`
	IsError  bool         `json:"is_error"`
	NumTurns int          `json:"num_turns"`
	Usage    *claudeUsage `json:"usage"`
	Errors   []string     `json:"errors"`
}

type claudeUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

func (u claudeUsage) model() model.Usage {
	return model.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}
}

func (c ClaudeCode) turn(ctx context.Context, dir string, spec agentrt.Spec, hooks agentrt.Hooks, transcript io.Writer, prompt, resume string) (*turnOutput, error) {
	bin := c.Binary
	if bin == "" {
		bin = "claude"
	}
	cmd := exec.CommandContext(ctx, bin, c.args(spec, resume)...)
	cmd.Dir = dir
	cmd.Env = c.Env

	out := &turnOutput{}
	var (
		lastText   string
		result     *claudeEvent
		perMessage = map[string]model.Usage{} // assistant events repeat a message's usage per content block
		order      []string
	)
	stderr, err := runProcess(cmd, prompt, transcript, func(line []byte) {
		var e claudeEvent
		if json.Unmarshal(line, &e) != nil {
			return
		}
		if e.SessionID != "" {
			out.session = e.SessionID
		}
		switch e.Type {
		case "assistant":
			if e.Message == nil {
				return
			}
			for _, b := range e.Message.Content {
				switch b.Type {
				case "text":
					lastText = b.Text
					if hooks.OnDelta != nil {
						hooks.OnDelta(model.Delta{Type: model.DeltaText, Text: b.Text})
					}
				case "tool_use":
					if hooks.OnTool != nil {
						hooks.OnTool(b.Name, b.Input)
					}
				}
			}
			if e.Message.Usage != nil {
				id := e.Message.ID
				if _, seen := perMessage[id]; !seen {
					order = append(order, id)
				}
				perMessage[id] = e.Message.Usage.model()
			}
		case "result":
			ev := e
			result = &ev
		}
	})

	if result == nil {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		if err != nil {
			return out, fmt.Errorf("%s exited without a result event: %s", bin, withStderr(err.Error(), stderr))
		}
		return out, fmt.Errorf("%s printed no result event; is it Claude Code with stream-json output?%s", bin, withStderr("", stderr))
	}
	if result.Usage != nil {
		out.usage = result.Usage.model()
	} else {
		for _, id := range order {
			out.usage = out.usage.Add(perMessage[id])
		}
	}
	out.turns = result.NumTurns
	out.final = result.Result
	if out.final == "" {
		out.final = lastText
	}
	switch {
	case result.Subtype == "error_max_turns":
		out.failure = &agentrt.Failure{Reason: agentrt.ReasonMaxTurns, Detail: fmt.Sprintf("claude stopped after %d turns", result.NumTurns)}
	case result.IsError || strings.HasPrefix(result.Subtype, "error"):
		detail := result.Result
		if detail == "" {
			detail = strings.Join(result.Errors, "; ")
		}
		if detail == "" {
			detail = result.Subtype
		}
		out.failure = &agentrt.Failure{Reason: agentrt.ReasonModelError, Detail: "claude: " + withStderr(detail, stderr)}
	}
	return out, nil
}
