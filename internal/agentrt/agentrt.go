// Package agentrt runs one delegation on the api backend: sluice's own tool
// loop. The model works through the tools it is given and hands back its
// output contract by calling submit_result; the loop enforces turn, token and
// wall-clock limits, validates the result, and compacts old tool output when
// the conversation nears the model's context window.
package agentrt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluice-run/sluice/internal/delegate"
	"github.com/sluice-run/sluice/internal/model"
	"github.com/sluice-run/sluice/internal/tools"
)

// SubmitResultName is the name of the tool through which an agent returns
// its output contract.
const SubmitResultName = "submit_result"

// DefaultMaxOutputTokens is the per-call output limit when Spec leaves it 0.
const DefaultMaxOutputTokens = 8192

// Failure reasons.
const (
	ReasonMaxTurns      = "max_turns"
	ReasonTokenLimit    = "token_limit"
	ReasonDeadline      = "deadline"
	ReasonNoResult      = "no_result"
	ReasonInvalidResult = "invalid_result"
	ReasonModelError    = "model_error"
	ReasonBudget        = "budget"
	ReasonCancelled     = "cancelled"
)

// maxParallelTools bounds how many read-only tool calls of one turn run at
// once.
const maxParallelTools = 8

// Spec describes one delegation.
type Spec struct {
	Role  string
	Model string // model name sent to the provider
	// System is the stable prefix: agent prompt, project instructions,
	// capability contributions. Its last part is marked for caching.
	System []model.TextPart
	// Delegation is the first user message (the volatile part, last).
	Delegation string
	// Tools are offered to the model; submit_result is added by Run.
	Tools []tools.Tool
	// ResultSchema is the JSON schema of the role's output contract; it is
	// submit_result's input schema.
	ResultSchema json.RawMessage
	// Validate runs semantic checks beyond the schema (nil = none).
	Validate func(output json.RawMessage) error
	// MaxTurns bounds model turns (0 = no limit).
	MaxTurns int
	// MaxTokens bounds the tokens of every call together, as
	// model.Usage.Total counts them (0 = no limit).
	MaxTokens int64
	// MaxOutputTokens is each call's max_tokens (0 = DefaultMaxOutputTokens).
	MaxOutputTokens int
	// ContextWindow is the model's context in tokens; compaction starts
	// near it (0 = no compaction).
	ContextWindow int
	// Deadline ends the delegation (zero = none).
	Deadline time.Time
}

// Hooks let the caller account for and display a delegation. Every hook may
// be nil.
type Hooks struct {
	// BeforeCall runs before each model call, to reserve budget; an error
	// stops the delegation with ReasonBudget.
	BeforeCall func(ctx context.Context) error
	// AfterCall receives the usage of every call.
	AfterCall func(u model.Usage)
	// OnDelta receives streamed output, for progress display.
	OnDelta func(d model.Delta)
	// OnTool is called before each tool call, in the order the model asked.
	OnTool func(name string, input json.RawMessage)
}

// Result is a delegation's validated output.
type Result struct {
	Output    json.RawMessage
	Usage     model.Usage
	Turns     int // model calls made
	ToolCalls int // tool calls run, submit_result not counted
	Repairs   int // repair turns used after an invalid result (0 or 1)
}

// Failure is why a delegation ended without a result.
type Failure struct {
	Reason string // one of the Reason* constants
	Detail string
	Usage  model.Usage // tokens spent before the failure
	Turns  int
	Err    error // the underlying error, if any
}

func (f *Failure) Error() string {
	if f.Detail == "" {
		return "delegation failed: " + f.Reason
	}
	return "delegation failed: " + f.Reason + ": " + f.Detail
}

func (f *Failure) Unwrap() error { return f.Err }

// Run runs one delegation to its result. It returns a *Failure when the
// delegation ends without a valid result, and a plain error only for a Spec
// that cannot run (a schema that does not compile, clashing tool names).
// Each message and turn is written to transcript as one JSON line
// (transcript may be nil).
func Run(ctx context.Context, p model.Provider, spec Spec, hooks Hooks, transcript io.Writer) (*Result, error) {
	r, err := newRunner(p, spec, hooks, transcript)
	if err != nil {
		return nil, err
	}
	res, err := r.run(ctx)
	r.tw.end(res, err)
	return res, err
}

type callInfo struct {
	name string
	arg  string
}

type runner struct {
	p      model.Provider
	spec   Spec
	hooks  Hooks
	tw     *transcriptWriter
	output *OutputValidator

	tools   map[string]tools.Tool
	schemas map[string]*Schema
	specs   []model.Tool // sorted by name, submit_result last
	names   []string
	system  []model.TextPart

	msgs      []model.Message
	calls     map[string]callInfo // tool_use id → what it did, for compaction summaries
	elided    map[string]bool     // tool_use ids whose results were masked
	usage     model.Usage
	turns     int
	toolCalls int
	repairs   int
	reminded  bool

	// reported is the prompt+output size the provider reported for the
	// last call, and sinceReport the bytes appended since; together they
	// refine the bytes/4 estimate.
	reported    int64
	sinceReport int
}

func newRunner(p model.Provider, spec Spec, hooks Hooks, transcript io.Writer) (*runner, error) {
	if p == nil {
		return nil, errors.New("agentrt: no model provider")
	}
	out, err := NewOutputValidator(spec.ResultSchema, spec.Validate)
	if err != nil {
		return nil, fmt.Errorf("agentrt: role %q: %w", spec.Role, err)
	}
	r := &runner{
		p: p, spec: spec, hooks: hooks, output: out,
		tw:      &transcriptWriter{w: transcript},
		tools:   make(map[string]tools.Tool, len(spec.Tools)),
		schemas: make(map[string]*Schema, len(spec.Tools)),
		calls:   make(map[string]callInfo),
		elided:  make(map[string]bool),
	}
	for _, t := range spec.Tools {
		if t == nil {
			return nil, fmt.Errorf("agentrt: role %q: nil tool", spec.Role)
		}
		ts := t.Spec()
		switch {
		case ts.Name == "":
			return nil, fmt.Errorf("agentrt: role %q: a tool has no name", spec.Role)
		case ts.Name == SubmitResultName:
			return nil, fmt.Errorf("agentrt: role %q: tool name %s is reserved; Run adds it", spec.Role, SubmitResultName)
		case r.tools[ts.Name] != nil:
			return nil, fmt.Errorf("agentrt: role %q: two tools are named %q", spec.Role, ts.Name)
		}
		schema := ts.Schema
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		s, err := CompileSchema(ts.Name, schema)
		if err != nil {
			return nil, fmt.Errorf("agentrt: role %q: tool %s: %w", spec.Role, ts.Name, err)
		}
		r.tools[ts.Name] = t
		r.schemas[ts.Name] = s
		r.specs = append(r.specs, ts)
	}
	// A stable tool order keeps the cached prompt prefix identical from
	// one delegation to the next.
	slices.SortFunc(r.specs, func(a, b model.Tool) int { return strings.Compare(a.Name, b.Name) })
	r.specs = append(r.specs, model.Tool{
		Name: SubmitResultName,
		Description: "Submit your final result and end the delegation. Call it exactly once, when the work is " +
			"complete; its input is your output contract and is checked against this schema.",
		Schema: spec.ResultSchema,
	})
	for _, s := range r.specs {
		r.names = append(r.names, s.Name)
	}
	r.system = slices.Clone(spec.System)
	if n := len(r.system); n > 0 {
		r.system[n-1].Cache = true
	}
	return r, nil
}

func (r *runner) run(parent context.Context) (*Result, error) {
	ctx := parent
	if !r.spec.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(parent, r.spec.Deadline)
		defer cancel()
	}
	r.tw.start(r)
	r.appendUser(turnText(r.spec.Delegation))

	for {
		if f := r.ctxFailure(parent, ctx); f != nil {
			return nil, f
		}
		if r.spec.MaxTurns > 0 && r.turns >= r.spec.MaxTurns {
			return nil, r.fail(ReasonMaxTurns, fmt.Sprintf("no valid result after %d turns", r.turns), nil)
		}
		if r.spec.MaxTokens > 0 && r.usage.Total() > r.spec.MaxTokens {
			return nil, r.fail(ReasonTokenLimit, fmt.Sprintf("%d tokens used, limit %d", r.usage.Total(), r.spec.MaxTokens), nil)
		}
		r.maybeCompact()
		if r.hooks.BeforeCall != nil {
			if err := r.hooks.BeforeCall(ctx); err != nil {
				if f := r.ctxFailure(parent, ctx); f != nil {
					return nil, f
				}
				return nil, r.fail(ReasonBudget, err.Error(), err)
			}
		}
		resp, err := r.p.Stream(ctx, r.request(), r.hooks.OnDelta)
		if err != nil {
			if f := r.ctxFailure(parent, ctx); f != nil {
				return nil, f
			}
			return nil, r.fail(ReasonModelError, err.Error(), err)
		}
		if resp == nil {
			return nil, r.fail(ReasonModelError, "the provider returned no response", nil)
		}
		r.turns++
		r.usage = r.usage.Add(resp.Usage)
		if r.hooks.AfterCall != nil {
			r.hooks.AfterCall(resp.Usage)
		}
		r.reported = resp.Usage.Total()
		r.sinceReport = 0

		calls := r.appendAssistant(resp)
		var (
			out  json.RawMessage
			done bool
		)
		if len(calls) == 0 {
			out, done, err = r.handleText(resp)
		} else {
			out, done, err = r.handleCalls(ctx, calls)
		}
		if err != nil {
			return nil, err
		}
		if done {
			return &Result{Output: out, Usage: r.usage, Turns: r.turns, ToolCalls: r.toolCalls, Repairs: r.repairs}, nil
		}
	}
}

// ctxFailure reports a cancelled parent context or an expired deadline.
func (r *runner) ctxFailure(parent, ctx context.Context) *Failure {
	if err := parent.Err(); err != nil {
		return r.fail(ReasonCancelled, err.Error(), err)
	}
	if err := ctx.Err(); err != nil {
		return r.fail(ReasonDeadline, "the delegation's deadline "+r.spec.Deadline.Format(time.RFC3339)+" passed", err)
	}
	return nil
}

func (r *runner) fail(reason, detail string, err error) *Failure {
	return &Failure{Reason: reason, Detail: detail, Usage: r.usage, Turns: r.turns, Err: err}
}

func (r *runner) request() model.Request {
	maxOut := r.spec.MaxOutputTokens
	if maxOut <= 0 {
		maxOut = DefaultMaxOutputTokens
	}
	req := model.Request{
		Model:     r.spec.Model,
		System:    r.system,
		Messages:  slices.Clip(r.msgs),
		Tools:     r.specs,
		MaxTokens: maxOut,
	}
	if r.lastTurn() {
		req.ToolChoice = model.ToolChoice{Mode: model.ToolChoiceTool, Name: SubmitResultName}
	}
	return req
}

// lastTurn reports whether the next call is the last the turn limit allows.
func (r *runner) lastTurn() bool {
	return r.spec.MaxTurns > 0 && r.turns == r.spec.MaxTurns-1
}

func turnText(s string) []model.Block {
	return []model.Block{{Type: model.BlockText, Text: s}}
}

func (r *runner) appendUser(blocks []model.Block) {
	msg := model.Message{Role: model.RoleUser, Content: blocks}
	r.msgs = append(r.msgs, msg)
	r.sinceReport += messageBytes(msg)
	r.tw.message(r.turns, msg, nil, "")
}

// appendAssistant records the model's turn and returns its tool calls,
// repaired so that the history stays valid for the provider: every call gets
// an id, and arguments that are not a JSON object are stored as {} (the
// original goes to the tool error and the transcript).
func (r *runner) appendAssistant(resp *model.Response) []model.ToolCall {
	msg := model.Message{Role: model.RoleAssistant}
	if resp.Text != "" {
		msg.Content = append(msg.Content, model.Block{Type: model.BlockText, Text: resp.Text})
	}
	calls := make([]model.ToolCall, 0, len(resp.ToolCalls))
	for i, c := range resp.ToolCalls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("sluice_call_%d_%d", r.turns, i)
		}
		calls = append(calls, c)
		input := c.Input
		if !isJSONObject(input) {
			input = json.RawMessage(`{}`)
		}
		msg.Content = append(msg.Content, model.Block{Type: model.BlockToolUse, ToolUseID: c.ID, ToolName: c.Name, Input: input})
		r.calls[c.ID] = callInfo{name: c.Name, arg: describeArgs(c.Input)}
	}
	if len(msg.Content) == 0 {
		// Providers reject an empty assistant message; an empty text
		// block keeps the turn order intact.
		msg.Content = []model.Block{{Type: model.BlockText, Text: "(no output)"}}
	}
	r.msgs = append(r.msgs, msg)
	r.tw.message(r.turns, msg, &resp.Usage, resp.StopReason)
	if len(calls) > 0 {
		r.tw.rawCalls(r.turns, resp.ToolCalls)
	}
	return calls
}

func isJSONObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// handleText deals with a turn that called no tool: a RESULT block in the
// text is taken as the result; otherwise the model is reminded once.
func (r *runner) handleText(resp *model.Response) (json.RawMessage, bool, error) {
	raw, perr := delegate.ParseResultBlock(resp.Text)
	if perr == nil {
		out, err := r.output.Check(raw)
		if err == nil {
			return out, true, nil
		}
		return nil, false, r.repairText(err)
	}
	if !errors.Is(perr, delegate.ErrNoResult) {
		return nil, false, r.repairText(perr)
	}
	if r.reminded {
		return nil, false, r.fail(ReasonNoResult, "the model ended its turn without calling "+SubmitResultName+" after being reminded", nil)
	}
	r.reminded = true
	note := "You ended your turn without calling " + SubmitResultName + ". The delegation ends only when you call " +
		SubmitResultName + " with your result (its input schema is your output contract). If the work is done, call it now; otherwise continue with the tools."
	if resp.StopReason == model.StopMaxTokens {
		note = "Your response was cut off at the output token limit. " + note
	}
	r.appendUser(turnText(note))
	return nil, false, nil
}

// repairText grants the one repair turn for an invalid result given as text,
// or fails the delegation when it was already used.
func (r *runner) repairText(verr error) error {
	if r.repairs >= 1 {
		return r.fail(ReasonInvalidResult, verr.Error(), verr)
	}
	r.repairs++
	r.appendUser(turnText("Your result is invalid: " + verr.Error() +
		"\nFix these problems and call " + SubmitResultName + " with the corrected result. This is your only repair attempt."))
	return nil
}

// handleCalls runs a turn's tool calls and submit_result. Calls run
// concurrently when every call of the turn is read-only, else one by one in
// the model's order.
func (r *runner) handleCalls(ctx context.Context, calls []model.ToolCall) (json.RawMessage, bool, error) {
	results := make([]model.Block, len(calls))
	var work []int
	parallel := true
	for i, c := range calls {
		if c.Name == SubmitResultName {
			continue
		}
		work = append(work, i)
		r.toolCalls++
		if r.hooks.OnTool != nil {
			r.hooks.OnTool(c.Name, c.Input)
		}
		if t, ok := r.tools[c.Name]; ok && !t.ReadOnly() {
			parallel = false
		}
	}
	if parallel && len(work) > 1 {
		var wg sync.WaitGroup
		sem := make(chan struct{}, maxParallelTools)
		for _, i := range work {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				results[i] = r.execCall(ctx, calls[i])
			}()
		}
		wg.Wait()
	} else {
		for _, i := range work {
			results[i] = r.execCall(ctx, calls[i])
		}
	}

	// submit_result changes nothing, so checking it after the other calls
	// of the turn is the same as checking it in order.
	var (
		accepted json.RawMessage
		invalid  []string
	)
	for i, c := range calls {
		if c.Name != SubmitResultName {
			continue
		}
		if r.hooks.OnTool != nil {
			r.hooks.OnTool(c.Name, c.Input)
		}
		if accepted != nil {
			results[i] = toolResult(c.ID, "Ignored: a result was already accepted in this turn.", false)
			continue
		}
		out, err := r.checkSubmission(c.Input)
		if err != nil {
			invalid = append(invalid, err.Error())
			results[i] = toolResult(c.ID, "", true) // filled in below, once the repair decision is made
			continue
		}
		accepted = out
		results[i] = toolResult(c.ID, "Result accepted.", false)
	}
	switch {
	case len(invalid) == 0:
	case accepted != nil:
		r.fillSubmitErrors(calls, results, invalid, "")
	case r.repairs >= 1:
		r.fillSubmitErrors(calls, results, invalid, "")
		r.appendUser(results)
		detail := strings.Join(invalid, "\n")
		return nil, false, r.fail(ReasonInvalidResult, detail, errors.New(detail))
	default:
		r.repairs++
		r.fillSubmitErrors(calls, results, invalid,
			"\nFix these problems and call "+SubmitResultName+" again with the corrected result. This is your only repair attempt.")
	}

	blocks := results
	if accepted == nil && r.lastTurn() {
		blocks = append(slices.Clip(blocks), model.Block{Type: model.BlockText,
			Text: "You have one turn left. Call " + SubmitResultName + " now with your result."})
	}
	r.appendUser(blocks)
	if accepted != nil {
		return accepted, true, nil
	}
	return nil, false, nil
}

func (r *runner) fillSubmitErrors(calls []model.ToolCall, results []model.Block, invalid []string, suffix string) {
	n := 0
	for i, c := range calls {
		if c.Name == SubmitResultName && results[i].IsError {
			results[i].Text = invalid[n] + suffix
			n++
		}
	}
}

func (r *runner) checkSubmission(input json.RawMessage) (json.RawMessage, error) {
	if !json.Valid(input) {
		return nil, fmt.Errorf("the %s arguments are not valid JSON; send one JSON object matching the output schema", SubmitResultName)
	}
	return r.output.Check(input)
}

func toolResult(id, text string, isErr bool) model.Block {
	return model.Block{Type: model.BlockToolResult, ToolUseID: id, Text: text, IsError: isErr}
}

// execCall runs one tool call; every failure becomes a tool error the model
// sees, never an error of the delegation.
func (r *runner) execCall(ctx context.Context, c model.ToolCall) model.Block {
	t, ok := r.tools[c.Name]
	if !ok {
		return toolResult(c.ID, fmt.Sprintf("unknown tool %q; available tools: %s", c.Name, strings.Join(r.names, ", ")), true)
	}
	input := c.Input
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage(`{}`)
	}
	if !json.Valid(input) {
		return toolResult(c.ID, fmt.Sprintf("the arguments of %s are not valid JSON: %.200q; send one JSON object matching its input schema", c.Name, input), true)
	}
	if err := r.schemas[c.Name].Validate(input); err != nil {
		return toolResult(c.ID, fmt.Sprintf("the arguments of %s do not match its input schema:\n%s", c.Name, err), true)
	}
	out, err := safeCall(ctx, t, input)
	if err != nil {
		return toolResult(c.ID, err.Error(), true)
	}
	if out == "" {
		out = "(no output)"
	}
	return toolResult(c.ID, out, false)
}

// safeCall turns a tool's panic into a tool error: one broken tool must not
// take down a run of many agents.
func safeCall(ctx context.Context, t tools.Tool, input json.RawMessage) (out string, err error) {
	defer func() {
		if v := recover(); v != nil {
			out, err = "", fmt.Errorf("tool %s failed internally: %v", t.Spec().Name, v)
		}
	}()
	return t.Call(ctx, input)
}
