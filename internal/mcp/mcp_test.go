package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluice-run/sluice/internal/agentrt"
)

// serverEnvVar makes the test binary act as a stdio MCP server.
const serverEnvVar = "SLUICE_TEST_MCP_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnvVar) == "1" {
		if err := runTestServer(); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

type sum struct {
	Sum int `json:"sum"`
}

// runTestServer is a tiny MCP server built on the same SDK's server side.
func runTestServer() error {
	s := sdk.NewServer(&sdk.Implementation{Name: "demo", Version: "v1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo text back.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoArgs) (*sdk.CallToolResult, any, error) {
			// The environment check proves the secret filter: the server
			// must see its configured variable but not the API key.
			env := fmt.Sprintf("greeting=%s key=%s", os.Getenv("DEMO_GREETING"), os.Getenv("ANTHROPIC_API_KEY"))
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text + " | " + env}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Add two integers."},
		func(_ context.Context, _ *sdk.CallToolRequest, in addArgs) (*sdk.CallToolResult, sum, error) {
			return nil, sum{Sum: in.A + in.B}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, errors.New("the database is on fire")
		})
	return s.Run(context.Background(), &sdk.StdioTransport{})
}

func writeConfig(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func testServerConfig(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"demo": map[string]any{
			"command": exe,
			"args":    []string{"-test.run=^$"},
			"env":     map[string]string{serverEnvVar: "1", "DEMO_GREETING": "${SLUICE_TEST_GREETING:-hello}"},
		},
		"remote": map[string]any{"type": "http", "url": "https://example.com/mcp"},
	}})
	return string(b)
}

func TestLoadRunsStdioServerTools(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test-must-not-leak")
	dir := t.TempDir()
	writeConfig(t, dir, testServerConfig(t))
	ctx := context.Background()

	set, err := Load(ctx, dir, func(name string) bool { return name == "demo" })
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()

	byName := map[string]int{}
	var names []string
	for i, tl := range set.Tools() {
		byName[tl.Spec().Name] = i
		names = append(names, tl.Spec().Name)
	}
	if got := strings.Join(names, ","); got != "mcp__demo__add,mcp__demo__echo,mcp__demo__fail" {
		t.Fatalf("tools = %s", got)
	}
	ts := set.Tools()
	for _, tl := range ts {
		// The loop validates arguments against these schemas.
		if _, err := agentrt.CompileSchema(tl.Spec().Name, tl.Spec().Schema); err != nil {
			t.Errorf("schema of %s does not compile: %v", tl.Spec().Name, err)
		}
	}
	echo := ts[byName["mcp__demo__echo"]]
	if !echo.ReadOnly() || ts[byName["mcp__demo__add"]].ReadOnly() {
		t.Error("readOnlyHint not carried over")
	}
	var schema struct {
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(echo.Spec().Schema, &schema); err != nil || schema.Properties["text"] == nil {
		t.Errorf("echo schema = %s (%v)", echo.Spec().Schema, err)
	}

	out, err := echo.Call(ctx, json.RawMessage(`{"text":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	if out != "hi | greeting=hello key=" {
		t.Errorf("echo = %q (the server must get its env entry and no API key)", out)
	}
	out, err = ts[byName["mcp__demo__add"]].Call(ctx, json.RawMessage(`{"a":2,"b":40}`))
	if err != nil || !strings.Contains(out, `"sum":42`) {
		t.Errorf("add = %q, %v", out, err)
	}
	_, err = ts[byName["mcp__demo__fail"]].Call(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "on fire") {
		t.Errorf("fail: err = %v", err)
	}
	if err := set.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if _, err := echo.Call(ctx, json.RawMessage(`{"text":"hi"}`)); err == nil {
		t.Error("a call after Close succeeded")
	}
}

func TestLoadErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("no file", func(t *testing.T) {
		set, err := Load(ctx, t.TempDir(), nil)
		if err != nil || len(set.Tools()) != 0 {
			t.Errorf("set = %v, err = %v", set, err)
		}
	})
	t.Run("unsupported type when allowed", func(t *testing.T) {
		dir := t.TempDir()
		writeConfig(t, dir, testServerConfig(t))
		_, err := Load(ctx, dir, nil)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `"remote"`) || !strings.Contains(err.Error(), "stdio") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("nothing allowed starts nothing", func(t *testing.T) {
		dir := t.TempDir()
		writeConfig(t, dir, testServerConfig(t))
		set, err := Load(ctx, dir, func(string) bool { return false })
		if err != nil || len(set.Tools()) != 0 {
			t.Errorf("tools = %d, err = %v", len(set.Tools()), err)
		}
	})
	t.Run("bad json", func(t *testing.T) {
		dir := t.TempDir()
		writeConfig(t, dir, `{"mcpServers": [`)
		_, err := Load(ctx, dir, nil)
		if err == nil || !strings.Contains(err.Error(), ConfigFile) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("missing command", func(t *testing.T) {
		dir := t.TempDir()
		writeConfig(t, dir, `{"mcpServers": {"x": {"args": ["a"]}}}`)
		_, err := Load(ctx, dir, nil)
		if err == nil || !strings.Contains(err.Error(), `no "command"`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("program that is not a server", func(t *testing.T) {
		dir := t.TempDir()
		writeConfig(t, dir, `{"mcpServers": {"bogus": {"command": "sh", "args": ["-c", "echo broken config >&2; exit 3"]}}}`)
		_, err := Load(ctx, dir, nil)
		if err == nil || !strings.Contains(err.Error(), `"bogus"`) || !strings.Contains(err.Error(), "broken config") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("unset variable", func(t *testing.T) {
		dir := t.TempDir()
		writeConfig(t, dir, `{"mcpServers": {"gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "${SLUICE_TEST_SURELY_UNSET}"}}}}`)
		_, err := Load(ctx, dir, nil)
		if err == nil || !strings.Contains(err.Error(), "SLUICE_TEST_SURELY_UNSET is not set") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestServerEnvDropsSecrets(t *testing.T) {
	env := serverEnv([]string{"PATH=/bin", "OPENAI_API_KEY=x", "GITHUB_TOKEN=y", "MY_SECRET_THING=z", "HOME=/h", "FOO=old"},
		map[string]string{"GITHUB_TOKEN": "explicit", "FOO": "new"})
	got := strings.Join(env, " ")
	if got != "PATH=/bin HOME=/h FOO=new GITHUB_TOKEN=explicit" {
		t.Errorf("env = %s", got)
	}
}
