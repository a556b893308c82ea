package agentrt

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-run/sluice/internal/model"
	"github.com/sluice-run/sluice/internal/tools"
)

func readTool(files map[string]string) *fakeTool {
	return &fakeTool{name: "read_file", schema: pathSchema, readOnly: true,
		fn: func(_ context.Context, in json.RawMessage) (string, error) {
			var a struct{ Path string }
			if err := json.Unmarshal(in, &a); err != nil {
				return "", err
			}
			s, ok := files[a.Path]
			if !ok {
				return "", fmt.Errorf("read_file %s: no such file", a.Path)
			}
			return s, nil
		}}
}

func baseSpec(ts ...tools.Tool) Spec {
	return Spec{
		Role:         "executor",
		Model:        "test-model",
		System:       []model.TextPart{{Text: "You are the executor."}, {Text: "Project instructions: use tabs."}},
		Delegation:   "task_id: task-001\nfeature_name: add a greeting",
		Tools:        ts,
		ResultSchema: json.RawMessage(resultSchema),
		MaxTurns:     10,
	}
}

func failureOf(t *testing.T, err error) *Failure {
	t.Helper()
	var f *Failure
	if !errors.As(err, &f) {
		t.Fatalf("error %v (%T) is not a *Failure", err, err)
	}
	return f
}

func TestRunHappyPathLayoutAndTranscript(t *testing.T) {
	zed := &fakeTool{name: "zed", schema: `{"type":"object"}`, readOnly: true,
		fn: func(context.Context, json.RawMessage) (string, error) { return "z", nil }}
	p := &scriptProvider{t: t, steps: []func(model.Request) (*model.Response, error){
		reply("Reading.", call("c1", "read_file", `{"path":"a.go"}`)),
		reply("", call("c2", SubmitResultName, `{"summary":"done","files_modified":["a.go"]}`)),
	}}
	var tr bytes.Buffer
	var after []model.Usage
	var toolsSeen []string
	hooks := Hooks{
		AfterCall: func(u model.Usage) { after = append(after, u) },
		OnTool:    func(name string, _ json.RawMessage) { toolsSeen = append(toolsSeen, name) },
	}
	res, err := Run(context.Background(), p, baseSpec(zed, readTool(map[string]string{"a.go": "package a\n"})), hooks, &tr)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Output) != `{"summary":"done","files_modified":["a.go"]}` {
		t.Errorf("output = %s", res.Output)
	}
	if res.Turns != 2 || res.ToolCalls != 1 || res.Usage.InputTokens != 200 || res.Usage.OutputTokens != 20 {
		t.Errorf("result = %+v", res)
	}
	if len(after) != 2 {
		t.Errorf("AfterCall ran %d times, want 2", len(after))
	}
	if strings.Join(toolsSeen, ",") != "read_file,submit_result" {
		t.Errorf("OnTool saw %v", toolsSeen)
	}

	reqs := p.requests()
	first := reqs[0]
	var names []string
	for _, tl := range first.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "read_file,zed,submit_result" {
		t.Errorf("tool order = %s, want sorted with submit_result last", got)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, []byte(resultSchema)); err != nil {
		t.Fatal(err)
	}
	if string(first.Tools[2].Schema) != want.String() {
		t.Errorf("submit_result schema = %s", first.Tools[2].Schema)
	}
	if len(first.System) != 2 || first.System[0].Cache || !first.System[1].Cache {
		t.Errorf("system = %+v, want cache mark on the last part only", first.System)
	}
	if first.Messages[0].Role != model.RoleUser || first.Messages[0].Content[0].Text != baseSpec().Delegation {
		t.Errorf("first message = %+v, want the delegation", first.Messages[0])
	}
	if first.Model != "test-model" || first.MaxTokens != DefaultMaxOutputTokens {
		t.Errorf("model %q max_tokens %d", first.Model, first.MaxTokens)
	}
	tr2 := toolResults(reqs[1])
	if len(tr2) != 1 || tr2[0].ToolUseID != "c1" || tr2[0].Text != "package a\n" || tr2[0].IsError {
		t.Errorf("tool result = %+v", tr2)
	}

	var types []string
	sc := bufio.NewScanner(&tr)
	sc.Buffer(nil, 1<<20)
	var last TranscriptEvent
	for sc.Scan() {
		var e TranscriptEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("transcript line %q: %v", sc.Text(), err)
		}
		types = append(types, e.Type)
		last = e
	}
	wantEvents := "start,message,message,tool_calls,message,message,tool_calls,message,end"
	if got := strings.Join(types, ","); got != wantEvents {
		t.Errorf("transcript events = %s\nwant %s", got, wantEvents)
	}
	if last.Outcome != "result" || last.Usage == nil || last.Usage.InputTokens != 200 {
		t.Errorf("end event = %+v", last)
	}
}

func TestRunToolErrorsThenMaxTurns(t *testing.T) {
	p := &scriptProvider{t: t, steps: []func(model.Request) (*model.Response, error){
		reply("", call("c1", "frobnicate", `{}`)),
		reply("", call("c2", "read_file", `{"path": 42, "extra": true}`)),
		reply("", call("c3", "read_file", `{"path": "a.go"`)), // cut-off JSON
		reply("", call("c4", "read_file", `{"path":"missing.go"}`)),
	}}
	spec := baseSpec(readTool(map[string]string{"a.go": "x"}))
	spec.MaxTurns = 4
	_, err := Run(context.Background(), p, spec, Hooks{}, nil)
	f := failureOf(t, err)
	if f.Reason != ReasonMaxTurns || f.Turns != 4 {
		t.Fatalf("failure = %+v, want max_turns after 4 turns", f)
	}
	reqs := p.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d calls, want 4", len(reqs))
	}
	r1 := toolResults(reqs[1])[0]
	if !r1.IsError || !strings.Contains(r1.Text, `unknown tool "frobnicate"`) || !strings.Contains(r1.Text, "read_file, submit_result") {
		t.Errorf("unknown tool result = %+v", r1)
	}
	r2 := toolResults(reqs[2])[0]
	if !r2.IsError || !strings.Contains(r2.Text, "do not match its input schema") ||
		!strings.Contains(r2.Text, "at /path") || !strings.Contains(r2.Text, "extra") {
		t.Errorf("schema failure result = %+v", r2)
	}
	r3 := toolResults(reqs[3])[0]
	if !r3.IsError || !strings.Contains(r3.Text, "not valid JSON") {
		t.Errorf("bad JSON result = %+v", r3)
	}
	// The cut-off arguments must not poison the history sent back.
	for _, b := range reqs[3].Messages[len(reqs[3].Messages)-2].Content {
		if b.Type == model.BlockToolUse && string(b.Input) != "{}" {
			t.Errorf("invalid tool input replayed as %s", b.Input)
		}
	}
	// The last allowed turn forces submit_result and says so.
	if tc := reqs[3].ToolChoice; tc.Mode != model.ToolChoiceTool || tc.Name != SubmitResultName {
		t.Errorf("last turn tool choice = %+v", tc)
	}
	lastMsg := reqs[3].Messages[len(reqs[3].Messages)-1]
	if !strings.Contains(lastMsg.Content[len(lastMsg.Content)-1].Text, "one turn left") {
		t.Errorf("last turn has no warning: %+v", lastMsg)
	}
	if reqs[2].ToolChoice.Mode != model.ToolChoiceAuto {
		t.Errorf("an earlier turn forced a tool: %+v", reqs[2].ToolChoice)
	}
}

func TestRunRepairOnce(t *testing.T) {
	t.Run("repaired", func(t *testing.T) {
		p := &scriptProvider{t: t, steps: []func(model.Request) (*model.Response, error){
			reply("", call("c1", SubmitResultName, `{"summary":""}`)),
			reply("", call("c2", SubmitResultName, `{"summary":"ok","files_modified":[]}`)),
		}}
		res, err := Run(context.Background(), p, baseSpec(), Hooks{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Repairs != 1 {
			t.Errorf("repairs = %d", res.Repairs)
		}
		r := toolResults(p.requests()[1])[0]
		if !r.IsError || !strings.Contains(r.Text, "files_modified") || !strings.Contains(r.Text, "only repair attempt") {
			t.Errorf("repair message = %q", r.Text)
		}
	})
	t.Run("invalid twice", func(t *testing.T) {
		p := &scriptProvider{t: t, steps: []func(model.Request) (*model.Response, error){
			reply("", call("c1", SubmitResultName, `{"summary":"x"}`)),
			reply("", call("c2", SubmitResultName, `{"summary":"x","files_modified":"a.go"}`)),
		}}
		_, err := Run(context.Background(), p, baseSpec(), Hooks{}, nil)
		f := failureOf(t, err)
		if f.Reason != ReasonInvalidResult || !strings.Contains(f.Detail, "/files_modified") {
			t.Errorf("failure = %+v", f)
		}
	})
	t.Run("semantic validation", func(t *testing.T) {
		p := &scriptProvider{t: t, steps: []func(model.Request) (*model.Response, error){
			reply("", call("c1", SubmitResultName, `{"summary":"x","files_modified":[]}`)),
			reply("", call("c2", SubmitResultName, `{"summary":"x","files_modified":["a.go"]}`)),
		}}
		spec := baseSpec()
		spec.Validate = func(out json.RawMessage) error {
			var v struct {
				Files []string `json:"files_modified"`
			}
			if err := json.Unmarshal(out, &v); err != nil {
				return err
			}
			if len(v.Files) == 0 {
				return errors.New("files_modified must name the files of files_to_modify")
			}
			return nil
		}
		res, err := Run(context.Background(), p, spec, Hooks{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Output) != `{"summary":"x","files_modified":["a.go"]}` {
			t.Errorf("output = %s", res.Output)
		}
		if r := toolResults(p.requests()[1])[0]; !strings.Contains(r.Text, "must name the files") {
			t.Errorf("repair message = %q", r.Text)
		}
	})
}

func TestRunTextResult(t *testing.T) {
	t.Run("reminder then yaml RESULT", func(t *testing.T) {
		p := &scriptProvider{t: t, steps: []func(model.Request) (*model.Response, error){
			reply("I am done."),
			reply("All good.\n\n## RESULT\n\n```yaml\nexecutor_output:\n  summary: added greeting\n  files_modified: [\"a.go\"]\n```\n"),
		}}
		res, err := Run(context.Background(), p, baseSpec(), Hooks{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(res.Output, &got); err != nil || got["summary"] != "added greeting" {
			t.Errorf("output = %s (%v)", res.Output, err)
		}
		msgs := p.requests()[1].Messages
		if last := msgs[len(msgs)-1]; !strings.Contains(last.Content[0].Text, "without calling submit_result") {
			t.Errorf("no reminder: %+v", last)
		}
	})
	t.Run("no result after reminder", func(t *testing.T) {
		p := &scriptProvider{t: t, steps: []func(model.Request) (*model.Response, error){
			reply("done"), reply(""),
		}}
		_, err := Run(context.Background(), p, baseSpec(), Hooks{}, nil)
		if f := failureOf(t, err); f.Reason != ReasonNoResult {
			t.Errorf("failure = %+v", f)
		}
	})
	t.Run("invalid text result gets one repair", func(t *testing.T) {
		p := &scriptProvider{t: t, steps: []func(model.Request) (*model.Response, error){
			reply("RESULT\n```json\n{\"summary\": 3}\n```"),
			reply("RESULT\n```json\n{\"summary\": \"s\"}\n```"),
		}}
		_, err := Run(context.Background(), p, baseSpec(), Hooks{}, nil)
		f := failureOf(t, err)
		if f.Reason != ReasonInvalidResult {
			t.Errorf("failure = %+v", f)
		}
		msgs := p.requests()[1].Messages
		if last := msgs[len(msgs)-1]; !strings.Contains(last.Content[0].Text, "/summary") {
			t.Errorf("repair message does not quote the error: %+v", last)
		}
	})
}

func TestRunModelNonsense(t *testing.T) {
	p := &scriptProvider{t: t, steps: []func(model.Request) (*model.Response, error){
		func(model.Request) (*model.Response, error) { return &model.Response{}, nil }, // empty
		reply("", model.ToolCall{Name: "read_file", Input: json.RawMessage(`[1,2]`)}),
		reply("", model.ToolCall{ID: "x", Name: "", Input: nil}),
		reply("", call("y", SubmitResultName, `not json`)),
		func(model.Request) (*model.Response, error) { return nil, nil },
	}}
	_, err := Run(context.Background(), p, baseSpec(readTool(nil)), Hooks{}, nil)
	f := failureOf(t, err)
	if f.Reason != ReasonModelError {
		t.Fatalf("failure = %+v", f)
	}
	reqs := p.requests()
	if got := toolResults(reqs[2])[0]; !got.IsError || got.ToolUseID == "" || !strings.Contains(got.Text, "input schema") {
		t.Errorf("non-object arguments: %+v", got)
	}
	if got := toolResults(reqs[3])[0]; !got.IsError || !strings.Contains(got.Text, "unknown tool") {
		t.Errorf("nameless tool: %+v", got)
	}
	if got := toolResults(reqs[4])[0]; !got.IsError || !strings.Contains(got.Text, "not valid JSON") {
		t.Errorf("bad submit_result: %+v", got)
	}
}

func TestRunReadOnlyCallsRunConcurrently(t *testing.T) {
	var started sync.WaitGroup
	started.Add(2)
	barrier := &fakeTool{name: "grep", schema: `{"type":"object"}`, readOnly: true,
		fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
			started.Done()
			done := make(chan struct{})
			go func() { started.Wait(); close(done) }()
			select {
			case <-done:
				return "both running", nil
			case <-time.After(5 * time.Second):
				return "", errors.New("the other call never started: calls ran one by one")
			}
		}}
	p := &scriptProvider{t: t, steps: []func(model.Request) (*model.Response, error){
		reply("", call("a", "grep", `{}`), call("b", "grep", `{}`)),
		reply("", call("c", SubmitResultName, `{"summary":"s","files_modified":[]}`)),
	}}
	if _, err := Run(context.Background(), p, baseSpec(barrier), Hooks{}, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range toolResults(p.requests()[1]) {
		if r.IsError {
			t.Errorf("%s: %s", r.ToolUseID, r.Text)
		}
	}
}

func TestRunWritingCallsRunInOrder(t *testing.T) {
	var running atomic.Int32
	var order []string
	var mu sync.Mutex
	mk := func(name string, ro bool) *fakeTool {
		return &fakeTool{name: name, schema: `{"type":"object"}`, readOnly: ro,
			fn: func(_ context.Context, in json.RawMessage) (string, error) {
				if running.Add(1) > 1 {
					t.Errorf("%s ran concurrently with another call", name)
				}
				time.Sleep(5 * time.Millisecond)
				mu.Lock()
				order = append(order, string(in))
				mu.Unlock()
				running.Add(-1)
				return "ok", nil
			}}
	}
	p := &scriptProvider{t: t, steps: []func(model.Request) (*model.Response, error){
		reply("", call("1", "read_file", `{"n":1}`), call("2", "write_file", `{"n":2}`), call("3", "read_file", `{"n":3}`)),
		reply("", call("c", SubmitResultName, `{"summary":"s","files_modified":[]}`)),
	}}
	if _, err := Run(context.Background(), p, baseSpec(mk("read_file", true), mk("write_file", false)), Hooks{}, nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ""); got != `{"n":1}{"n":2}{"n":3}` {
		t.Errorf("order = %s", got)
	}
}

func TestRunLimits(t *testing.T) {
	loop := func(req model.Request) (*model.Response, error) {
		return &model.Response{ToolCalls: []model.ToolCall{call(fmt.Sprint(len(req.Messages)), "read_file", `{"path":"a"}`)},
			StopReason: model.StopToolUse, Usage: model.Usage{InputTokens: 600, OutputTokens: 10}}, nil
	}
	steps := func(n int) []func(model.Request) (*model.Response, error) {
		s := make([]func(model.Request) (*model.Response, error), n)
		for i := range s {
			s[i] = loop
		}
		return s
	}
	files := map[string]string{"a": "x"}

	t.Run("token limit", func(t *testing.T) {
		spec := baseSpec(readTool(files))
		spec.MaxTokens = 1500
		spec.MaxTurns = 0
		_, err := Run(context.Background(), &scriptProvider{t: t, steps: steps(10)}, spec, Hooks{}, nil)
		f := failureOf(t, err)
		if f.Reason != ReasonTokenLimit || f.Turns != 3 || f.Usage.Total() != 1830 {
			t.Errorf("failure = %+v", f)
		}
	})
	t.Run("budget", func(t *testing.T) {
		calls := 0
		hooks := Hooks{BeforeCall: func(context.Context) error {
			calls++
			if calls == 3 {
				return errors.New("run token budget spent")
			}
			return nil
		}}
		_, err := Run(context.Background(), &scriptProvider{t: t, steps: steps(10)}, baseSpec(readTool(files)), hooks, nil)
		f := failureOf(t, err)
		if f.Reason != ReasonBudget || f.Turns != 2 || !strings.Contains(f.Detail, "budget spent") {
			t.Errorf("failure = %+v", f)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		spec := baseSpec(readTool(files))
		spec.Deadline = time.Now().Add(50 * time.Millisecond)
		p := &scriptProvider{t: t, steps: []func(model.Request) (*model.Response, error){loop, func(model.Request) (*model.Response, error) {
			time.Sleep(100 * time.Millisecond)
			return nil, context.DeadlineExceeded
		}}}
		_, err := Run(context.Background(), p, spec, Hooks{}, nil)
		if f := failureOf(t, err); f.Reason != ReasonDeadline {
			t.Errorf("failure = %+v", f)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		p := &scriptProvider{t: t, steps: []func(model.Request) (*model.Response, error){func(model.Request) (*model.Response, error) {
			cancel()
			return nil, context.Canceled
		}}}
		_, err := Run(ctx, p, baseSpec(), Hooks{}, nil)
		if f := failureOf(t, err); f.Reason != ReasonCancelled || !errors.Is(err, context.Canceled) {
			t.Errorf("failure = %+v", f)
		}
	})
	t.Run("model error", func(t *testing.T) {
		p := &scriptProvider{t: t, steps: []func(model.Request) (*model.Response, error){func(model.Request) (*model.Response, error) {
			return nil, errors.New("529 overloaded")
		}}}
		_, err := Run(context.Background(), p, baseSpec(), Hooks{}, nil)
		if f := failureOf(t, err); f.Reason != ReasonModelError || !strings.Contains(f.Detail, "overloaded") {
			t.Errorf("failure = %+v", f)
		}
	})
}

func TestRunToolPanicBecomesToolError(t *testing.T) {
	boom := &fakeTool{name: "boom", schema: `{"type":"object"}`,
		fn: func(context.Context, json.RawMessage) (string, error) { panic("nil map") }}
	p := &scriptProvider{t: t, steps: []func(model.Request) (*model.Response, error){
		reply("", call("1", "boom", `{}`)),
		reply("", call("2", SubmitResultName, `{"summary":"s","files_modified":[]}`)),
	}}
	if _, err := Run(context.Background(), p, baseSpec(boom), Hooks{}, nil); err != nil {
		t.Fatal(err)
	}
	if r := toolResults(p.requests()[1])[0]; !r.IsError || !strings.Contains(r.Text, "nil map") {
		t.Errorf("result = %+v", r)
	}
}

func TestRunRejectsBadSpec(t *testing.T) {
	dup := readTool(nil)
	cases := map[string]Spec{
		"bad result schema": {ResultSchema: json.RawMessage(`{"type": 3}`)},
		"no result schema":  {},
		"duplicate tools":   {ResultSchema: json.RawMessage(resultSchema), Tools: []tools.Tool{dup, dup}},
		"reserved name": {ResultSchema: json.RawMessage(resultSchema), Tools: []tools.Tool{&fakeTool{name: SubmitResultName,
			fn: func(context.Context, json.RawMessage) (string, error) { return "", nil }}}},
	}
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Run(context.Background(), &scriptProvider{t: t}, spec, Hooks{}, nil)
			var f *Failure
			if err == nil || errors.As(err, &f) {
				t.Errorf("err = %v, want a plain spec error", err)
			}
		})
	}
}
