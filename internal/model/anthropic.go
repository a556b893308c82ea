package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/tidwall/gjson"
)

// DefaultMaxTokens is used when a Request leaves MaxTokens at zero; the
// Messages API requires a value.
const DefaultMaxTokens = 4096

// maxBlockGap bounds how far past the last content block a new one's
// index may jump, so a corrupt index cannot make us allocate without end.
const maxBlockGap = 1024

// maxCacheBreakpoints is the Messages API's limit on cache_control marks.
const maxCacheBreakpoints = 4

type anthropicProvider struct {
	o      Options
	client anthropic.Client
}

// NewAnthropic returns a provider for the Anthropic Messages API, on the
// official SDK with its own retries off: retries, backoff, deadlines and
// stall detection are sluice's, identical for every provider.
func NewAnthropic(o Options) Provider {
	if o.APIKeyEnv == "" {
		o.APIKeyEnv = "ANTHROPIC_API_KEY"
	}
	o = o.withDefaults()
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(o.APIKey),
		option.WithHTTPClient(o.HTTPClient),
		option.WithMaxRetries(0),
	}
	if o.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(o.BaseURL))
	}
	return &anthropicProvider{o: o, client: anthropic.NewClient(opts...)}
}

func (p *anthropicProvider) Name() string { return "anthropic" }

func (p *anthropicProvider) Stream(ctx context.Context, req Request, onDelta func(Delta)) (*Response, error) {
	if p.o.APIKey == "" && p.o.BaseURL == "" {
		return nil, &APIError{Provider: p.Name(), Model: req.Model, KeyEnv: p.o.APIKeyEnv, Err: ErrNoAPIKey}
	}
	params, err := anthropicParams(req)
	if err != nil {
		return nil, fmt.Errorf("anthropic (model %s): %w: %w", req.Model, ErrInvalidRequest, err)
	}
	return call(ctx, &p.o, p.Name(), req.Model, onDelta, func(ctx context.Context) (*Response, error) {
		return p.attempt(ctx, params, onDelta)
	}, classifyAnthropic)
}

func anthropicParams(req Request) (anthropic.MessageNewParams, error) {
	var params anthropic.MessageNewParams
	if req.Model == "" {
		return params, errors.New("no model named")
	}
	if req.MaxTokens < 0 {
		return params, fmt.Errorf("max_tokens %d is negative", req.MaxTokens)
	}
	params.Model = anthropic.Model(req.Model)
	params.MaxTokens = int64(req.MaxTokens)
	if params.MaxTokens == 0 {
		params.MaxTokens = DefaultMaxTokens
	}
	params.StopSequences = req.Stop

	breakpoints := 0
	for _, s := range req.System {
		b := anthropic.TextBlockParam{Text: s.Text}
		if s.Cache {
			b.CacheControl = anthropic.NewCacheControlEphemeralParam()
			breakpoints++
		}
		params.System = append(params.System, b)
	}
	for i, t := range req.Tools {
		if t.Name == "" {
			return params, fmt.Errorf("tools[%d] has no name", i)
		}
		schema := t.Schema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		if !json.Valid(schema) {
			return params, fmt.Errorf("tool %s: input schema is not valid JSON", t.Name)
		}
		tp := anthropic.ToolParam{
			Name:        t.Name,
			InputSchema: param.Override[anthropic.ToolInputSchemaParam](schema),
		}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	// Tools come first in the prompt, so when the caller marks a stable
	// prefix the tools are part of it: mark the last tool too.
	if breakpoints > 0 && len(params.Tools) > 0 {
		params.Tools[len(params.Tools)-1].OfTool.CacheControl = anthropic.NewCacheControlEphemeralParam()
		breakpoints++
	}
	if breakpoints > maxCacheBreakpoints {
		return params, fmt.Errorf("%d cache breakpoints (cached system parts plus the last tool); the Messages API allows %d", breakpoints, maxCacheBreakpoints)
	}

	switch req.ToolChoice.Mode {
	case ToolChoiceAuto:
	case ToolChoiceAny:
		params.ToolChoice = anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{}}
	case ToolChoiceNone:
		params.ToolChoice = anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
	case ToolChoiceTool:
		if req.ToolChoice.Name == "" {
			return params, errors.New(`tool choice "tool" names no tool`)
		}
		params.ToolChoice = anthropic.ToolChoiceParamOfTool(req.ToolChoice.Name)
	default:
		return params, fmt.Errorf("unknown tool choice mode %q", req.ToolChoice.Mode)
	}

	for i, m := range req.Messages {
		var blocks []anthropic.ContentBlockParamUnion
		for j, b := range m.Content {
			switch b.Type {
			case BlockText:
				blocks = append(blocks, anthropic.NewTextBlock(b.Text))
			case BlockToolUse:
				in := b.Input
				if len(in) == 0 {
					in = json.RawMessage("{}")
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(b.ToolUseID, in, b.ToolName))
			case BlockToolResult:
				blocks = append(blocks, anthropic.NewToolResultBlock(b.ToolUseID, b.Text, b.IsError))
			default:
				return params, fmt.Errorf("messages[%d].content[%d]: unknown block type %q", i, j, b.Type)
			}
		}
		switch m.Role {
		case RoleUser:
			params.Messages = append(params.Messages, anthropic.NewUserMessage(blocks...))
		case RoleAssistant:
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(blocks...))
		default:
			return params, fmt.Errorf("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	return params, nil
}

// anthropicStop maps the API's stop_reason.
func anthropicStop(s anthropic.StopReason) StopReason {
	switch s {
	case anthropic.StopReasonEndTurn:
		return StopEndTurn
	case anthropic.StopReasonToolUse:
		return StopToolUse
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		return StopMaxTokens
	case anthropic.StopReasonStopSequence:
		return StopSequence
	}
	return StopReason(s)
}

// anthropicStreamError parses the data of an "error" event.
func anthropicStreamError(data []byte) error {
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) != nil || e.Error.Type == "" {
		return &streamError{Message: string(data)}
	}
	return &streamError{Type: e.Error.Type, Message: e.Error.Message}
}

func (p *anthropicProvider) attempt(ctx context.Context, params anthropic.MessageNewParams, onDelta func(Delta)) (*Response, error) {
	// The SDK sends the request and hands back the response with its body
	// unread; the events are decoded here (see sse.go for why).
	var raw *http.Response
	err := p.client.Post(ctx, "v1/messages", params, &raw, option.WithJSONSet("stream", true))
	if raw != nil && raw.Body != nil {
		defer raw.Body.Close()
	}
	if err != nil {
		return nil, err
	}

	resp := &Response{Model: string(params.Model)}
	var text strings.Builder
	type block struct {
		call int // index into calls, or -1 for a non-tool block
		args strings.Builder
	}
	var blocks []*block
	get := func(i int64) (*block, error) {
		if i < 0 || int(i) >= len(blocks) {
			return nil, fmt.Errorf("%w: event for unknown content block %d", ErrTruncated, i)
		}
		return blocks[i], nil
	}
	sse := newSSEReader(raw.Body)
	for {
		name, data, err := sse.next()
		if err == io.EOF {
			return nil, fmt.Errorf("%w (no message_stop)", ErrTruncated)
		}
		if err != nil {
			return nil, err
		}
		// Like the SDK's decoder: events are told apart by name, "error"
		// ends the stream, pings and unnamed events carry nothing.
		switch string(name) {
		case "error":
			return nil, anthropicStreamError(data)
		case "ping", "":
			continue
		}
		ev, err := parseEvent(name, data)
		if err != nil {
			return nil, err
		}
		switch ev.Get("type").Str {
		case "message_start":
			m := ev.Get("message")
			if s := m.Get("model").Str; s != "" {
				resp.Model = s
			}
			u := m.Get("usage")
			resp.Usage = Usage{InputTokens: u.Get("input_tokens").Int(), OutputTokens: u.Get("output_tokens").Int(),
				CacheReadTokens: u.Get("cache_read_input_tokens").Int(), CacheWriteTokens: u.Get("cache_creation_input_tokens").Int()}
		case "content_block_start":
			i := ev.Get("index").Int()
			if i < 0 || i > int64(len(blocks))+maxBlockGap {
				return nil, fmt.Errorf("content block index %d out of range", i)
			}
			for int64(len(blocks)) <= i {
				blocks = append(blocks, &block{call: -1})
			}
			b := blocks[i]
			cb := ev.Get("content_block")
			switch cb.Get("type").Str {
			case "text":
				if t := cb.Get("text").Str; t != "" {
					text.WriteString(t)
					if onDelta != nil {
						onDelta(Delta{Type: DeltaText, Text: t})
					}
				}
			case "tool_use":
				name := cb.Get("name").Str
				b.call = len(resp.ToolCalls)
				resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: cb.Get("id").Str, Name: name})
				if onDelta != nil {
					onDelta(Delta{Type: DeltaToolStart, ToolName: name})
				}
			}
		case "content_block_delta":
			b, err := get(ev.Get("index").Int())
			if err != nil {
				return nil, err
			}
			d := ev.Get("delta")
			switch d.Get("type").Str {
			case "text_delta":
				t := d.Get("text").Str
				text.WriteString(t)
				if onDelta != nil {
					onDelta(Delta{Type: DeltaText, Text: t})
				}
			case "input_json_delta":
				b.args.WriteString(d.Get("partial_json").Str)
			}
		case "content_block_stop":
			b, err := get(ev.Get("index").Int())
			if err != nil {
				return nil, err
			}
			if b.call >= 0 {
				in, err := toolInput(b.args.String())
				if err != nil {
					return nil, fmt.Errorf("tool call %s: %w", resp.ToolCalls[b.call].Name, err)
				}
				resp.ToolCalls[b.call].Input = in
			}
		case "message_delta":
			resp.StopReason = anthropicStop(anthropic.StopReason(ev.Get("delta.stop_reason").Str))
			u := ev.Get("usage")
			resp.Usage.OutputTokens = u.Get("output_tokens").Int()
			// Newer API versions repeat the cumulative input counts here.
			if v := u.Get("input_tokens"); v.Type == gjson.Number {
				resp.Usage.InputTokens = v.Int()
			}
			if v := u.Get("cache_read_input_tokens"); v.Type == gjson.Number {
				resp.Usage.CacheReadTokens = v.Int()
			}
			if v := u.Get("cache_creation_input_tokens"); v.Type == gjson.Number {
				resp.Usage.CacheWriteTokens = v.Int()
			}
		case "message_stop":
			for _, c := range resp.ToolCalls {
				if c.Input == nil {
					return nil, fmt.Errorf("%w: tool call %s never finished", ErrTruncated, c.Name)
				}
			}
			resp.Text = text.String()
			// Read the rest (normally nothing) so the connection is reused.
			_, _ = io.Copy(io.Discard, raw.Body)
			return resp, nil
		}
	}
}

// toolInput checks streamed tool arguments: a call cut mid-way must never
// be applied.
func toolInput(s string) (json.RawMessage, error) {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid([]byte(s)) {
		return nil, fmt.Errorf("%w: arguments are not complete JSON", ErrTruncated)
	}
	return json.RawMessage(s), nil
}

func classifyAnthropic(err error) failure {
	var se *streamError
	if errors.As(err, &se) {
		// An error event inside a 200 stream, e.g. overloaded_error.
		f := failure{typ: se.Type, msg: se.Message, err: err}
		switch se.Type {
		case "invalid_request_error", "authentication_error", "permission_error", "not_found_error", "request_too_large":
		default:
			f.retry = true
		}
		return f
	}
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode < 400 {
		return classifyTransport(err)
	}
	msg := ae.Message
	if msg == "" {
		msg = strings.TrimSpace(ae.RawJSON())
	}
	f := classifyStatus(ae.StatusCode, nil)
	if ae.Response != nil {
		f = classifyStatus(ae.StatusCode, ae.Response.Header)
	}
	f.typ, f.msg = string(ae.Type()), msg
	return f
}
