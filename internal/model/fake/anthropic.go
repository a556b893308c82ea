package fake

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// anthropicProtocol frames the Anthropic Messages API.
type anthropicProtocol struct{}

type aBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"`
}

// textOf reads a string or an array of text blocks.
func textOf(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var blocks []aBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", errors.New("content is neither a string nor a list of blocks")
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n\n"), nil
}

func (anthropicProtocol) parse(body []byte) (*parsedRequest, error) {
	var in struct {
		Model    string          `json:"model"`
		Stream   bool            `json:"stream"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("request body is not a Messages API request: %w", err)
	}
	sys, err := textOf(in.System)
	if err != nil {
		return nil, fmt.Errorf("system: %w", err)
	}
	r := &parsedRequest{Model: in.Model, Stream: in.Stream, System: sys}
	var last []string
	for i, m := range in.Messages {
		switch m.Role {
		case "assistant":
			r.AssistantTurns++
			last = last[:0]
		case "user":
			texts, err := userTexts(m.Content)
			if err != nil {
				return nil, fmt.Errorf("messages[%d]: %w", i, err)
			}
			r.UserSide = append(r.UserSide, texts...)
			last = append(last, texts...)
		default:
			return nil, fmt.Errorf("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	r.LastUserSide = strings.Join(last, "\n")
	return r, nil
}

// userTexts returns the texts and tool results of a user message.
func userTexts(raw json.RawMessage) ([]string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []string{s}, nil
	}
	var blocks []aBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, errors.New("content is neither a string nor a list of blocks")
	}
	var out []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			out = append(out, b.Text)
		case "tool_result":
			t, err := textOf(b.Content)
			if err != nil {
				return nil, fmt.Errorf("tool_result: %w", err)
			}
			out = append(out, t)
		}
	}
	return out, nil
}

type aUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

type aContent struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type aMessage struct {
	ID           string     `json:"id"`
	Type         string     `json:"type"`
	Role         string     `json:"role"`
	Content      []aContent `json:"content"`
	Model        string     `json:"model"`
	StopReason   *string    `json:"stop_reason"`
	StopSequence *string    `json:"stop_sequence"`
	Usage        aUsage     `json:"usage"`
}

func (o *output) anthropicUsage(output int64) aUsage {
	return aUsage{
		InputTokens:              o.Usage.Input,
		CacheCreationInputTokens: o.Usage.CacheWrite,
		CacheReadInputTokens:     o.Usage.CacheRead,
		OutputTokens:             output,
	}
}

func (anthropicProtocol) idHeader() string { return "request-id" }

func (anthropicProtocol) writeJSON(w http.ResponseWriter, o *output) {
	m := aMessage{ID: "msg_fake_" + o.ID, Type: "message", Role: "assistant", Model: o.Model, Content: []aContent{}}
	if o.Text != "" {
		m.Content = append(m.Content, aContent{Type: "text", Text: &o.Text})
	}
	for _, c := range o.Calls {
		m.Content = append(m.Content, aContent{Type: "tool_use", ID: "toolu_fake_" + c.ID, Name: c.Name, Input: json.RawMessage(c.Args)})
	}
	sr := o.StopReason
	m.StopReason = &sr
	m.Usage = o.anthropicUsage(o.Usage.Output)
	w.Header().Set("request-id", "req_fake_"+o.ID)
	writeJSON(w, http.StatusOK, m)
}

// Stream event payloads, field for field as the Messages API sends them.
type (
	aMessageStart struct {
		Type    string   `json:"type"`
		Message aMessage `json:"message"`
	}
	aBlockStart struct {
		Type         string   `json:"type"`
		Index        int      `json:"index"`
		ContentBlock aContent `json:"content_block"`
	}
	aDelta struct {
		Type        string  `json:"type"`
		Text        *string `json:"text,omitempty"`
		PartialJSON *string `json:"partial_json,omitempty"`
	}
	aBlockDelta struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta aDelta `json:"delta"`
	}
	aBlockStop struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}
	aMessageDelta struct {
		Type  string `json:"type"`
		Delta struct {
			StopReason   string  `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		} `json:"delta"`
		Usage struct {
			OutputTokens int64 `json:"output_tokens"`
		} `json:"usage"`
	}
	aType struct {
		Type string `json:"type"`
	}
)

func (anthropicProtocol) stream(ev *eventWriter, o *output) {
	start := aMessageStart{Type: "message_start", Message: aMessage{
		ID: "msg_fake_" + o.ID, Type: "message", Role: "assistant", Content: []aContent{}, Model: o.Model,
		// The API reports a first output token in message_start and the
		// total in message_delta.
		Usage: o.anthropicUsage(min(o.Usage.Output, 1)),
	}}
	if !ev.json("message_start", start) {
		return
	}
	index := 0
	pinged := false
	ping := func() bool {
		if pinged {
			return true
		}
		pinged = true
		return ev.json("ping", aType{Type: "ping"})
	}
	if o.Text != "" {
		empty := ""
		if !ev.json("content_block_start", aBlockStart{Type: "content_block_start", Index: index, ContentBlock: aContent{Type: "text", Text: &empty}}) || !ping() {
			return
		}
		for _, piece := range splitText(o.Text) {
			if !ev.json("content_block_delta", aBlockDelta{Type: "content_block_delta", Index: index, Delta: aDelta{Type: "text_delta", Text: &piece}}) {
				return
			}
		}
		if !ev.json("content_block_stop", aBlockStop{Type: "content_block_stop", Index: index}) {
			return
		}
		index++
	}
	for _, c := range o.Calls {
		if !ev.json("content_block_start", aBlockStart{Type: "content_block_start", Index: index,
			ContentBlock: aContent{Type: "tool_use", ID: "toolu_fake_" + c.ID, Name: c.Name, Input: json.RawMessage("{}")}}) || !ping() {
			return
		}
		for _, piece := range splitArgs(c.Args) {
			if !ev.json("content_block_delta", aBlockDelta{Type: "content_block_delta", Index: index, Delta: aDelta{Type: "input_json_delta", PartialJSON: &piece}}) {
				return
			}
		}
		if !ev.json("content_block_stop", aBlockStop{Type: "content_block_stop", Index: index}) {
			return
		}
		index++
	}
	if !ping() {
		return
	}
	var md aMessageDelta
	md.Type = "message_delta"
	md.Delta.StopReason = o.StopReason
	md.Usage.OutputTokens = o.Usage.Output
	if !ev.json("message_delta", md) {
		return
	}
	ev.json("message_stop", aType{Type: "message_stop"})
}

func (anthropicProtocol) writeError(w http.ResponseWriter, status int, errType, msg string) {
	if errType == "" {
		switch status {
		case http.StatusBadRequest, http.StatusMethodNotAllowed:
			errType = "invalid_request_error"
		case http.StatusUnauthorized:
			errType = "authentication_error"
		case http.StatusForbidden:
			errType = "permission_error"
		case http.StatusNotFound:
			errType = "not_found_error"
		case http.StatusRequestEntityTooLarge:
			errType = "request_too_large"
		case http.StatusTooManyRequests:
			errType = "rate_limit_error"
		case 529:
			errType = "overloaded_error"
		default:
			errType = "api_error"
		}
	}
	w.Header().Set("request-id", "req_fake_error")
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": errType, "message": msg}})
}
