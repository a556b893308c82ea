package agentrt

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/sluice-run/sluice/internal/model"
)

// scriptProvider answers each call with the next scripted step. A step sees
// the request, so tests can assert on what the model was sent.
type scriptProvider struct {
	t     *testing.T
	mu    sync.Mutex
	steps []func(req model.Request) (*model.Response, error)
	reqs  []model.Request
}

func (p *scriptProvider) Name() string { return "script" }

func (p *scriptProvider) Stream(ctx context.Context, req model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	p.mu.Lock()
	// Deep-copy the messages: the runner masks old blocks in place later,
	// and the tests want to see what each call was really sent.
	var cp model.Request
	b, _ := json.Marshal(req)
	if err := json.Unmarshal(b, &cp); err != nil {
		p.t.Errorf("request does not round-trip through JSON: %v", err)
	}
	p.reqs = append(p.reqs, cp)
	n := len(p.reqs)
	p.mu.Unlock()
	if n > len(p.steps) {
		return nil, fmt.Errorf("script exhausted: call %d, %d steps", n, len(p.steps))
	}
	resp, err := p.steps[n-1](req)
	if resp != nil && onDelta != nil && resp.Text != "" {
		onDelta(model.Delta{Type: model.DeltaText, Text: resp.Text})
	}
	return resp, err
}

func (p *scriptProvider) requests() []model.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reqs
}

// reply returns a step answering with fixed text and tool calls.
func reply(text string, calls ...model.ToolCall) func(model.Request) (*model.Response, error) {
	return func(model.Request) (*model.Response, error) {
		stop := model.StopEndTurn
		if len(calls) > 0 {
			stop = model.StopToolUse
		}
		return &model.Response{Text: text, ToolCalls: calls, StopReason: stop,
			Usage: model.Usage{InputTokens: 100, OutputTokens: 10}}, nil
	}
}

func call(id, name, input string) model.ToolCall {
	return model.ToolCall{ID: id, Name: name, Input: json.RawMessage(input)}
}

// fakeTool is a test tool whose behaviour is a function.
type fakeTool struct {
	name     string
	schema   string
	readOnly bool
	fn       func(ctx context.Context, input json.RawMessage) (string, error)
}

func (f *fakeTool) Spec() model.Tool {
	return model.Tool{Name: f.name, Description: "test tool " + f.name, Schema: json.RawMessage(f.schema)}
}
func (f *fakeTool) ReadOnly() bool { return f.readOnly }
func (f *fakeTool) Call(ctx context.Context, input json.RawMessage) (string, error) {
	return f.fn(ctx, input)
}

const pathSchema = `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`

const resultSchema = `{
  "type": "object",
  "properties": {
    "summary": {"type": "string", "minLength": 1},
    "files_modified": {"type": "array", "items": {"type": "string"}}
  },
  "required": ["summary", "files_modified"]
}`

// toolResults returns the tool_result blocks of the last user message of a
// request.
func toolResults(req model.Request) []model.Block {
	var out []model.Block
	last := req.Messages[len(req.Messages)-1]
	for _, b := range last.Content {
		if b.Type == model.BlockToolResult {
			out = append(out, b)
		}
	}
	return out
}
