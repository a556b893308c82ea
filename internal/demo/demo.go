// Package demo runs the whole loop offline: a sample Go repository embedded
// in the binary, a scripted model replay served by the fake model server
// over real HTTP, and the real engine, git worktrees and `go test` gates.
package demo

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/sluice-run/sluice/internal/model"
	"github.com/sluice-run/sluice/internal/model/fake"
	"github.com/sluice-run/sluice/internal/run"
)

//go:embed sample.txtar
var sample []byte

//go:embed script.yaml
var script []byte

// Script is the embedded scripted replay.
func Script() []byte { return append([]byte(nil), script...) }

// Goal is the request the scripted run fulfils.
const Goal = "Add word splitting, word counting, title-casing and a one-line text report to textkit"

// ModelName is what the replay calls itself in requests and usage.
const ModelName = "scripted-replay"

// Options configure a demo run.
type Options struct {
	// Dir is where the sample repository is written; empty: a new temp dir.
	Dir        string
	Jobs       int
	SandboxExe string
	// Capabilities are enabled in the sample's configuration (e.g.
	// security-review, design-spec).
	Capabilities []string
	Run          run.Options
}

// Result is a finished demo run and where to find it.
type Result struct {
	Dir string
	*run.Result
}

// Run writes the sample repository, serves the scripted replay and runs the
// loop on it.
func Run(ctx context.Context, o Options) (*Result, error) {
	dir := o.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "sluice-demo-*"); err != nil {
			return nil, fmt.Errorf("create a directory for the demo: %w", err)
		}
	}
	if err := WriteSample(ctx, dir, o.Capabilities...); err != nil {
		return nil, err
	}
	s, err := fake.ParseScript(script)
	if err != nil {
		return nil, fmt.Errorf("the embedded demo script: %w", err)
	}
	srv := fake.NewServer(s)
	url, stop, err := fake.Listen(ctx, "127.0.0.1:0", srv)
	if err != nil {
		return nil, fmt.Errorf("start the fake model server: %w", err)
	}
	defer stop()

	opts := o.Run
	opts.Root = dir
	opts.Goal = Goal
	opts.Yes = true
	if o.Jobs > 0 {
		opts.Jobs = o.Jobs
	} else if opts.Jobs == 0 {
		opts.Jobs = 4
	}
	opts.SandboxExe = o.SandboxExe
	opts.Models = Replay(url)
	opts.ModelDesc = "a scripted replay served by sluice's fake model server at " + url + " (not a real model)"
	res, err := run.Start(ctx, opts)
	if err != nil {
		return &Result{Dir: dir, Result: res}, err
	}
	return &Result{Dir: dir, Result: res}, nil
}

// WriteSample writes the embedded sample repository to dir, with the given
// capabilities enabled in its configuration, and commits it.
func WriteSample(ctx context.Context, dir string, capabilities ...string) error {
	ar := txtar.Parse(sample)
	for _, f := range ar.Files {
		if f.Name == ".sluice/config.yaml" && len(capabilities) > 0 {
			f.Data = append(append([]byte(nil), f.Data...), fmt.Sprintf("capabilities:\n  enabled: [%s]\n", strings.Join(capabilities, ", "))...)
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("write the sample repository: %w", err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return fmt.Errorf("write the sample repository: %w", err)
		}
	}
	env := append(os.Environ(),
		"GIT_AUTHOR_NAME=sluice demo", "GIT_AUTHOR_EMAIL=demo@sluice.invalid",
		"GIT_COMMITTER_NAME=sluice demo", "GIT_COMMITTER_EMAIL=demo@sluice.invalid",
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
	)
	for _, args := range [][]string{
		{"init", "--quiet", "--initial-branch=main"},
		{"add", "--all"},
		{"commit", "--quiet", "--no-verify", "-m", "textkit: Reverse"},
	} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s in %s: %w\n%s", args[0], dir, err, out)
		}
	}
	return nil
}

// replay serves every role from the fake model server, priced like a mid
// tier so the demo's cost figures are realistic.
type replay struct{ p model.Provider }

// Replay returns models that answer from the fake server at baseURL.
func Replay(baseURL string) *replay {
	return &replay{p: model.NewAnthropic(model.Options{BaseURL: baseURL, APIKey: "scripted-replay-key", Timeout: time.Minute, MaxAttempts: 3})}
}

func (r *replay) ForRole(string) (model.Provider, string, string, error) {
	return r.p, ModelName, "standard", nil
}

// Cost prices the replay at $3 / $15 per million input / output tokens and
// $0.30 per million cache reads.
func (r *replay) Cost(_ string, u model.Usage) float64 {
	return (float64(u.InputTokens)*3 + float64(u.OutputTokens)*15 + float64(u.CacheReadTokens)*0.3 + float64(u.CacheWriteTokens)*3.75) / 1e6
}
