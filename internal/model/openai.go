package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
)

type openaiProvider struct {
	o      Options
	client openai.Client
	// official is true for api.openai.com, which wants
	// max_completion_tokens; compatible servers (Ollama, vLLM, llama.cpp)
	// widely understand only max_tokens.
	official bool
}

// NewOpenAI returns a provider for the OpenAI Chat Completions API and
// compatible servers, on the official SDK with its own retries off.
func NewOpenAI(o Options) Provider {
	if o.APIKeyEnv == "" {
		o.APIKeyEnv = "OPENAI_API_KEY"
	}
	o = o.withDefaults()
	opts := []option.RequestOption{
		option.WithHTTPClient(o.HTTPClient),
		option.WithMaxRetries(0),
		option.WithAPIKey(o.APIKey),
	}
	official := true
	if o.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(o.BaseURL))
		if u, err := url.Parse(o.BaseURL); err != nil || u.Hostname() != "api.openai.com" {
			official = false
		}
	}
	return &openaiProvider{o: o, client: openai.NewClient(opts...), official: official}
}

func (p *openaiProvider) Name() string { return "openai" }

func (p *openaiProvider) Stream(ctx context.Context, req Request, onDelta func(Delta)) (*Response, error) {
	// Local OpenAI-compatible servers need no key; the official API does.
	if p.o.APIKey == "" && p.official {
		return nil, &APIError{Provider: p.Name(), Model: req.Model, KeyEnv: p.o.APIKeyEnv, Err: ErrNoAPIKey}
	}
	params, err := p.params(req)
	if err != nil {
		return nil, fmt.Errorf("openai (model %s): %w: %w", req.Model, ErrInvalidRequest, err)
	}
	return call(ctx, &p.o, p.Name(), req.Model, onDelta, func(ctx context.Context) (*Response, error) {
		return p.attempt(ctx, params, onDelta)
	}, classifyOpenAI)
}

func (p *openaiProvider) params(req Request) (openai.ChatCompletionNewParams, error) {
	var params openai.ChatCompletionNewParams
	if req.Model == "" {
		return params, errors.New("no model named")
	}
	if req.MaxTokens < 0 {
		return params, fmt.Errorf("max_tokens %d is negative", req.MaxTokens)
	}
	params.Model = shared.ChatModel(req.Model)
	if req.MaxTokens > 0 {
		if p.official {
			params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		} else {
			params.MaxTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	if len(req.Stop) > 0 {
		params.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: req.Stop}
	}
	params.StreamOptions.IncludeUsage = openai.Bool(true)

	if len(req.System) > 0 {
		parts := make([]string, len(req.System))
		for i, s := range req.System {
			parts[i] = s.Text
		}
		// One string: compatible servers do not all accept content parts
		// in system messages. OpenAI caches prefixes by itself.
		params.Messages = append(params.Messages, openai.SystemMessage(strings.Join(parts, "\n\n")))
	}
	for i, t := range req.Tools {
		if t.Name == "" {
			return params, fmt.Errorf("tools[%d] has no name", i)
		}
		fd := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fd.Description = openai.String(t.Description)
		}
		if len(t.Schema) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Schema, &schema); err != nil {
				return params, fmt.Errorf("tool %s: input schema is not a JSON object: %w", t.Name, err)
			}
			fd.Parameters = schema
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	switch req.ToolChoice.Mode {
	case ToolChoiceAuto:
	case ToolChoiceAny:
		params.ToolChoice.OfAuto = openai.String("required")
	case ToolChoiceNone:
		params.ToolChoice.OfAuto = openai.String("none")
	case ToolChoiceTool:
		if req.ToolChoice.Name == "" {
			return params, errors.New(`tool choice "tool" names no tool`)
		}
		params.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: req.ToolChoice.Name})
	default:
		return params, fmt.Errorf("unknown tool choice mode %q", req.ToolChoice.Mode)
	}

	for i, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			// Tool results become tool messages, which must directly follow
			// the assistant message that called them; text comes after.
			var texts []string
			for j, b := range m.Content {
				switch b.Type {
				case BlockText:
					texts = append(texts, b.Text)
				case BlockToolResult:
					content := b.Text
					if b.IsError {
						// Chat Completions has no error flag on tool results.
						content = "Error: " + content
					}
					params.Messages = append(params.Messages, openai.ToolMessage(content, b.ToolUseID))
				default:
					return params, fmt.Errorf("messages[%d].content[%d]: block type %q cannot be sent by the user", i, j, b.Type)
				}
			}
			if len(texts) > 0 {
				params.Messages = append(params.Messages, openai.UserMessage(strings.Join(texts, "\n\n")))
			}
		case RoleAssistant:
			var am openai.ChatCompletionAssistantMessageParam
			var texts []string
			for j, b := range m.Content {
				switch b.Type {
				case BlockText:
					texts = append(texts, b.Text)
				case BlockToolUse:
					args := string(b.Input)
					if args == "" {
						args = "{}"
					}
					am.ToolCalls = append(am.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
						OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
							ID:       b.ToolUseID,
							Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: b.ToolName, Arguments: args},
						},
					})
				default:
					return params, fmt.Errorf("messages[%d].content[%d]: block type %q cannot be sent by the assistant", i, j, b.Type)
				}
			}
			if len(texts) > 0 {
				am.Content.OfString = openai.String(strings.Join(texts, "\n\n"))
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &am})
		default:
			return params, fmt.Errorf("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	return params, nil
}

func openaiStop(finish string, calls int) StopReason {
	switch finish {
	case "stop":
		// Some compatible servers report "stop" after tool calls.
		if calls > 0 {
			return StopToolUse
		}
		return StopEndTurn
	case "tool_calls", "function_call":
		return StopToolUse
	case "length":
		return StopMaxTokens
	}
	return StopReason(finish)
}

// openaiStreamError describes an error object inside a stream; its shape
// varies between compatible servers, so the type and message are read
// when present and the raw value kept otherwise.
func openaiStreamError(e gjson.Result) error {
	msg := e.Get("message").Str
	if msg == "" {
		return &streamError{Message: e.Raw}
	}
	return &streamError{Type: e.Get("type").Str, Message: msg}
}

func (p *openaiProvider) attempt(ctx context.Context, params openai.ChatCompletionNewParams, onDelta func(Delta)) (*Response, error) {
	// The SDK sends the request and hands back the response with its body
	// unread; the chunks are decoded here (see sse.go for why).
	var raw *http.Response
	err := p.client.Post(ctx, "chat/completions", params, &raw, option.WithJSONSet("stream", true))
	if raw != nil && raw.Body != nil {
		defer raw.Body.Close()
	}
	if err != nil {
		return nil, err
	}

	resp := &Response{Model: string(params.Model)}
	var text strings.Builder
	var args []strings.Builder
	finish := ""
	sse := newSSEReader(raw.Body)
	for {
		_, data, err := sse.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if bytes.HasPrefix(data, []byte("[DONE]")) {
			// Read the rest (normally nothing) so the connection is reused.
			_, _ = io.Copy(io.Discard, raw.Body)
			break
		}
		ch, err := parseEvent(nil, data)
		if err != nil {
			return nil, err
		}
		if e := ch.Get("error"); e.Exists() && e.Type != gjson.Null {
			return nil, openaiStreamError(e)
		}
		if m := ch.Get("model").Str; m != "" {
			resp.Model = m
		}
		if u := ch.Get("usage"); u.IsObject() {
			in := u.Get("prompt_tokens").Int()
			cached := u.Get("prompt_tokens_details.cached_tokens").Int()
			written := u.Get("prompt_tokens_details.cache_write_tokens").Int()
			// prompt_tokens includes cached tokens; Usage counts them apart
			// so each is priced at its own rate.
			resp.Usage = Usage{
				InputTokens:      max(in-cached-written, 0),
				OutputTokens:     u.Get("completion_tokens").Int(),
				CacheReadTokens:  cached,
				CacheWriteTokens: written,
			}
		}
		var failed error
		ch.Get("choices").ForEach(func(_, c gjson.Result) bool {
			if c.Get("index").Int() != 0 {
				return true
			}
			d := c.Get("delta")
			if t := d.Get("content").Str; t != "" {
				text.WriteString(t)
				if onDelta != nil {
					onDelta(Delta{Type: DeltaText, Text: t})
				}
			}
			d.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
				i := int(tc.Get("index").Int())
				if i < 0 || i > len(resp.ToolCalls) {
					failed = fmt.Errorf("%w: tool call index %d out of order", ErrTruncated, i)
					return false
				}
				if i == len(resp.ToolCalls) {
					resp.ToolCalls = append(resp.ToolCalls, ToolCall{})
					args = append(args, strings.Builder{})
				}
				call := &resp.ToolCalls[i]
				if id := tc.Get("id").Str; id != "" {
					call.ID = id
				}
				if name := tc.Get("function.name").Str; name != "" && call.Name == "" {
					call.Name = name
					if onDelta != nil {
						onDelta(Delta{Type: DeltaToolStart, ToolName: name})
					}
				}
				args[i].WriteString(tc.Get("function.arguments").Str)
				return true
			})
			if f := c.Get("finish_reason").Str; f != "" {
				finish = f
			}
			return failed == nil
		})
		if failed != nil {
			return nil, failed
		}
	}
	if finish == "" {
		return nil, fmt.Errorf("%w (no finish_reason)", ErrTruncated)
	}
	for i := range resp.ToolCalls {
		in, err := toolInput(args[i].String())
		if err != nil {
			return nil, fmt.Errorf("tool call %s: %w", resp.ToolCalls[i].Name, err)
		}
		resp.ToolCalls[i].Input = in
	}
	resp.StopReason = openaiStop(finish, len(resp.ToolCalls))
	resp.Text = text.String()
	return resp, nil
}

func classifyOpenAI(err error) failure {
	var se *streamError
	if errors.As(err, &se) {
		// An error object inside a 200 stream: the server failed mid-way.
		return failure{retry: true, typ: se.Type, msg: se.Message, err: err}
	}
	var ae *openai.Error
	if errors.As(err, &ae) && ae.StatusCode >= 400 {
		var f failure
		if ae.Response != nil {
			f = classifyStatus(ae.StatusCode, ae.Response.Header)
		} else {
			f = classifyStatus(ae.StatusCode, nil)
		}
		f.typ, f.msg = ae.Type, ae.Message
		if f.msg == "" {
			f.msg = strings.TrimSpace(ae.RawJSON())
		}
		return f
	}
	return classifyTransport(err)
}
