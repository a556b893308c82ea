package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sluice-run/sluice/internal/model"
	"github.com/sluice-run/sluice/internal/redact"
	"github.com/sluice-run/sluice/internal/sandbox"
)

// Defaults for Options fields left zero.
const (
	DefaultBashTimeout = 2 * time.Minute
	DefaultOutputCap   = 30_000 // bytes of bash output shown to the model
)

// Options configures the tool set of one delegation.
type Options struct {
	// Root is the task's worktree; every path is confined to it.
	Root string
	// ReadOnly gives the tools of a role that only reads (researcher,
	// critic, verifier): read_file, list, glob, grep, and a bash that may
	// write only in TempDir.
	ReadOnly bool
	// BashTimeout is the default and the longest time one bash command may
	// run before its process group is killed. Zero means DefaultBashTimeout.
	BashTimeout time.Duration
	// OutputCap is how many bytes of a command's output the model sees; the
	// middle of longer output is cut. Zero means DefaultOutputCap.
	OutputCap int
	// Env is the parent environment (KEY=value). bash sees only allowlisted
	// variables from it, and never a credential (see FilterEnv).
	Env []string
	// SandboxExe is the sluice binary, re-executed as `sluice
	// __sandbox-exec` to put bash under Landlock. "" disables Landlock.
	SandboxExe string
	// TempDir is the delegation's scratch directory: bash's TMPDIR, and
	// writable under Landlock. Required when SandboxExe is set.
	TempDir string
	// Writable lists further directories bash may write under Landlock,
	// such as a shared Go build cache (GOCACHE). Without it, a GOCACHE that
	// is not writable is moved into TempDir, so builds work but start cold.
	Writable []string
	// Redact, when set, masks secrets in every tool result and error before
	// the model sees them (a command that prints a credential file, say).
	// Nil leaves results as they are.
	Redact *redact.Redactor
	// Warn receives warnings, such as Landlock being unavailable; it is
	// called at most once per New. Nil discards them.
	Warn func(string)
}

// New returns the tools for one delegation: read_file, list, glob, grep and
// bash, plus write_file and edit_file unless opts.ReadOnly.
func New(opts Options) ([]Tool, error) {
	wt, err := newWorktree(opts.Root)
	if err != nil {
		return nil, err
	}
	if opts.BashTimeout <= 0 {
		opts.BashTimeout = DefaultBashTimeout
	}
	if opts.OutputCap <= 0 {
		opts.OutputCap = DefaultOutputCap
	}
	if opts.TempDir != "" {
		// Landlock rules and TMPDIR need an absolute path.
		if opts.TempDir, err = filepath.Abs(opts.TempDir); err != nil {
			return nil, fmt.Errorf("tools: temp dir: %w", err)
		}
		if err := os.MkdirAll(opts.TempDir, 0o700); err != nil {
			return nil, fmt.Errorf("tools: temp dir: %w", err)
		}
	}
	b := &bash{wt: wt, timeout: opts.BashTimeout, outputCap: opts.OutputCap}
	if opts.SandboxExe != "" {
		if opts.TempDir == "" {
			return nil, errors.New("tools: TempDir is required when the bash sandbox is enabled")
		}
		if _, err := sandbox.ABI(); err != nil {
			if opts.Warn != nil {
				opts.Warn(fmt.Sprintf("bash runs without a write sandbox: %v (Landlock needs Linux 5.13 or later with it enabled at boot)", err))
			}
		} else {
			b.sandboxExe = opts.SandboxExe
			b.writable = []string{opts.TempDir}
			if !opts.ReadOnly {
				b.writable = append(b.writable, wt.realDir)
				for _, d := range opts.Writable {
					if info, err := os.Stat(d); err != nil || !info.IsDir() || !filepath.IsAbs(d) {
						return nil, fmt.Errorf("tools: writable directory %q must be an existing absolute directory", d)
					}
					b.writable = append(b.writable, d)
				}
			}
		}
	}
	b.env = bashEnv(opts.Env, opts.TempDir, b.sandboxExe != "", b.writable)

	ts := []Tool{
		readFileTool(wt),
		listTool(wt),
		globTool(wt),
		grepTool(wt),
	}
	if !opts.ReadOnly {
		ts = append(ts, writeFileTool(wt), editFileTool(wt))
	}
	ts = append(ts, b.tool(opts.ReadOnly))
	if opts.Redact != nil {
		for i, t := range ts {
			ts[i] = &redacted{Tool: t, r: opts.Redact}
		}
	}
	return ts, nil
}

// redacted masks secrets in a tool's result and error.
type redacted struct {
	Tool
	r *redact.Redactor
}

func (t *redacted) Call(ctx context.Context, input json.RawMessage) (string, error) {
	out, err := t.Tool.Call(ctx, input)
	return t.r.String(out), t.r.Error(err)
}

// funcTool is a Tool made of a spec and a function.
type funcTool struct {
	spec     model.Tool
	readOnly bool
	call     func(ctx context.Context, input json.RawMessage) (string, error)
}

func (t *funcTool) Spec() model.Tool { return t.spec }
func (t *funcTool) ReadOnly() bool   { return t.readOnly }
func (t *funcTool) Call(ctx context.Context, input json.RawMessage) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return t.call(ctx, input)
}

// newTool builds a tool whose input decodes into In. Unknown fields are
// errors, so a misspelt argument is reported instead of silently ignored.
func newTool[In any](name, desc, schema string, readOnly bool, run func(ctx context.Context, in In) (string, error)) Tool {
	return &funcTool{
		spec:     model.Tool{Name: name, Description: desc, Schema: json.RawMessage(schema)},
		readOnly: readOnly,
		call: func(ctx context.Context, input json.RawMessage) (string, error) {
			var in In
			if len(bytes.TrimSpace(input)) == 0 {
				input = json.RawMessage("{}")
			}
			dec := json.NewDecoder(bytes.NewReader(input))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&in); err != nil {
				return "", fmt.Errorf("invalid arguments for %s: %v", name, err)
			}
			return run(ctx, in)
		},
	}
}

// displayPath is how a resolved path is shown to the model.
func displayPath(r resolved) string {
	if r.rel == "." {
		return "the worktree root"
	}
	return r.rel
}

// relSlash is p relative to the worktree, slash-separated.
func (w *worktree) relSlash(p string) string {
	rel, err := filepath.Rel(w.realDir, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(rel)
}
