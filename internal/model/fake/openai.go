package fake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// openaiProtocol frames the OpenAI Chat Completions API.
type openaiProtocol struct{}

func (openaiProtocol) idHeader() string { return "x-request-id" }

func (openaiProtocol) parse(body []byte) (*parsedRequest, error) {
	var in struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("request body is not a Chat Completions request: %w", err)
	}
	r := &parsedRequest{Model: in.Model, Stream: in.Stream}
	if in.StreamOptions != nil {
		r.IncludeUsage = in.StreamOptions.IncludeUsage
	}
	var sys, last []string
	for i, m := range in.Messages {
		text, err := textOf(m.Content)
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		switch m.Role {
		case "system", "developer":
			sys = append(sys, text)
		case "assistant":
			r.AssistantTurns++
			last = last[:0]
		case "user", "tool":
			r.UserSide = append(r.UserSide, text)
			last = append(last, text)
		default:
			return nil, fmt.Errorf("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	r.System = strings.Join(sys, "\n\n")
	r.LastUserSide = strings.Join(last, "\n")
	return r, nil
}

// finishReason maps a script's (Anthropic-named) stop reason.
func finishReason(stop string) string {
	switch stop {
	case "tool_use":
		return "tool_calls"
	case "max_tokens":
		return "length"
	case "refusal":
		return "content_filter"
	default:
		return "stop"
	}
}

type (
	oFunction struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	}
	oToolCall struct {
		Index    *int      `json:"index,omitempty"`
		ID       string    `json:"id,omitempty"`
		Type     string    `json:"type,omitempty"`
		Function oFunction `json:"function"`
	}
	oPromptDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	}
	oCompletionDetails struct {
		ReasoningTokens          int64 `json:"reasoning_tokens"`
		AcceptedPredictionTokens int64 `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int64 `json:"rejected_prediction_tokens"`
	}
	oUsage struct {
		PromptTokens            int64              `json:"prompt_tokens"`
		CompletionTokens        int64              `json:"completion_tokens"`
		TotalTokens             int64              `json:"total_tokens"`
		PromptTokensDetails     oPromptDetails     `json:"prompt_tokens_details"`
		CompletionTokensDetails oCompletionDetails `json:"completion_tokens_details"`
	}
	oMessage struct {
		Role      string      `json:"role"`
		Content   *string     `json:"content"`
		ToolCalls []oToolCall `json:"tool_calls,omitempty"`
		Refusal   *string     `json:"refusal"`
	}
	oChoice struct {
		Index        int       `json:"index"`
		Message      oMessage  `json:"message"`
		Logprobs     *struct{} `json:"logprobs"`
		FinishReason string    `json:"finish_reason"`
	}
	oCompletion struct {
		ID                string    `json:"id"`
		Object            string    `json:"object"`
		Created           int64     `json:"created"`
		Model             string    `json:"model"`
		SystemFingerprint string    `json:"system_fingerprint"`
		Choices           []oChoice `json:"choices"`
		Usage             oUsage    `json:"usage"`
	}
	oDelta struct {
		Role string `json:"role,omitempty"`
		// Content is a JSON string, or null in the first chunk of a
		// response that only calls tools.
		Content   json.RawMessage `json:"content,omitempty"`
		ToolCalls []oToolCall     `json:"tool_calls,omitempty"`
	}
	oChunkChoice struct {
		Index        int       `json:"index"`
		Delta        oDelta    `json:"delta"`
		Logprobs     *struct{} `json:"logprobs"`
		FinishReason *string   `json:"finish_reason"`
	}
	oChunk struct {
		ID                string         `json:"id"`
		Object            string         `json:"object"`
		Created           int64          `json:"created"`
		Model             string         `json:"model"`
		SystemFingerprint string         `json:"system_fingerprint"`
		Choices           []oChunkChoice `json:"choices"`
		// Usage is null on every chunk but the last when include_usage is
		// set, and absent otherwise.
		Usage json.RawMessage `json:"usage,omitempty"`
	}
)

func (o *output) openaiUsage() oUsage {
	prompt := o.Usage.Input + o.Usage.CacheRead + o.Usage.CacheWrite
	return oUsage{
		PromptTokens:        prompt,
		CompletionTokens:    o.Usage.Output,
		TotalTokens:         prompt + o.Usage.Output,
		PromptTokensDetails: oPromptDetails{CachedTokens: o.Usage.CacheRead, CacheWriteTokens: o.Usage.CacheWrite},
	}
}

const fingerprint = "fp_sluice_fake"

func (openaiProtocol) writeJSON(w http.ResponseWriter, o *output) {
	msg := oMessage{Role: "assistant"}
	if o.Text != "" || len(o.Calls) == 0 {
		msg.Content = &o.Text
	}
	for _, c := range o.Calls {
		msg.ToolCalls = append(msg.ToolCalls, oToolCall{ID: "call_fake_" + c.ID, Type: "function", Function: oFunction{Name: c.Name, Arguments: c.Args}})
	}
	out := oCompletion{
		ID: "chatcmpl-fake-" + o.ID, Object: "chat.completion", Created: o.Created, Model: o.Model,
		SystemFingerprint: fingerprint,
		Choices:           []oChoice{{Index: 0, Message: msg, FinishReason: finishReason(o.StopReason)}},
		Usage:             o.openaiUsage(),
	}
	w.Header().Set("x-request-id", "req_fake_"+o.ID)
	writeJSON(w, http.StatusOK, out)
}

func (openaiProtocol) stream(ev *eventWriter, o *output) {
	// include_usage is read from the request by the caller through o.
	chunk := func(d oDelta, finish *string) bool {
		c := oChunk{
			ID: "chatcmpl-fake-" + o.ID, Object: "chat.completion.chunk", Created: o.Created, Model: o.Model,
			SystemFingerprint: fingerprint,
			Choices:           []oChunkChoice{{Index: 0, Delta: d, FinishReason: finish}},
		}
		if o.includeUsage {
			c.Usage = json.RawMessage("null")
		}
		return ev.json("", c)
	}
	startCall := func(i int) oToolCall {
		idx := i
		return oToolCall{Index: &idx, ID: "call_fake_" + o.Calls[i].ID, Type: "function", Function: oFunction{Name: o.Calls[i].Name}}
	}
	// The first chunk names the role; a response that only calls tools
	// starts its first call in it, with null content.
	first := oDelta{Role: "assistant", Content: json.RawMessage(`""`)}
	started := 0
	if o.Text == "" && len(o.Calls) > 0 {
		first.Content = json.RawMessage("null")
		first.ToolCalls = []oToolCall{startCall(0)}
		started = 1
	}
	if !chunk(first, nil) {
		return
	}
	for _, piece := range splitText(o.Text) {
		text, _ := json.Marshal(piece)
		if !chunk(oDelta{Content: text}, nil) {
			return
		}
	}
	for i, c := range o.Calls {
		if i >= started && !chunk(oDelta{ToolCalls: []oToolCall{startCall(i)}}, nil) {
			return
		}
		idx := i
		for _, piece := range splitArgs(c.Args) {
			if !chunk(oDelta{ToolCalls: []oToolCall{{Index: &idx, Function: oFunction{Arguments: piece}}}}, nil) {
				return
			}
		}
	}
	fr := finishReason(o.StopReason)
	if !chunk(oDelta{}, &fr) {
		return
	}
	if o.includeUsage {
		u, _ := json.Marshal(o.openaiUsage())
		last := oChunk{
			ID: "chatcmpl-fake-" + o.ID, Object: "chat.completion.chunk", Created: o.Created, Model: o.Model,
			SystemFingerprint: fingerprint, Choices: []oChunkChoice{}, Usage: u,
		}
		if !ev.json("", last) {
			return
		}
	}
	ev.event("", []byte("[DONE]"))
}

func (openaiProtocol) writeError(w http.ResponseWriter, status int, errType, msg string) {
	var code any
	if errType == "" {
		switch status {
		case http.StatusBadRequest, http.StatusMethodNotAllowed, http.StatusNotFound:
			errType = "invalid_request_error"
		case http.StatusUnauthorized:
			errType, code = "invalid_request_error", "invalid_api_key"
		case http.StatusForbidden:
			errType = "permission_error"
		case http.StatusTooManyRequests:
			errType, code = "requests", "rate_limit_exceeded"
		default:
			errType = "server_error"
		}
	}
	w.Header().Set("x-request-id", "req_fake_error")
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": errType, "param": nil, "code": code}})
}
