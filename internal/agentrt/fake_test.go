package agentrt_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-run/sluice/internal/agentrt"
	"github.com/sluice-run/sluice/internal/model"
	"github.com/sluice-run/sluice/internal/model/fake"
	"github.com/sluice-run/sluice/internal/tools"
)

// These tests run the tool loop through the fake model server over real
// HTTP on 127.0.0.1, with the providers built on the official SDKs and the
// real, sandboxed tools.

const executorSchema = `{
  "type": "object",
  "properties": {
    "files_modified": {"type": "array", "items": {"type": "string"}},
    "summary": {"type": "string", "minLength": 1},
    "tests_passed": {"type": "boolean"}
  },
  "required": ["files_modified", "summary", "tests_passed"],
  "additionalProperties": false
}`

func startFake(t *testing.T, script string) (*fake.Server, string) {
	t.Helper()
	s, err := fake.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	srv := fake.NewServer(s)
	hs := httptest.NewServer(srv) // listens on 127.0.0.1
	t.Cleanup(hs.Close)
	return srv, hs.URL
}

func anthropicAt(url string) model.Provider {
	return model.NewAnthropic(model.Options{BaseURL: url, APIKey: "test-key", MaxAttempts: 1})
}

func openaiAt(url string) model.Provider {
	return model.NewOpenAI(model.Options{BaseURL: url + "/v1", APIKey: "test-key", MaxAttempts: 1})
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func realTools(t *testing.T, root string) []tools.Tool {
	t.Helper()
	ts, err := tools.New(tools.Options{Root: root, Env: os.Environ(), TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

const greetGo = "package greet\n\n// Hello greets.\nfunc Hello() string { return \"hi\" }\n"

const greetTest = `package greet

import "testing"

func TestHello(t *testing.T) {
	if got := Hello(); got != "hello, world" {
		t.Fatalf("Hello() = %q", got)
	}
}
`

// TestExecutorConversation is the acceptance scenario: read two
// files, edit one, run go test through bash, submit a valid result.
func TestExecutorConversation(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH; the scenario runs go test")
	}
	wt := t.TempDir()
	writeFiles(t, wt, map[string]string{
		"go.mod":        "module example.com/greet\n\ngo 1.22\n",
		"greet.go":      greetGo,
		"greet_test.go": greetTest,
	})
	srv, url := startFake(t, `
turns:
  - name: read
    response:
      text: "Reading the code and its test."
      tool_calls:
        - {name: read_file, input: {path: greet.go}}
        - {name: read_file, input: {path: greet_test.go}}
  - name: edit
    match: {last_contains: "hello, world"}
    response:
      tool_calls:
        - name: edit_file
          input: {path: greet.go, old_string: 'return "hi"', new_string: 'return "hello, world"'}
  - name: test
    response:
      tool_calls:
        - {name: bash, input: {command: "go test ./..."}}
  - name: submit
    match: {last_contains: "ok"}
    response:
      tool_calls:
        - name: submit_result
          input: {files_modified: [greet.go], summary: "Hello now returns hello, world", tests_passed: true}
`)
	spec := agentrt.Spec{
		Role:            "executor",
		Model:           "claude-sonnet-4-5",
		System:          []model.TextPart{{Text: "You are the executor."}, {Text: "Project instructions: keep it simple."}},
		Delegation:      "task_id: task-001\nfeature_name: make Hello say hello, world",
		Tools:           realTools(t, wt),
		ResultSchema:    json.RawMessage(executorSchema),
		MaxTurns:        10,
		MaxOutputTokens: 1024,
	}
	var transcript bytes.Buffer
	res, err := agentrt.Run(context.Background(), anthropicAt(url), spec, agentrt.Hooks{}, &transcript)
	if err != nil {
		t.Fatalf("%v\nrequests: %d", err, len(srv.Requests()))
	}
	var out struct {
		Files  []string `json:"files_modified"`
		Passed bool     `json:"tests_passed"`
	}
	if err := json.Unmarshal(res.Output, &out); err != nil || !out.Passed || len(out.Files) != 1 {
		t.Errorf("output = %s", res.Output)
	}
	if res.Turns != 4 || res.ToolCalls != 4 {
		t.Errorf("turns %d, tool calls %d; want 4 and 4", res.Turns, res.ToolCalls)
	}
	// Exactly that change in the worktree.
	got, err := os.ReadFile(filepath.Join(wt, "greet.go"))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(greetGo, `return "hi"`, `return "hello, world"`, 1); string(got) != want {
		t.Errorf("greet.go =\n%s\nwant\n%s", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "greet_test.go")); string(b) != greetTest {
		t.Error("greet_test.go changed")
	}
	entries, _ := os.ReadDir(wt)
	if len(entries) != 3 {
		t.Errorf("worktree holds %d entries, want the 3 files", len(entries))
	}
	if n := len(srv.Remaining()); n != 0 {
		t.Errorf("%d scripted turns unused", n)
	}
	// The prompt layout the provider saw: system with the cache mark last,
	// tools sorted with submit_result last, the delegation first.
	var first struct {
		System []struct {
			Text         string          `json:"text"`
			CacheControl json.RawMessage `json:"cache_control"`
		} `json:"system"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &first); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range first.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "bash,edit_file,glob,grep,list,read_file,write_file,submit_result" {
		t.Errorf("tools = %s", got)
	}
	if len(first.System) != 2 || first.System[1].CacheControl == nil || first.System[0].CacheControl != nil {
		t.Errorf("system = %+v", first.System)
	}
	// A transcript line per message, ending with the result.
	events := transcriptEvents(t, &transcript)
	if events[0].Type != "start" || events[len(events)-1].Outcome != "result" {
		t.Errorf("transcript from %q to %q", events[0].Type, events[len(events)-1].Type)
	}
	var sawTestRun bool
	for _, e := range events {
		if e.Message != nil && e.Message.Role == model.RoleUser {
			for _, b := range e.Message.Content {
				if b.Type == model.BlockToolResult && strings.Contains(b.Text, "ok") && strings.Contains(b.Text, "example.com/greet") {
					sawTestRun = true
				}
			}
		}
	}
	if !sawTestRun {
		t.Error("the transcript does not hold the go test output")
	}
}

func transcriptEvents(t *testing.T, r *bytes.Buffer) []agentrt.TranscriptEvent {
	t.Helper()
	var events []agentrt.TranscriptEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e agentrt.TranscriptEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("transcript line %q: %v", sc.Text(), err)
		}
		events = append(events, e)
	}
	if len(events) == 0 {
		t.Fatal("empty transcript")
	}
	return events
}

// TestMisbehavingModel: a model that calls a tool that does not exist, sends
// arguments that fail the schema, and never submits gets tool errors back and
// then a max_turns failure.
func TestMisbehavingModel(t *testing.T) {
	for name, provider := range map[string]func(string) model.Provider{"anthropic": anthropicAt, "openai": openaiAt} {
		t.Run(name, func(t *testing.T) {
			wt := t.TempDir()
			writeFiles(t, wt, map[string]string{"a.txt": "alpha\n"})
			srv, url := startFake(t, `
turns:
  - name: nonexistent
    response:
      tool_calls: [{name: delete_everything, input: {}}]
  - name: bad-args
    response:
      tool_calls: [{name: read_file, input: {path: 7, colour: red}}]
  - name: dawdle
    repeat: true
    response:
      tool_calls: [{name: list, input: {path: "."}}]
`)
			spec := agentrt.Spec{
				Role: "executor", Model: "m", Delegation: "do the thing",
				Tools: realTools(t, wt), ResultSchema: json.RawMessage(executorSchema), MaxTurns: 4,
			}
			_, err := agentrt.Run(context.Background(), provider(url), spec, agentrt.Hooks{}, nil)
			var f *agentrt.Failure
			if !errors.As(err, &f) || f.Reason != agentrt.ReasonMaxTurns {
				t.Fatalf("err = %v, want a max_turns failure", err)
			}
			reqs := srv.Requests()
			if len(reqs) != 4 {
				t.Fatalf("%d requests, want 4", len(reqs))
			}
			second, third := string(reqs[1].Body), string(reqs[2].Body)
			if !strings.Contains(second, `unknown tool \"delete_everything\"`) {
				t.Errorf("the model did not get the unknown-tool error: %s", second)
			}
			if !strings.Contains(third, "do not match its input schema") || !strings.Contains(third, "/path") {
				t.Errorf("the model did not get the schema error: %s", third)
			}
		})
	}
}

// TestCompactionThroughFakeServer pushes a conversation far past a small
// window and checks that it finishes with the system prompt and the
// delegation sent verbatim on every request.
func TestCompactionThroughFakeServer(t *testing.T) {
	wt := t.TempDir()
	var script strings.Builder
	script.WriteString("turns:\n")
	for i := range 10 {
		name := fmt.Sprintf("big%d.txt", i)
		writeFiles(t, wt, map[string]string{name: strings.Repeat(fmt.Sprintf("row %d of a large file\n", i), 150)})
		fmt.Fprintf(&script, "  - response:\n      tool_calls: [{name: read_file, input: {path: %s}}]\n", name)
	}
	script.WriteString("  - response:\n      tool_calls: [{name: submit_result, input: {files_modified: [], summary: read, tests_passed: false}}]\n")
	srv, url := startFake(t, script.String())

	instructions := "Project instructions: " + strings.Repeat("never skip tests; ", 40)
	spec := agentrt.Spec{
		Role: "researcher", Model: "m",
		System:        []model.TextPart{{Text: "You are the researcher."}, {Text: instructions}},
		Delegation:    "feature_name: \"map the big files\"",
		Tools:         realTools(t, wt),
		ResultSchema:  json.RawMessage(executorSchema),
		MaxTurns:      20,
		ContextWindow: 8000,
	}
	var transcript bytes.Buffer
	res, err := agentrt.Run(context.Background(), anthropicAt(url), spec, agentrt.Hooks{}, &transcript)
	if err != nil {
		t.Fatal(err)
	}
	if res.Turns != 11 {
		t.Errorf("turns = %d", res.Turns)
	}
	elided := 0
	for i, r := range srv.Requests() {
		var body struct {
			System []struct {
				Text string `json:"text"`
			} `json:"system"`
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		if len(body.System) != 2 || body.System[0].Text != "You are the researcher." || body.System[1].Text != instructions {
			t.Fatalf("request %d: system prompt not verbatim", i)
		}
		if !strings.Contains(string(body.Messages[0].Content), `feature_name: \"map the big files\"`) {
			t.Fatalf("request %d: delegation not verbatim: %s", i, body.Messages[0].Content)
		}
		elided = strings.Count(string(r.Body), "[output of read_file big")
	}
	if elided < 5 {
		t.Errorf("the last request has %d masked observations, want most of the 10", elided)
	}
	if !strings.Contains(transcript.String(), `"type":"compaction"`) {
		t.Error("no compaction in the transcript")
	}
}
