package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
)

// DefaultMaxTokens is used when a Request leaves MaxTokens at zero; the
// Messages API requires a value.
const DefaultMaxTokens = 4096

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

func (p *anthropicProvider) attempt(ctx context.Context, params anthropic.MessageNewParams, onDelta func(Delta)) (*Response, error) {
	stream := p.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()

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
	done := false
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "message_start":
			if ev.Message.Model != "" {
				resp.Model = string(ev.Message.Model)
			}
			u := ev.Message.Usage
			resp.Usage = Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
				CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}
		case "content_block_start":
			for int64(len(blocks)) <= ev.Index {
				blocks = append(blocks, &block{call: -1})
			}
			b := blocks[ev.Index]
			switch ev.ContentBlock.Type {
			case "text":
				if ev.ContentBlock.Text != "" {
					text.WriteString(ev.ContentBlock.Text)
					if onDelta != nil {
						onDelta(Delta{Type: DeltaText, Text: ev.ContentBlock.Text})
					}
				}
			case "tool_use":
				b.call = len(resp.ToolCalls)
				resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name})
				if onDelta != nil {
					onDelta(Delta{Type: DeltaToolStart, ToolName: ev.ContentBlock.Name})
				}
			}
		case "content_block_delta":
			b, err := get(ev.Index)
			if err != nil {
				return nil, err
			}
			switch ev.Delta.Type {
			case "text_delta":
				text.WriteString(ev.Delta.Text)
				if onDelta != nil {
					onDelta(Delta{Type: DeltaText, Text: ev.Delta.Text})
				}
			case "input_json_delta":
				b.args.WriteString(ev.Delta.PartialJSON)
			}
		case "content_block_stop":
			b, err := get(ev.Index)
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
			resp.StopReason = anthropicStop(ev.Delta.StopReason)
			u := ev.Usage
			resp.Usage.OutputTokens = u.OutputTokens
			// Newer API versions repeat the cumulative input counts here.
			if u.JSON.InputTokens.Valid() {
				resp.Usage.InputTokens = u.InputTokens
			}
			if u.JSON.CacheReadInputTokens.Valid() {
				resp.Usage.CacheReadTokens = u.CacheReadInputTokens
			}
			if u.JSON.CacheCreationInputTokens.Valid() {
				resp.Usage.CacheWriteTokens = u.CacheCreationInputTokens
			}
		case "message_stop":
			done = true
		}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	if !done {
		return nil, fmt.Errorf("%w (no message_stop)", ErrTruncated)
	}
	for _, c := range resp.ToolCalls {
		if c.Input == nil {
			return nil, fmt.Errorf("%w: tool call %s never finished", ErrTruncated, c.Name)
		}
	}
	resp.Text = text.String()
	return resp, nil
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
	var ae *anthropic.Error
	if !errors.As(err, &ae) {
		return classifyTransport(err)
	}
	msg := ae.Message
	if msg == "" {
		msg = strings.TrimSpace(ae.RawJSON())
	}
	if ae.StatusCode >= 400 {
		var h = ae.Response
		f := classifyStatus(ae.StatusCode, nil)
		if h != nil {
			f = classifyStatus(ae.StatusCode, h.Header)
		}
		f.typ, f.msg = string(ae.Type()), msg
		return f
	}
	// An error event inside a 200 stream, e.g. overloaded_error.
	typ := string(ae.Type())
	f := failure{typ: typ, msg: msg, err: fmt.Errorf("error event in stream: %s: %s", typ, msg)}
	switch typ {
	case "invalid_request_error", "authentication_error", "permission_error", "not_found_error", "request_too_large":
	default:
		f.retry = true
	}
	return f
}
