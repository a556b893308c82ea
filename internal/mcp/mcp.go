package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluice-run/sluice/internal/model"
	"github.com/sluice-run/sluice/internal/tailbuf"
	"github.com/sluice-run/sluice/internal/tools"
)

// StartTimeout bounds starting one server and listing its tools.
const StartTimeout = 30 * time.Second

// maxToolName is the longest tool name the model APIs accept.
const maxToolName = 64

// Set is the running servers of a project and their tools.
type Set struct {
	sessions []*sdk.ClientSession
	tools    []tools.Tool
}

// Load starts every server in projectRoot/.mcp.json for which allow returns
// true (allow nil allows all) and lists their tools. Servers are started in
// projectRoot, in name order. A server that cannot be started, or one of a
// type sluice does not run, is an error naming it; the servers already
// started are stopped. Servers that are not allowed are neither started nor
// checked.
//
// A server's environment is sluice's own minus every variable that looks
// like a credential (*_API_KEY, *_TOKEN, *SECRET*), plus the server's "env"
// entries: a server gets only the secrets its entry names.
func Load(ctx context.Context, projectRoot string, allow func(server string) bool) (*Set, error) {
	cfg, err := ReadConfig(projectRoot)
	if err != nil {
		return nil, err
	}
	s := &Set{}
	for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
		if allow != nil && !allow(name) {
			continue
		}
		sc, err := cfg.Servers[name].stdio(name, os.Getenv)
		if err != nil {
			return nil, errors.Join(err, s.Close())
		}
		if err := s.start(ctx, projectRoot, name, sc); err != nil {
			return nil, errors.Join(err, s.Close())
		}
	}
	return s, nil
}

// Tools returns every tool of every server, sorted by name.
func (s *Set) Tools() []tools.Tool {
	return slices.Clone(s.tools)
}

// Close stops every server.
func (s *Set) Close() error {
	var errs []error
	for _, cs := range s.sessions {
		if err := cs.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	s.sessions, s.tools = nil, nil
	return errors.Join(errs...)
}

func (s *Set) start(ctx context.Context, dir, name string, sc ServerConfig) error {
	cmd := exec.Command(sc.Command, sc.Args...)
	cmd.Dir = dir
	cmd.Env = serverEnv(os.Environ(), sc.Env)
	stderr := tailbuf.New(4096)
	cmd.Stderr = stderr

	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "sluice", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		return fmt.Errorf("mcp server %q (%s): starting %s: %w%s", name, ConfigFile, sc.Command, err, stderrNote(stderr))
	}
	var found []tools.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return errors.Join(fmt.Errorf("mcp server %q (%s): listing tools: %w%s", name, ConfigFile, err, stderrNote(stderr)), cs.Close())
		}
		mt, err := newTool(cs, name, t)
		if err != nil {
			slog.Warn("skipping an MCP tool", "server", name, "tool", t.Name, "err", err)
			continue
		}
		found = append(found, mt)
	}
	s.sessions = append(s.sessions, cs)
	s.tools = append(s.tools, found...)
	slices.SortFunc(s.tools, func(a, b tools.Tool) int { return strings.Compare(a.Spec().Name, b.Spec().Name) })
	return nil
}

// secretName matches the variables a server does not inherit.
var secretName = regexp.MustCompile(`(?i)(_API_KEY$|_TOKEN$|SECRET)`)

func serverEnv(environ []string, extra map[string]string) []string {
	var env []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if secretName.MatchString(k) {
			continue
		}
		if _, override := extra[k]; override {
			continue
		}
		env = append(env, kv)
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		env = append(env, k+"="+extra[k])
	}
	return env
}

var unsafeNameChars = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// Tool is one tool of an MCP server.
type Tool struct {
	session  *sdk.ClientSession
	server   string
	name     string // the server's name for it
	spec     model.Tool
	readOnly bool
}

func newTool(cs *sdk.ClientSession, server string, t *sdk.Tool) (*Tool, error) {
	full := "mcp__" + unsafeNameChars.ReplaceAllString(server, "_") + "__" + unsafeNameChars.ReplaceAllString(t.Name, "_")
	if len(full) > maxToolName {
		return nil, fmt.Errorf("tool name %s is longer than the %d characters model APIs accept; shorten the server name in %s", full, maxToolName, ConfigFile)
	}
	schema, err := json.Marshal(t.InputSchema)
	if err != nil || string(schema) == "null" {
		schema = []byte(`{"type":"object"}`)
	}
	desc := t.Description
	if desc == "" && t.Annotations != nil {
		desc = t.Annotations.Title
	}
	return &Tool{
		session:  cs,
		server:   server,
		name:     t.Name,
		spec:     model.Tool{Name: full, Description: desc, Schema: schema},
		readOnly: t.Annotations != nil && t.Annotations.ReadOnlyHint,
	}, nil
}

// Spec is the tool as the model sees it, named mcp__<server>__<tool>.
func (t *Tool) Spec() model.Tool { return t.spec }

// ReadOnly reports the server's readOnlyHint annotation. It is only a hint
// (MCP servers are not sandboxed by sluice); it decides whether calls may run
// concurrently.
func (t *Tool) ReadOnly() bool { return t.readOnly }

// Call calls the tool on its server. A result the server marks as an error
// is returned as an error, so that the model sees a tool error.
func (t *Tool) Call(ctx context.Context, input json.RawMessage) (string, error) {
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	res, err := t.session.CallTool(ctx, &sdk.CallToolParams{Name: t.name, Arguments: input})
	if err != nil {
		return "", fmt.Errorf("mcp server %q, tool %s: %w", t.server, t.name, err)
	}
	text := renderContent(res)
	if res.IsError {
		if text == "" {
			text = "the tool reported an error without a message"
		}
		return "", errors.New(text)
	}
	return text, nil
}

// renderContent turns a tool result into text for the model. Binary content
// is described, not inlined: the model gets text tool results only.
func renderContent(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
			case r.Text != "":
				parts = append(parts, r.Text)
			default:
				parts = append(parts, fmt.Sprintf("[resource %s, %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
			}
		default:
			if b, err := json.Marshal(c); err == nil {
				parts = append(parts, string(b))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

// stderrNote is the end of a server's stderr, for the error when it fails
// to start.
func stderrNote(t *tailbuf.Buffer) string {
	s := strings.TrimSpace(t.String())
	if s == "" {
		return ""
	}
	return "; its stderr ends:\n" + s
}
