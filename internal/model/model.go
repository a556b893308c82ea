// Package model is sluice's conversation with language models: one small
// interface for a streamed model turn, implemented by providers built on the
// official Anthropic and OpenAI SDKs.
package model

import (
	"context"
	"encoding/json"
)

// Role is who spoke a message.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// BlockType is the kind of a content block.
type BlockType string

const (
	BlockText       BlockType = "text"
	BlockToolUse    BlockType = "tool_use"
	BlockToolResult BlockType = "tool_result"
)

// Block is one piece of a message's content.
type Block struct {
	Type BlockType `json:"type"`
	// Text is the text of a text block, or the content of a tool result.
	Text string `json:"text,omitempty"`
	// ToolUseID links a tool_use block and its tool_result.
	ToolUseID string `json:"tool_use_id,omitempty"`
	// ToolName and Input describe a tool_use block.
	ToolName string          `json:"tool_name,omitempty"`
	Input    json.RawMessage `json:"input,omitempty"`
	// IsError marks a tool_result that reports a failure to the model.
	IsError bool `json:"is_error,omitempty"`
}

// Message is one turn of the conversation.
type Message struct {
	Role    Role    `json:"role"`
	Content []Block `json:"content"`
}

// TextPart is a piece of the system prompt. Cache marks the end of a stable
// prefix that the provider should cache (Anthropic cache_control; OpenAI
// caches prefixes automatically).
type TextPart struct {
	Text  string `json:"text"`
	Cache bool   `json:"cache,omitempty"`
}

// Tool is a tool the model may call, with its JSON schema.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"input_schema"`
}

// ToolChoiceMode says whether and which tool the model must call.
type ToolChoiceMode string

const (
	ToolChoiceAuto ToolChoiceMode = "" // the model decides
	ToolChoiceAny  ToolChoiceMode = "any"
	ToolChoiceNone ToolChoiceMode = "none"
	ToolChoiceTool ToolChoiceMode = "tool" // must call Name
)

// ToolChoice constrains tool use for one turn.
type ToolChoice struct {
	Mode ToolChoiceMode `json:"mode,omitempty"`
	Name string         `json:"name,omitempty"`
}

// Request is one model turn.
type Request struct {
	Model      string     `json:"model"`
	System     []TextPart `json:"system,omitempty"`
	Messages   []Message  `json:"messages"`
	Tools      []Tool     `json:"tools,omitempty"`
	ToolChoice ToolChoice `json:"tool_choice,omitempty"`
	MaxTokens  int        `json:"max_tokens"`
	Stop       []string   `json:"stop,omitempty"`
}

// StopReason is why the model stopped.
type StopReason string

const (
	StopEndTurn   StopReason = "end_turn"
	StopToolUse   StopReason = "tool_use"
	StopMaxTokens StopReason = "max_tokens"
	StopSequence  StopReason = "stop_sequence"
)

// Usage counts tokens for one call.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + o.InputTokens,
		OutputTokens:     u.OutputTokens + o.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + o.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
	}
}

// Total is every token the call consumed or produced.
func (u Usage) Total() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// ToolCall is a tool invocation the model asked for.
type ToolCall struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// Response is the complete outcome of one turn.
type Response struct {
	Model      string     `json:"model"`
	Text       string     `json:"text"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	StopReason StopReason `json:"stop_reason"`
	Usage      Usage      `json:"usage"`
}

// DeltaType is the kind of a streamed delta.
type DeltaType string

const (
	DeltaText DeltaType = "text"
	// DeltaToolStart announces a tool call by name before its arguments arrive.
	DeltaToolStart DeltaType = "tool_start"
	// DeltaRetry says the stream was restarted: deltas seen so far for this
	// turn are void.
	DeltaRetry DeltaType = "retry"
)

// Delta is a piece of a streamed response, for progress display only: the
// Response returned by Stream is authoritative.
type Delta struct {
	Type     DeltaType `json:"type"`
	Text     string    `json:"text,omitempty"`
	ToolName string    `json:"tool_name,omitempty"`
}

// Provider runs streamed model turns.
type Provider interface {
	// Name is the provider's name, e.g. "anthropic" or "openai".
	Name() string
	// Stream sends one turn, calls onDelta as output arrives (onDelta may be
	// nil), and returns the whole response.
	Stream(ctx context.Context, req Request, onDelta func(Delta)) (*Response, error)
}
