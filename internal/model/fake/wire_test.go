package fake_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/sluice-run/sluice/internal/model/fake"
)

type sseEvent struct {
	name string
	data []byte
}

func parseSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != nil {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = append(cur.data, strings.TrimPrefix(line, "data: ")...)
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur.data != nil {
		t.Fatalf("stream ends without a blank line after its last event")
	}
	return out
}

// keyPaths lists every object key path in a JSON value, arrays as [].
func keyPaths(prefix string, v any, into map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			p := prefix + "." + k
			into[p] = true
			keyPaths(p, e, into)
		}
	case []any:
		for _, e := range v {
			keyPaths(prefix+"[]", e, into)
		}
	}
}

func decode(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("event data %s: %v", data, err)
	}
	return m
}

func anthropicKind(t *testing.T, e sseEvent) string {
	m := decode(t, e.data)
	if m["type"] != e.name {
		t.Errorf("event %q carries type %v", e.name, m["type"])
	}
	switch e.name {
	case "content_block_start":
		return e.name + ":" + m["content_block"].(map[string]any)["type"].(string)
	case "content_block_delta":
		return e.name + ":" + m["delta"].(map[string]any)["type"].(string)
	}
	return e.name
}

func openaiKind(t *testing.T, e sseEvent) string {
	if e.name != "" {
		t.Errorf("Chat Completions chunks have no event name, got %q", e.name)
	}
	if string(e.data) == "[DONE]" {
		return "[DONE]"
	}
	m := decode(t, e.data)
	choices := m["choices"].([]any)
	if len(choices) == 0 {
		return "usage"
	}
	c := choices[0].(map[string]any)
	if c["finish_reason"] != nil {
		return "finish"
	}
	d := c["delta"].(map[string]any)
	calls, _ := d["tool_calls"].([]any)
	switch {
	case d["role"] != nil && len(calls) > 0:
		return "first+tool_start"
	case d["role"] != nil:
		return "first"
	case len(calls) > 0 && calls[0].(map[string]any)["id"] != nil:
		return "tool_start"
	case len(calls) > 0:
		return "tool_args"
	}
	return "content"
}

// shape is a stream's event order (runs of one kind collapsed) and the
// field names seen for each kind.
type shape struct {
	order  []string
	fields map[string][]string
}

func shapeOf(t *testing.T, events []sseEvent, kind func(*testing.T, sseEvent) string) shape {
	s := shape{fields: map[string][]string{}}
	sets := map[string]map[string]bool{}
	for _, e := range events {
		k := kind(t, e)
		if len(s.order) == 0 || s.order[len(s.order)-1] != k {
			s.order = append(s.order, k)
		}
		if sets[k] == nil {
			sets[k] = map[string]bool{}
		}
		if string(e.data) != "[DONE]" {
			var v any
			_ = json.Unmarshal(e.data, &v)
			keyPaths("", v, sets[k])
		}
	}
	for k, set := range sets {
		for p := range set {
			s.fields[k] = append(s.fields[k], p)
		}
		sort.Strings(s.fields[k])
	}
	return s
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func serve(t *testing.T, script string, opts ...fake.Option) (*fake.Server, string) {
	t.Helper()
	s, err := fake.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	srv := fake.NewServer(s, opts...)
	base, stop, err := fake.Listen(context.Background(), "127.0.0.1:0", srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	return srv, base
}

// TestWireFidelity compares the fake server's SSE framing with transcripts
// written from the providers' documentation: event order and field names.
func TestWireFidelity(t *testing.T) {
	cases := []struct {
		transcript, path, body, script string
		kind                           func(*testing.T, sseEvent) string
	}{
		{
			transcript: "anthropic_text.sse", path: fake.PathMessages,
			body:   `{"model":"claude-opus-4-6","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`,
			script: `turns: [{response: {text: "Hello there, friend!"}}]`,
			kind:   anthropicKind,
		},
		{
			transcript: "anthropic_tool.sse", path: fake.PathMessages,
			body:   `{"model":"claude-opus-4-6","max_tokens":100,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"Weather?"}]}]}`,
			script: `turns: [{response: {text: "Okay, let's check the weather.", tool_calls: [{name: get_weather, input: {location: "San Francisco, CA"}}]}}]`,
			kind:   anthropicKind,
		},
		{
			transcript: "openai_text.sse", path: fake.PathChatCompletions,
			body:   `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hello"}]}`,
			script: `turns: [{response: {text: "Hello there, friend!", usage: {input: 86, output: 300, cache_read: 1920}}}]`,
			kind:   openaiKind,
		},
		{
			transcript: "openai_tool.sse", path: fake.PathChatCompletions,
			body:   `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Weather?"}]}`,
			script: `turns: [{response: {tool_calls: [{name: get_weather, input: {location: "Paris, France"}}, {name: get_weather, input: {location: "Rome, Italy"}}]}}]`,
			kind:   openaiKind,
		},
	}
	for _, tc := range cases {
		t.Run(tc.transcript, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tc.transcript))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			want := shapeOf(t, parseSSE(t, f), tc.kind)

			_, base := serve(t, tc.script)
			resp := post(t, base+tc.path, tc.body)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			got := shapeOf(t, parseSSE(t, resp.Body), tc.kind)
			if !reflect.DeepEqual(got.order, want.order) {
				t.Errorf("event order:\n got  %v\n want %v", got.order, want.order)
			}
			for k, w := range want.fields {
				if g := got.fields[k]; !reflect.DeepEqual(g, w) {
					t.Errorf("fields of %s:\n got  %v\n want %v", k, g, w)
				}
			}
		})
	}
}

// TestToolArgumentsAreChunked checks that arguments arrive in several
// pieces that join to the whole, on both protocols.
func TestToolArgumentsAreChunked(t *testing.T) {
	script := `turns: [{repeat: true, response: {tool_calls: [{name: submit_result, input: {status: done, summary: "all tests pass ✓"}}]}}]`
	_, base := serve(t, script)
	want := `{"status":"done","summary":"all tests pass ✓"}`

	var pieces []string
	for _, e := range parseSSE(t, post(t, base+fake.PathMessages, `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"x"}]}`).Body) {
		if e.name == "content_block_delta" {
			var d struct {
				Delta struct {
					PartialJSON string `json:"partial_json"`
				} `json:"delta"`
			}
			_ = json.Unmarshal(e.data, &d)
			pieces = append(pieces, d.Delta.PartialJSON)
		}
	}
	if len(pieces) < 3 || strings.Join(pieces, "") != want {
		t.Errorf("anthropic pieces %q, want 3 or more joining to %s", pieces, want)
	}

	pieces = nil
	for _, e := range parseSSE(t, post(t, base+fake.PathChatCompletions, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`).Body) {
		var c struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Function struct {
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if string(e.data) == "[DONE]" {
			continue
		}
		_ = json.Unmarshal(e.data, &c)
		if len(c.Choices) > 0 && len(c.Choices[0].Delta.ToolCalls) > 0 && c.Choices[0].Delta.ToolCalls[0].Function.Arguments != "" {
			pieces = append(pieces, c.Choices[0].Delta.ToolCalls[0].Function.Arguments)
		}
	}
	if len(pieces) < 3 || strings.Join(pieces, "") != want {
		t.Errorf("openai pieces %q, want 3 or more joining to %s", pieces, want)
	}
}

// TestJSONResponses checks the non-streaming shapes.
func TestJSONResponses(t *testing.T) {
	script := `turns: [{repeat: true, response: {text: hi, tool_calls: [{name: f, input: {a: 1}}], usage: {input: 5, output: 7, cache_read: 3}}}]`
	_, base := serve(t, script)

	var a struct {
		Type       string `json:"type"`
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type  string          `json:"type"`
			Text  string          `json:"text"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
		Usage map[string]int `json:"usage"`
	}
	if err := json.NewDecoder(post(t, base+fake.PathMessages, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"x"}]}`).Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	if a.Type != "message" || a.StopReason != "tool_use" || len(a.Content) != 2 || a.Content[0].Text != "hi" ||
		a.Content[1].Name != "f" || string(a.Content[1].Input) != `{"a":1}` || a.Usage["cache_read_input_tokens"] != 3 || a.Usage["output_tokens"] != 7 {
		t.Errorf("anthropic JSON response = %+v", a)
	}

	var o struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				ToolCalls []struct {
					Function struct{ Name, Arguments string } `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens        int `json:"prompt_tokens"`
			PromptTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(post(t, base+fake.PathChatCompletions, `{"model":"m","messages":[{"role":"user","content":"x"}]}`).Body).Decode(&o); err != nil {
		t.Fatal(err)
	}
	if o.Object != "chat.completion" || len(o.Choices) != 1 || o.Choices[0].FinishReason != "tool_calls" || o.Choices[0].Message.Content != "hi" ||
		o.Choices[0].Message.ToolCalls[0].Function.Arguments != `{"a":1}` || o.Usage.PromptTokens != 8 || o.Usage.PromptTokensDetails.CachedTokens != 3 {
		t.Errorf("openai JSON response = %+v", o)
	}
}

func TestMatchingAndRecording(t *testing.T) {
	var rec bytes.Buffer
	srv, base := serve(t, `turns:
- {name: second, match: {assistant_turns: 1}, response: {text: "two"}}
- {name: first, match: {system_contains: planner, model: m1}, response: {text: "one"}}
- {name: always, repeat: true, match: {last_contains: ping}, response: {text: pong}}
`, fake.WithRecord(&rec))

	ask := func(body string) (int, string) {
		resp := post(t, base+fake.PathMessages, body)
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, b := ask(`{"model":"m1","max_tokens":5,"system":[{"type":"text","text":"You are the planner."}],"messages":[{"role":"user","content":"plan"}]}`); code != 200 || !strings.Contains(b, `"one"`) {
		t.Fatalf("first: %d %s", code, b)
	}
	// "first" is used up: the same request now matches nothing.
	code, b := ask(`{"model":"m1","max_tokens":5,"system":"You are the planner.","messages":[{"role":"user","content":"plan"}]}`)
	if code != 400 || !strings.Contains(b, `"invalid_request_error"`) || !strings.Contains(b, "turn 0 (second)") || !strings.Contains(b, "0 assistant messages, want 1") {
		t.Fatalf("unmatched: %d %s", code, b)
	}
	if code, b := ask(`{"model":"m1","max_tokens":5,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"result"}]}]}`); code != 200 || !strings.Contains(b, `"two"`) {
		t.Fatalf("second: %d %s", code, b)
	}
	for range 3 {
		if code, b := ask(`{"model":"m1","max_tokens":5,"messages":[{"role":"user","content":"ping"}]}`); code != 200 || !strings.Contains(b, "pong") {
			t.Fatalf("repeat: %d %s", code, b)
		}
	}
	if r := srv.Remaining(); len(r) != 0 {
		t.Errorf("Remaining = %v", r)
	}
	reqs := srv.Requests()
	if len(reqs) != 6 || reqs[0].Turn != "first" || reqs[1].TurnIndex != -1 || reqs[2].Turn != "second" || reqs[5].Turn != "always" {
		t.Errorf("Requests = %+v", reqs)
	}
	lines := strings.Split(strings.TrimSpace(rec.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d record lines, want 6", len(lines))
	}
	var first fake.Recorded
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first.Endpoint != fake.PathMessages || first.Model != "m1" || first.Turn != "first" || !strings.Contains(string(first.Body), "planner") {
		t.Errorf("record = %+v", first)
	}
}

func TestParseScriptErrors(t *testing.T) {
	cases := map[string]string{
		"":                              "empty",
		"turns: []":                     "no turns",
		"turns: [{respnse: {text: x}}]": "respnse",
		"turns: [{delay: fast}]":        "bad duration",
		"turns: [{name: x, fault: {retry_after: 1}}]":              "turn 0 (x): fault needs",
		"turns: [{fault: {status: 200}}]":                          "not an HTTP error status",
		"turns: [{response: {stop_reason: done}}]":                 "unknown stop_reason",
		"turns: [{response: {tool_calls: [{input: {a: 1}}]}}]":     "has no name",
		"turns: [{response: {tool_calls: [{name: f, input: 3}]}}]": "must be a mapping",
	}
	for src, want := range cases {
		_, err := fake.ParseScript([]byte(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseScript(%q) = %v, want error containing %q", src, err, want)
		}
	}
	s, err := fake.ParseScript([]byte("defaults: {delay: 5ms}\nturns:\n- {response: {tool_calls: [{name: f, input: {1: true}}]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s.Turns[0].Response.ToolCalls[0].Input); got != "map[1:true]" {
		t.Errorf("input = %s", got)
	}
}
