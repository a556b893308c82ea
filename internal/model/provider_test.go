package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-run/sluice/internal/model"
	"github.com/sluice-run/sluice/internal/model/fake"
)

// kinds are the providers every behaviour is checked against.
var kinds = []string{"anthropic", "openai"}

// startFake serves a script on 127.0.0.1 for the test's lifetime.
func startFake(t testing.TB, script string) (*fake.Server, string) {
	t.Helper()
	s, err := fake.ParseScript([]byte(script))
	if err != nil {
		t.Fatalf("parse script: %v", err)
	}
	srv := fake.NewServer(s)
	base, stop, err := fake.Listen(context.Background(), "127.0.0.1:0", srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	return srv, base
}

// sleeps records the waits between attempts without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

func newProvider(kind, base string, o model.Options) model.Provider {
	if o.APIKey == "" {
		o.APIKey = "test-key"
	}
	if o.Rand == nil {
		o.Rand = func() float64 { return 0.5 }
	}
	if kind == "anthropic" {
		o.BaseURL = base
		return model.NewAnthropic(o)
	}
	o.BaseURL = base + "/v1"
	return model.NewOpenAI(o)
}

func userReq(text string) model.Request {
	return model.Request{
		Model:     "test-model",
		System:    []model.TextPart{{Text: "You are a test.", Cache: true}},
		Messages:  []model.Message{{Role: model.RoleUser, Content: []model.Block{{Type: model.BlockText, Text: text}}}},
		MaxTokens: 1000,
		Tools: []model.Tool{{Name: "submit_result", Description: "Submit.", Schema: json.RawMessage(
			`{"type":"object","properties":{"status":{"type":"string"}},"required":["status"]}`)}},
	}
}

// deltas collects streamed deltas.
type deltas struct {
	mu  sync.Mutex
	all []model.Delta
}

func (d *deltas) on(x model.Delta) {
	d.mu.Lock()
	d.all = append(d.all, x)
	d.mu.Unlock()
}

func (d *deltas) text() string {
	var b strings.Builder
	for _, x := range d.all {
		if x.Type == model.DeltaText {
			b.WriteString(x.Text)
		}
		if x.Type == model.DeltaRetry {
			b.Reset()
		}
	}
	return b.String()
}

func (d *deltas) count(t model.DeltaType) int {
	n := 0
	for _, x := range d.all {
		if x.Type == t {
			n++
		}
	}
	return n
}

func jsonEqual(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("JSON = %s, want %s", got, want)
	}
}

var longText = strings.Repeat("The quick brown fox jumps over the lazy dog. ", 40)

// TestBehaviours runs one table of behaviours against both providers,
// through the official SDK clients, against the fake server.
func TestBehaviours(t *testing.T) {
	type call struct {
		name  string
		input string
	}
	cases := []struct {
		name   string
		script string
		text   string
		calls  []call
		stop   map[string]model.StopReason
		usage  model.Usage
		minTxt int // minimum number of text deltas
	}{
		{
			name:   "plain text",
			script: "turns:\n- response: {text: \"Hello, world.\", usage: {input: 10, output: 3}}\n",
			text:   "Hello, world.",
			stop:   map[string]model.StopReason{"anthropic": model.StopEndTurn, "openai": model.StopEndTurn},
			usage:  model.Usage{InputTokens: 10, OutputTokens: 3},
			minTxt: 2,
		},
		{
			name:   "streamed text",
			script: fmt.Sprintf("turns:\n- response: {text: %q}\n", longText),
			text:   longText,
			stop:   map[string]model.StopReason{"anthropic": model.StopEndTurn, "openai": model.StopEndTurn},
			usage:  model.Usage{InputTokens: 100, OutputTokens: 50},
			minTxt: 300,
		},
		{
			name: "one tool call",
			script: `turns:
- response:
    tool_calls: [{name: submit_result, input: {status: done, count: 3}}]
`,
			calls: []call{{"submit_result", `{"status":"done","count":3}`}},
			stop:  map[string]model.StopReason{"anthropic": model.StopToolUse, "openai": model.StopToolUse},
			usage: model.Usage{InputTokens: 100, OutputTokens: 50},
		},
		{
			name: "several tool calls after text",
			script: `turns:
- response:
    text: "Reading three files."
    tool_calls:
      - {name: read_file, input: {path: a.go}}
      - {name: read_file, input: {path: b.go}}
      - {name: grep, input: {pattern: "func main", paths: [x, y]}}
`,
			text: "Reading three files.",
			calls: []call{
				{"read_file", `{"path":"a.go"}`},
				{"read_file", `{"path":"b.go"}`},
				{"grep", `{"pattern":"func main","paths":["x","y"]}`},
			},
			stop:  map[string]model.StopReason{"anthropic": model.StopToolUse, "openai": model.StopToolUse},
			usage: model.Usage{InputTokens: 100, OutputTokens: 50},
		},
		{
			name: "tool arguments split across many chunks",
			script: `turns:
- response:
    tool_calls:
      - name: submit_result
        input:
          status: done
          summary: "A long summary with unicode — ünïcödé ✓ — that is streamed in many pieces."
          files: [internal/a.go, internal/b.go, internal/c.go]
          nested: {depth: {deeper: [1, 2.5, true, null]}}
`,
			calls: []call{{"submit_result", `{"status":"done","summary":"A long summary with unicode — ünïcödé ✓ — that is streamed in many pieces.","files":["internal/a.go","internal/b.go","internal/c.go"],"nested":{"depth":{"deeper":[1,2.5,true,null]}}}`}},
			stop:  map[string]model.StopReason{"anthropic": model.StopToolUse, "openai": model.StopToolUse},
			usage: model.Usage{InputTokens: 100, OutputTokens: 50},
		},
		{
			name:   "usage with cache tokens",
			script: "turns:\n- response: {text: ok, usage: {input: 1200, output: 300, cache_read: 1000, cache_write: 250}}\n",
			text:   "ok",
			stop:   map[string]model.StopReason{"anthropic": model.StopEndTurn, "openai": model.StopEndTurn},
			usage:  model.Usage{InputTokens: 1200, OutputTokens: 300, CacheReadTokens: 1000, CacheWriteTokens: 250},
		},
		{
			name:   "stop reason max_tokens",
			script: "turns:\n- response: {text: cut off, stop_reason: max_tokens}\n",
			text:   "cut off",
			stop:   map[string]model.StopReason{"anthropic": model.StopMaxTokens, "openai": model.StopMaxTokens},
			usage:  model.Usage{InputTokens: 100, OutputTokens: 50},
		},
		{
			// Chat Completions reports a stop sequence as a plain "stop".
			name:   "stop reason stop_sequence",
			script: "turns:\n- response: {text: until, stop_reason: stop_sequence}\n",
			text:   "until",
			stop:   map[string]model.StopReason{"anthropic": model.StopSequence, "openai": model.StopEndTurn},
			usage:  model.Usage{InputTokens: 100, OutputTokens: 50},
		},
	}
	for _, kind := range kinds {
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				srv, base := startFake(t, "defaults: {usage: {input: 100, output: 50}}\n"+tc.script)
				p := newProvider(kind, base, model.Options{})
				var d deltas
				resp, err := p.Stream(context.Background(), userReq("go"), d.on)
				if err != nil {
					t.Fatalf("Stream: %v", err)
				}
				if resp.Text != tc.text {
					t.Errorf("Text = %q, want %q", resp.Text, tc.text)
				}
				if got := d.text(); got != tc.text {
					t.Errorf("streamed text = %q, want %q", got, tc.text)
				}
				if n := d.count(model.DeltaText); n < tc.minTxt {
					t.Errorf("%d text deltas, want at least %d", n, tc.minTxt)
				}
				if len(resp.ToolCalls) != len(tc.calls) {
					t.Fatalf("%d tool calls, want %d: %+v", len(resp.ToolCalls), len(tc.calls), resp.ToolCalls)
				}
				ids := map[string]bool{}
				for i, c := range tc.calls {
					got := resp.ToolCalls[i]
					if got.Name != c.name {
						t.Errorf("call %d name = %q, want %q", i, got.Name, c.name)
					}
					if got.ID == "" || ids[got.ID] {
						t.Errorf("call %d id %q is empty or repeated", i, got.ID)
					}
					ids[got.ID] = true
					jsonEqual(t, got.Input, c.input)
				}
				if n := d.count(model.DeltaToolStart); n != len(tc.calls) {
					t.Errorf("%d tool_start deltas, want %d", n, len(tc.calls))
				}
				if resp.StopReason != tc.stop[kind] {
					t.Errorf("StopReason = %q, want %q", resp.StopReason, tc.stop[kind])
				}
				if resp.Usage != tc.usage {
					t.Errorf("Usage = %+v, want %+v", resp.Usage, tc.usage)
				}
				if resp.Model != "test-model" {
					t.Errorf("Model = %q", resp.Model)
				}
				if reqs := srv.Requests(); len(reqs) != 1 || !reqs[0].Stream {
					t.Errorf("server saw %d requests (stream=%v), want one streamed", len(reqs), len(reqs) > 0 && reqs[0].Stream)
				}
			})
		}
	}
}

// TestRequestEncoding checks what each provider puts on the wire.
func TestRequestEncoding(t *testing.T) {
	conv := model.Request{
		Model: "m",
		System: []model.TextPart{
			{Text: "stable instructions", Cache: true},
			{Text: "volatile part"},
		},
		Tools: []model.Tool{
			{Name: "read_file", Description: "Read.", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
			{Name: "submit_result", Description: "Submit.", Schema: json.RawMessage(`{"type":"object"}`)},
		},
		ToolChoice: model.ToolChoice{Mode: model.ToolChoiceTool, Name: "submit_result"},
		MaxTokens:  321,
		Stop:       []string{"END"},
		Messages: []model.Message{
			{Role: model.RoleUser, Content: []model.Block{{Type: model.BlockText, Text: "task-7"}}},
			{Role: model.RoleAssistant, Content: []model.Block{
				{Type: model.BlockText, Text: "reading"},
				{Type: model.BlockToolUse, ToolUseID: "call_1", ToolName: "read_file", Input: json.RawMessage(`{"path":"a"}`)},
			}},
			{Role: model.RoleUser, Content: []model.Block{
				{Type: model.BlockToolResult, ToolUseID: "call_1", Text: "contents of a", IsError: true},
				{Type: model.BlockText, Text: "continue"},
			}},
		},
	}
	script := `turns:
- match: {contains: "contents of a", last_contains: "continue", assistant_turns: 1, system_contains: "stable instructions", model: m}
  response: {text: ok}
`
	t.Run("anthropic", func(t *testing.T) {
		srv, base := startFake(t, script)
		if _, err := newProvider("anthropic", base, model.Options{}).Stream(context.Background(), conv, nil); err != nil {
			t.Fatal(err)
		}
		var body struct {
			System []struct {
				Text         string          `json:"text"`
				CacheControl json.RawMessage `json:"cache_control"`
			} `json:"system"`
			Tools []struct {
				Name         string          `json:"name"`
				InputSchema  json.RawMessage `json:"input_schema"`
				CacheControl json.RawMessage `json:"cache_control"`
			} `json:"tools"`
			ToolChoice    json.RawMessage   `json:"tool_choice"`
			MaxTokens     int               `json:"max_tokens"`
			StopSequences []string          `json:"stop_sequences"`
			Stream        bool              `json:"stream"`
			Messages      []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
			t.Fatal(err)
		}
		if len(body.System) != 2 || string(body.System[0].CacheControl) != `{"type":"ephemeral"}` || body.System[1].CacheControl != nil {
			t.Errorf("system = %+v, want cache_control on the first part only", body.System)
		}
		if len(body.Tools) != 2 || body.Tools[0].CacheControl != nil || string(body.Tools[1].CacheControl) != `{"type":"ephemeral"}` {
			t.Errorf("tools = %+v, want cache_control on the last tool only", body.Tools)
		}
		jsonEqual(t, body.Tools[0].InputSchema, `{"type":"object","properties":{"path":{"type":"string"}}}`)
		jsonEqual(t, body.ToolChoice, `{"type":"tool","name":"submit_result"}`)
		if body.MaxTokens != 321 || !reflect.DeepEqual(body.StopSequences, []string{"END"}) || !body.Stream {
			t.Errorf("max_tokens=%d stop=%v stream=%v", body.MaxTokens, body.StopSequences, body.Stream)
		}
		if len(body.Messages) != 3 {
			t.Fatalf("%d messages, want 3", len(body.Messages))
		}
		jsonEqual(t, body.Messages[2], `{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","is_error":true,"content":[{"type":"text","text":"contents of a"}]},{"type":"text","text":"continue"}]}`)
	})
	t.Run("openai", func(t *testing.T) {
		srv, base := startFake(t, script)
		if _, err := newProvider("openai", base, model.Options{}).Stream(context.Background(), conv, nil); err != nil {
			t.Fatal(err)
		}
		var body struct {
			Messages      []json.RawMessage `json:"messages"`
			Tools         []json.RawMessage `json:"tools"`
			ToolChoice    json.RawMessage   `json:"tool_choice"`
			MaxTokens     int               `json:"max_tokens"`
			Stop          []string          `json:"stop"`
			StreamOptions json.RawMessage   `json:"stream_options"`
		}
		if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, body.StreamOptions, `{"include_usage":true}`)
		jsonEqual(t, body.ToolChoice, `{"type":"function","function":{"name":"submit_result"}}`)
		if body.MaxTokens != 321 || !reflect.DeepEqual(body.Stop, []string{"END"}) {
			t.Errorf("max_tokens=%d stop=%v", body.MaxTokens, body.Stop)
		}
		if len(body.Tools) != 2 {
			t.Fatalf("%d tools", len(body.Tools))
		}
		jsonEqual(t, body.Tools[0], `{"type":"function","function":{"name":"read_file","description":"Read.","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}`)
		want := []string{
			`{"role":"system","content":"stable instructions\n\nvolatile part"}`,
			`{"role":"user","content":"task-7"}`,
			`{"role":"assistant","content":"reading","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}}]}`,
			`{"role":"tool","tool_call_id":"call_1","content":"Error: contents of a"}`,
			`{"role":"user","content":"continue"}`,
		}
		if len(body.Messages) != len(want) {
			t.Fatalf("%d messages, want %d", len(body.Messages), len(want))
		}
		for i, w := range want {
			jsonEqual(t, body.Messages[i], w)
		}
	})
}

func TestFaults(t *testing.T) {
	for _, kind := range kinds {
		envVar := map[string]string{"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}[kind]
		t.Run(kind+"/429 honours retry-after", func(t *testing.T) {
			srv, base := startFake(t, `turns:
- {name: limited, fault: {status: 429, retry_after: 3}}
- {name: ok, response: {text: fine}}
`)
			var s sleeps
			var d deltas
			resp, err := newProvider(kind, base, model.Options{Sleep: s.sleep}).Stream(context.Background(), userReq("x"), d.on)
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if resp.Text != "fine" {
				t.Errorf("Text = %q", resp.Text)
			}
			w := s.waits()
			if len(w) != 1 || w[0] < 3*time.Second {
				t.Errorf("waits = %v, want one of at least 3s", w)
			}
			if n := d.count(model.DeltaRetry); n != 1 {
				t.Errorf("%d retry deltas, want 1", n)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
		})
		t.Run(kind+"/three 500s then success", func(t *testing.T) {
			srv, base := startFake(t, `turns:
- {fault: {status: 500}}
- {fault: {status: 503}}
- {fault: {status: 529}}
- {response: {text: recovered}}
`)
			var s sleeps
			resp, err := newProvider(kind, base, model.Options{Sleep: s.sleep}).Stream(context.Background(), userReq("x"), nil)
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if resp.Text != "recovered" {
				t.Errorf("Text = %q", resp.Text)
			}
			w := s.waits()
			if len(w) != 3 {
				t.Fatalf("waits = %v, want 3", w)
			}
			// Exponential: each wait's range starts where the last one's
			// doubled lower bound is.
			if !(w[0] < w[1] && w[1] < w[2]) {
				t.Errorf("waits %v do not grow", w)
			}
			if n := len(srv.Requests()); n != 4 {
				t.Errorf("%d requests, want 4", n)
			}
		})
		t.Run(kind+"/stream cut mid tool call is retried, not half-applied", func(t *testing.T) {
			srv, base := startFake(t, `turns:
- name: cut
  fault: {drop_after_events: 6}
  response: {text: "Writing it", tool_calls: [{name: write_file, input: {path: a.go, content: "package a\n\nfunc A() int { return 1 }\n"}}]}
- name: whole
  response: {text: "Writing it", tool_calls: [{name: write_file, input: {path: a.go, content: "package a\n\nfunc A() int { return 1 }\n"}}]}
`)
			var s sleeps
			var d deltas
			resp, err := newProvider(kind, base, model.Options{Sleep: s.sleep}).Stream(context.Background(), userReq("x"), d.on)
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if len(resp.ToolCalls) != 1 {
				t.Fatalf("%d tool calls, want 1: %+v", len(resp.ToolCalls), resp.ToolCalls)
			}
			jsonEqual(t, resp.ToolCalls[0].Input, `{"path":"a.go","content":"package a\n\nfunc A() int { return 1 }\n"}`)
			if resp.Text != "Writing it" {
				t.Errorf("Text = %q (deltas of the cut attempt leaked?)", resp.Text)
			}
			if d.count(model.DeltaRetry) != 1 || d.text() != "Writing it" {
				t.Errorf("deltas after the retry = %q (%d retries)", d.text(), d.count(model.DeltaRetry))
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
		})
		t.Run(kind+"/401 fails at once naming the variable", func(t *testing.T) {
			srv, base := startFake(t, `turns:
- {fault: {status: 401, body: "invalid x-api-key"}}
- {response: {text: never}}
`)
			var s sleeps
			_, err := newProvider(kind, base, model.Options{Sleep: s.sleep}).Stream(context.Background(), userReq("x"), nil)
			if !errors.Is(err, model.ErrAuth) {
				t.Fatalf("err = %v, want ErrAuth", err)
			}
			for _, want := range []string{kind, envVar, "401", "test-model"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if len(s.waits()) != 0 || len(srv.Requests()) != 1 {
				t.Errorf("retried: %d waits, %d requests", len(s.waits()), len(srv.Requests()))
			}
		})
		t.Run(kind+"/400 is not retried", func(t *testing.T) {
			srv, base := startFake(t, `turns:
- {fault: {status: 400, body: "messages: bad"}}
- {response: {text: never}}
`)
			_, err := newProvider(kind, base, model.Options{Sleep: (&sleeps{}).sleep}).Stream(context.Background(), userReq("x"), nil)
			var ae *model.APIError
			if !errors.Is(err, model.ErrInvalidRequest) || !errors.As(err, &ae) || ae.Status != 400 || ae.Attempts != 1 {
				t.Fatalf("err = %v, want a 400 APIError after one attempt", err)
			}
			if !strings.Contains(err.Error(), "messages: bad") {
				t.Errorf("error %q lacks the provider's message", err)
			}
			if len(srv.Requests()) != 1 {
				t.Errorf("%d requests", len(srv.Requests()))
			}
		})
		t.Run(kind+"/attempts are bounded and the error names provider model and status", func(t *testing.T) {
			srv, base := startFake(t, "turns:\n- {repeat: true, fault: {status: 502}}\n")
			_, err := newProvider(kind, base, model.Options{Sleep: (&sleeps{}).sleep, MaxAttempts: 3}).Stream(context.Background(), userReq("x"), nil)
			var ae *model.APIError
			if !errors.As(err, &ae) || ae.Status != 502 || ae.Attempts != 3 || ae.Provider != kind || ae.Model != "test-model" {
				t.Fatalf("err = %#v", err)
			}
			for _, want := range []string{kind, "test-model", "502", "3 attempts"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if len(srv.Requests()) != 3 {
				t.Errorf("%d requests, want 3", len(srv.Requests()))
			}
		})
		t.Run(kind+"/stall mid-stream is cut and retried", func(t *testing.T) {
			srv, base := startFake(t, `turns:
- {name: stuck, fault: {stall_after_events: 3}, response: {text: "one two three four five"}}
- {name: ok, response: {text: "one two three four five"}}
`)
			var s sleeps
			start := time.Now()
			resp, err := newProvider(kind, base, model.Options{Sleep: s.sleep, StallTimeout: 150 * time.Millisecond}).Stream(context.Background(), userReq("x"), nil)
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if resp.Text != "one two three four five" {
				t.Errorf("Text = %q", resp.Text)
			}
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("took %v", el)
			}
			if len(srv.Requests()) != 2 {
				t.Errorf("%d requests, want 2", len(srv.Requests()))
			}
		})
		t.Run(kind+"/stall before headers gives ErrStalled when attempts run out", func(t *testing.T) {
			_, base := startFake(t, "turns:\n- {repeat: true, delay: 900ms, response: {text: late}}\n")
			_, err := newProvider(kind, base, model.Options{Sleep: (&sleeps{}).sleep, StallTimeout: 100 * time.Millisecond, MaxAttempts: 2}).Stream(context.Background(), userReq("x"), nil)
			if !errors.Is(err, model.ErrStalled) {
				t.Fatalf("err = %v, want ErrStalled", err)
			}
		})
		t.Run(kind+"/call deadline", func(t *testing.T) {
			_, base := startFake(t, "turns:\n- {repeat: true, delay: 900ms, response: {text: late}}\n")
			_, err := newProvider(kind, base, model.Options{Timeout: 100 * time.Millisecond}).Stream(context.Background(), userReq("x"), nil)
			if !errors.Is(err, model.ErrTimeout) {
				t.Fatalf("err = %v, want ErrTimeout", err)
			}
		})
		t.Run(kind+"/cancellation", func(t *testing.T) {
			_, base := startFake(t, "turns:\n- {repeat: true, delay: 900ms, response: {text: late}}\n")
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			_, err := newProvider(kind, base, model.Options{}).Stream(ctx, userReq("x"), nil)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
		})
		t.Run(kind+"/missing key against the official endpoint", func(t *testing.T) {
			var p model.Provider
			if kind == "anthropic" {
				p = model.NewAnthropic(model.Options{})
			} else {
				p = model.NewOpenAI(model.Options{})
			}
			_, err := p.Stream(context.Background(), userReq("x"), nil)
			if !errors.Is(err, model.ErrAuth) || !strings.Contains(err.Error(), envVar) {
				t.Fatalf("err = %v, want ErrAuth naming %s", err, envVar)
			}
		})
	}
}

// TestParallelConversations checks concurrent callers each get the turn
// that matches them.
func TestParallelConversations(t *testing.T) {
	var script strings.Builder
	script.WriteString("turns:\n")
	for i := range 8 {
		fmt.Fprintf(&script, "- {name: t%d, match: {contains: \"task-%d\"}, response: {text: \"answer %d\"}}\n", i, i, i)
	}
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			srv, base := startFake(t, script.String())
			p := newProvider(kind, base, model.Options{})
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for i := range 8 {
				wg.Go(func() {
					resp, err := p.Stream(context.Background(), userReq(fmt.Sprintf("do task-%d", i)), nil)
					if err != nil {
						errs <- err
						return
					}
					if want := fmt.Sprintf("answer %d", i); resp.Text != want {
						errs <- fmt.Errorf("task-%d got %q", i, resp.Text)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if n := len(srv.Remaining()); n != 0 {
				t.Errorf("%d turns unused", n)
			}
		})
	}
}

// TestUnmatchedRequest checks the 400 names the available turn and why.
func TestUnmatchedRequest(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			_, base := startFake(t, "turns:\n- {name: research, match: {system_contains: researcher}, response: {text: x}}\n")
			_, err := newProvider(kind, base, model.Options{}).Stream(context.Background(), userReq("x"), nil)
			if !errors.Is(err, model.ErrInvalidRequest) {
				t.Fatalf("err = %v, want ErrInvalidRequest", err)
			}
			for _, want := range []string{"research", `system prompt does not contain \"researcher\"`} {
				if !strings.Contains(err.Error(), want) && !strings.Contains(err.Error(), strings.ReplaceAll(want, `\"`, `"`)) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}
