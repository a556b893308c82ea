// Package fake is a model server for tests, benchmarks, demos and users'
// offline replays. It speaks the real Anthropic Messages and OpenAI Chat
// Completions wire protocols (JSON and SSE streaming) over real HTTP and
// answers from a script of turns, so the code under test is the same code
// that talks to the real APIs.
package fake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Script is an ordered list of turns the server answers from.
type Script struct {
	Defaults Defaults `yaml:"defaults"`
	Turns    []Turn   `yaml:"turns"`
}

// Defaults apply to every turn that does not set its own value.
type Defaults struct {
	Delay Duration `yaml:"delay"`
	Usage *Usage   `yaml:"usage"`
}

// Turn is one scripted answer and the requests it answers.
type Turn struct {
	// Name identifies the turn in error messages and records.
	Name  string `yaml:"name"`
	Match Match  `yaml:"match"`
	// Repeat lets the turn answer any number of requests; by default a turn
	// answers once.
	Repeat bool `yaml:"repeat"`
	// Delay is waited before answering.
	Delay    *Duration `yaml:"delay"`
	Fault    *Fault    `yaml:"fault"`
	Response Response  `yaml:"response"`
}

// Match selects the requests a turn answers. Every matcher that is set must
// hold.
type Match struct {
	// SystemContains is a substring of the system prompt.
	SystemContains string `yaml:"system_contains"`
	// Contains is a substring of any user message text or tool result.
	Contains string `yaml:"contains"`
	// LastContains is a substring of the last user-side message (its text or
	// tool results).
	LastContains string `yaml:"last_contains"`
	// AssistantTurns is the exact number of assistant messages already in the
	// request.
	AssistantTurns *int `yaml:"assistant_turns"`
	// Model is the exact model name.
	Model string `yaml:"model"`
}

// Fault makes a turn fail instead of answering normally.
type Fault struct {
	// Status answers with this HTTP status and an error body in the
	// provider's shape.
	Status int `yaml:"status"`
	// RetryAfter, in seconds, is sent as the retry-after header.
	RetryAfter int `yaml:"retry_after"`
	// Body replaces the error message.
	Body string `yaml:"body"`
	// DropAfterEvents cuts the connection after this many stream events.
	DropAfterEvents int `yaml:"drop_after_events"`
	// StallAfterEvents stops sending, without closing, after this many
	// stream events, until the client goes away.
	StallAfterEvents int `yaml:"stall_after_events"`
}

// Response is what a turn answers.
type Response struct {
	Text      string     `yaml:"text"`
	ToolCalls []ToolCall `yaml:"tool_calls"`
	// StopReason defaults to tool_use when there are tool calls, else
	// end_turn. Use Anthropic's names; the OpenAI side maps them.
	StopReason string `yaml:"stop_reason"`
	Usage      *Usage `yaml:"usage"`
}

// ToolCall is a tool call the scripted model makes.
type ToolCall struct {
	Name  string `yaml:"name"`
	Input any    `yaml:"input"`
}

// Usage is the token usage a turn reports.
type Usage struct {
	Input      int64 `yaml:"input" json:"input"`
	Output     int64 `yaml:"output" json:"output"`
	CacheRead  int64 `yaml:"cache_read" json:"cache_read"`
	CacheWrite int64 `yaml:"cache_write" json:"cache_write"`
}

// Duration is a time.Duration written as a Go duration string ("200ms").
type Duration time.Duration

// UnmarshalYAML reads a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: duration must be a string like 200ms: %w", n.Line, err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: bad duration %q (want e.g. 200ms or 1s): %w", n.Line, s, err)
	}
	if v < 0 {
		return fmt.Errorf("line %d: duration %q is negative", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

var validStopReasons = map[string]bool{
	"end_turn": true, "tool_use": true, "max_tokens": true, "stop_sequence": true,
	"pause_turn": true, "refusal": true,
}

// ParseScript parses and checks a YAML script. Unknown fields are errors, so
// a typo in a matcher cannot silently match everything.
func ParseScript(data []byte) (*Script, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Script
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("fake model script is empty: it needs a turns: list")
		}
		return nil, fmt.Errorf("parse fake model script: %w", err)
	}
	if len(s.Turns) == 0 {
		return nil, errors.New("fake model script has no turns: add a turns: list")
	}
	for i := range s.Turns {
		t := &s.Turns[i]
		label := t.label(i)
		if t.Match.AssistantTurns != nil && *t.Match.AssistantTurns < 0 {
			return nil, fmt.Errorf("%s: match.assistant_turns must not be negative", label)
		}
		if sr := t.Response.StopReason; sr != "" && !validStopReasons[sr] {
			return nil, fmt.Errorf("%s: unknown stop_reason %q (want end_turn, tool_use, max_tokens, stop_sequence, pause_turn or refusal)", label, sr)
		}
		for j, tc := range t.Response.ToolCalls {
			if tc.Name == "" {
				return nil, fmt.Errorf("%s: tool_calls[%d] has no name", label, j)
			}
			in, err := toJSONValue(tc.Input)
			if err != nil {
				return nil, fmt.Errorf("%s: tool_calls[%d] (%s) input: %w", label, j, tc.Name, err)
			}
			if in == nil {
				in = map[string]any{}
			}
			if _, ok := in.(map[string]any); !ok {
				return nil, fmt.Errorf("%s: tool_calls[%d] (%s) input must be a mapping, got %T", label, j, tc.Name, in)
			}
			t.Response.ToolCalls[j].Input = in
		}
		if f := t.Fault; f != nil {
			if f.Status == 0 && f.DropAfterEvents == 0 && f.StallAfterEvents == 0 {
				return nil, fmt.Errorf("%s: fault needs status, drop_after_events or stall_after_events", label)
			}
			if f.Status != 0 && (f.Status < 400 || f.Status > 599) {
				return nil, fmt.Errorf("%s: fault status %d is not an HTTP error status (400-599)", label, f.Status)
			}
			if f.DropAfterEvents < 0 || f.StallAfterEvents < 0 || f.RetryAfter < 0 {
				return nil, fmt.Errorf("%s: fault counts must not be negative", label)
			}
		}
	}
	return &s, nil
}

// LoadScript reads and parses a script file.
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read fake model script: %w", err)
	}
	s, err := ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

func (t *Turn) label(i int) string {
	if t.Name != "" {
		return fmt.Sprintf("turn %d (%s)", i, t.Name)
	}
	return fmt.Sprintf("turn %d", i)
}

// toJSONValue converts YAML-decoded values into values encoding/json accepts
// (YAML allows non-string map keys).
func toJSONValue(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			c, err := toJSONValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			c, err := toJSONValue(e)
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(k)] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			c, err := toJSONValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	default:
		if _, err := json.Marshal(v); err != nil {
			return nil, fmt.Errorf("value %v cannot be written as JSON: %w", v, err)
		}
		return v, nil
	}
}

// summary is a short description of why a request did not match a turn.
func (m *Match) mismatch(r *parsedRequest) string {
	var why []string
	if m.Model != "" && r.Model != m.Model {
		why = append(why, fmt.Sprintf("model is %q, want %q", r.Model, m.Model))
	}
	if m.SystemContains != "" && !strings.Contains(r.System, m.SystemContains) {
		why = append(why, fmt.Sprintf("system prompt does not contain %q", m.SystemContains))
	}
	if m.Contains != "" && !r.containsUserSide(m.Contains) {
		why = append(why, fmt.Sprintf("no user message or tool result contains %q", m.Contains))
	}
	if m.LastContains != "" && !strings.Contains(r.LastUserSide, m.LastContains) {
		why = append(why, fmt.Sprintf("last user-side message %q does not contain %q", clip(r.LastUserSide, 80), m.LastContains))
	}
	if m.AssistantTurns != nil && r.AssistantTurns != *m.AssistantTurns {
		why = append(why, fmt.Sprintf("request has %d assistant messages, want %d", r.AssistantTurns, *m.AssistantTurns))
	}
	return strings.Join(why, "; ")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
