// Package mcp offers the tools of the MCP servers a project lists in
// .mcp.json (Claude Code's format) to sluice's agents. Only stdio servers
// are supported: sluice starts each allowed server as a child process with
// the official MCP Go SDK and exposes each of its tools as a tools.Tool named
// mcp__<server>__<tool>.
package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ConfigFile is the project file that lists MCP servers.
const ConfigFile = ".mcp.json"

// ServerConfig is one entry of .mcp.json's mcpServers.
type ServerConfig struct {
	// Type is "stdio" (or empty, which means stdio when Command is set).
	// "sse", "http" and "ws" servers are not supported.
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
}

// Config is the content of .mcp.json.
type Config struct {
	Servers map[string]ServerConfig `json:"mcpServers"`
}

// ErrUnsupported is wrapped by the error for a server sluice cannot run.
var ErrUnsupported = errors.New("unsupported MCP server type")

// ReadConfig reads projectRoot/.mcp.json. A project without the file has no
// servers and no error.
func ReadConfig(projectRoot string) (*Config, error) {
	path := filepath.Join(projectRoot, ConfigFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Config{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s is not valid .mcp.json (want {\"mcpServers\": {\"name\": {\"command\": ...}}}): %w", path, err)
	}
	return &c, nil
}

// stdio checks that a server is one sluice can start and returns the
// config with ${VAR} and ${VAR:-default} expanded from getenv, as Claude Code
// expands them in command, args and env.
func (sc ServerConfig) stdio(name string, getenv func(string) string) (ServerConfig, error) {
	switch sc.Type {
	case "", "stdio":
	default:
		return sc, fmt.Errorf("mcp server %q in %s: %w %q; sluice runs stdio servers only (\"command\" and \"args\")", name, ConfigFile, ErrUnsupported, sc.Type)
	}
	if sc.Command == "" {
		if sc.URL != "" {
			return sc, fmt.Errorf("mcp server %q in %s: %w (a url server); sluice runs stdio servers only (\"command\" and \"args\")", name, ConfigFile, ErrUnsupported)
		}
		return sc, fmt.Errorf("mcp server %q in %s has no \"command\"; give the program to start", name, ConfigFile)
	}
	out := ServerConfig{Type: "stdio", Env: map[string]string{}}
	var err error
	if out.Command, err = expand(sc.Command, getenv); err != nil {
		return sc, fmt.Errorf("mcp server %q in %s: command: %w", name, ConfigFile, err)
	}
	for i, a := range sc.Args {
		e, err := expand(a, getenv)
		if err != nil {
			return sc, fmt.Errorf("mcp server %q in %s: args[%d]: %w", name, ConfigFile, i, err)
		}
		out.Args = append(out.Args, e)
	}
	for k, v := range sc.Env {
		e, err := expand(v, getenv)
		if err != nil {
			return sc, fmt.Errorf("mcp server %q in %s: env %s: %w", name, ConfigFile, k, err)
		}
		out.Env[k] = e
	}
	return out, nil
}

// expand replaces ${VAR} and ${VAR:-default}. An unset variable without a
// default is an error, so that a server does not start with a silently
// empty credential.
func expand(s string, getenv func(string) string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unclosed ${ in %q", s)
		}
		b.WriteString(s[:i])
		ref := s[i+2 : i+j]
		name, def, hasDef := strings.Cut(ref, ":-")
		v := getenv(name)
		switch {
		case v != "":
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		default:
			return "", fmt.Errorf("environment variable %s is not set (set it, or write ${%s:-default})", name, name)
		}
		s = s[i+j+1:]
	}
}
