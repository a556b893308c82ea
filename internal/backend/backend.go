// Package backend runs a delegation through a CLI coding agent (Claude Code
// or Codex) instead of sluice's own tool loop. The agent is started in the
// task's worktree with the delegation as its prompt; its final message must
// end with a RESULT block, which is parsed and validated exactly as the api
// backend validates submit_result, with the same one repair turn (the agent's
// session is resumed with the validation errors).
package backend

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/sluice-run/sluice/internal/agentrt"
	"github.com/sluice-run/sluice/internal/delegate"
	"github.com/sluice-run/sluice/internal/model"
	"github.com/sluice-run/sluice/internal/tailbuf"
)

// Backend kinds, as config names them.
const (
	KindAPI        = "api"
	KindClaudeCode = "claude-code"
	KindCodex      = "codex"
)

// Runner runs one delegation in a worktree.
type Runner interface {
	Run(ctx context.Context, dir string, spec agentrt.Spec, hooks agentrt.Hooks, transcript io.Writer) (*agentrt.Result, error)
}

// Detect reports whether a backend kind can run here: api always can, a CLI
// agent when its binary is on PATH. A miss means the caller falls back to api
// with a warning.
func Detect(kind string, lookPath func(string) (string, error)) bool {
	switch kind {
	case KindAPI:
		return true
	case KindClaudeCode:
		_, err := lookPath("claude")
		return err == nil
	case KindCodex:
		_, err := lookPath("codex")
		return err == nil
	default:
		return false
	}
}

// maxEventLine bounds one line of an agent's event stream.
const maxEventLine = 64 << 20

// turnOutput is what one invocation of a CLI agent produced.
type turnOutput struct {
	final   string      // the agent's final message
	usage   model.Usage // tokens of this invocation
	session string      // id to resume the session with
	turns   int         // model turns, when the agent reports them
	failure *agentrt.Failure
}

// turnFunc runs the agent once: a fresh session when resume is "", else a
// continuation of that session with prompt as the next user message.
type turnFunc func(ctx context.Context, prompt, resume string) (*turnOutput, error)

// drive runs the common protocol over a CLI agent: first turn, RESULT block,
// one repair turn on an invalid result.
func drive(ctx context.Context, spec agentrt.Spec, hooks agentrt.Hooks, transcript io.Writer, turn turnFunc) (*agentrt.Result, error) {
	check, err := agentrt.NewOutputValidator(spec.ResultSchema, spec.Validate)
	if err != nil {
		return nil, fmt.Errorf("backend: role %q: %w", spec.Role, err)
	}
	if !spec.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, spec.Deadline)
		defer cancel()
	}
	var (
		usage   model.Usage
		turns   int
		repairs int
		session string
	)
	fail := func(reason, detail string, err error) error {
		f := &agentrt.Failure{Reason: reason, Detail: detail, Usage: usage, Turns: turns, Err: err}
		writeEnd(transcript, nil, f)
		return f
	}
	prompt := firstPrompt(spec)
	for {
		if hooks.BeforeCall != nil {
			if err := hooks.BeforeCall(ctx); err != nil {
				return nil, fail(agentrt.ReasonBudget, err.Error(), err)
			}
		}
		out, err := turn(ctx, prompt, session)
		if out != nil {
			usage = usage.Add(out.usage)
			turns += max(out.turns, 1)
			if hooks.AfterCall != nil {
				hooks.AfterCall(out.usage)
			}
			if out.session != "" {
				session = out.session
			}
		}
		switch {
		case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !spec.Deadline.IsZero():
			return nil, fail(agentrt.ReasonDeadline, "the delegation's deadline passed", ctx.Err())
		case ctx.Err() != nil:
			return nil, fail(agentrt.ReasonCancelled, ctx.Err().Error(), ctx.Err())
		case err != nil:
			return nil, fail(agentrt.ReasonModelError, err.Error(), err)
		case out.failure != nil:
			out.failure.Usage, out.failure.Turns = usage, turns
			writeEnd(transcript, nil, out.failure)
			return nil, out.failure
		}

		raw, perr := delegate.ParseResultBlock(out.final)
		var verr error
		switch {
		case errors.Is(perr, delegate.ErrNoResult):
			verr = errors.New("your final message has no RESULT block")
		case perr != nil:
			verr = perr
		default:
			var output json.RawMessage
			if output, verr = check.Check(raw); verr == nil {
				res := &agentrt.Result{Output: output, Usage: usage, Turns: turns, Repairs: repairs}
				writeEnd(transcript, res, nil)
				return res, nil
			}
		}
		reason := agentrt.ReasonInvalidResult
		if errors.Is(perr, delegate.ErrNoResult) {
			reason = agentrt.ReasonNoResult
		}
		if repairs >= 1 || session == "" {
			return nil, fail(reason, verr.Error(), verr)
		}
		repairs++
		prompt = "Your result is invalid: " + verr.Error() + "\n\n" + resultInstructions(spec.ResultSchema) +
			"\nThis is your only repair attempt."
	}
}

// firstPrompt is the delegation followed by how to hand back the result.
func firstPrompt(spec agentrt.Spec) string {
	return spec.Delegation + "\n\n" + resultInstructions(spec.ResultSchema)
}

func resultInstructions(schema json.RawMessage) string {
	var pretty bytes.Buffer
	if json.Indent(&pretty, schema, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(schema)
	}
	return "When the work is complete, end your final message with a line reading RESULT followed by a fenced " +
		"```json block holding your result: one JSON document that matches this JSON schema.\n\n```json\n" +
		pretty.String() + "\n```\n"
}

func systemText(spec agentrt.Spec) string {
	parts := make([]string, 0, len(spec.System))
	for _, p := range spec.System {
		parts = append(parts, p.Text)
	}
	return strings.Join(parts, "\n\n")
}

func writeEnd(w io.Writer, res *agentrt.Result, f *agentrt.Failure) {
	if w == nil {
		return
	}
	e := agentrt.TranscriptEvent{Type: "end"}
	if res != nil {
		u := res.Usage
		e.Outcome, e.Output, e.Usage, e.Turn, e.Repairs = "result", res.Output, &u, res.Turns, res.Repairs
	} else {
		u := f.Usage
		e.Outcome, e.Reason, e.Detail, e.Usage, e.Turn = "failure", f.Reason, f.Detail, &u, f.Turns
	}
	if b, err := json.Marshal(e); err == nil {
		_, _ = w.Write(append(b, '\n'))
	}
}

// runProcess starts cmd with prompt on stdin and hands every stdout line
// that is a JSON object to onEvent, after copying it to the transcript. It
// returns the process's exit error and the tail of its stderr.
func runProcess(cmd *exec.Cmd, prompt string, transcript io.Writer, onEvent func(line []byte)) (stderrTail string, err error) {
	setProcessGroup(cmd)
	cmd.Stdin = strings.NewReader(prompt)
	stderr := tailbuf.New(8192)
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventLine)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' || !json.Valid(line) {
			continue
		}
		if transcript != nil {
			_, _ = transcript.Write(append(bytes.Clone(line), '\n'))
		}
		onEvent(line)
	}
	scanErr := sc.Err()
	if scanErr != nil {
		// Drain so that the agent is not blocked writing while we wait.
		_, _ = io.Copy(io.Discard, stdout)
	}
	waitErr := cmd.Wait()
	if scanErr != nil {
		return strings.TrimSpace(stderr.String()), fmt.Errorf("reading the event stream of %s: %w", cmd.Path, scanErr)
	}
	return strings.TrimSpace(stderr.String()), waitErr
}

func withStderr(msg, stderr string) string {
	if stderr == "" {
		return msg
	}
	return msg + "; stderr ends:\n" + stderr
}
