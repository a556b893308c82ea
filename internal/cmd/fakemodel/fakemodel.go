// Package fakemodel implements `sluice fake-model`: a scripted model server
// speaking the Anthropic Messages and OpenAI Chat Completions protocols, for
// deterministic offline replays of agents and prompts.
package fakemodel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/model/fake"
)

type options struct {
	script, listen, record, addrFile string
}

// NewCmd returns the `fake-model` command.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "fake-model --script FILE [--listen 127.0.0.1:PORT] [--record FILE] [--addr-file FILE]",
		Short: "Serve scripted model replies over the real Anthropic and OpenAI wire protocols",
		Long: `fake-model serves POST /v1/messages (Anthropic) and POST /v1/chat/completions
(OpenAI), JSON and SSE streaming, answering from a YAML script of turns. Each
request gets the first turn, in script order, that has uses left and whose
matchers all hold; a request no turn matches gets HTTP 400 saying why.

Point a client at it with ANTHROPIC_BASE_URL=URL or OPENAI_BASE_URL=URL/v1.
It runs until interrupted.`,
		Example: `  sluice fake-model --script replay.yaml --listen 127.0.0.1:8089 --record requests.jsonl`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, f, o)
		},
	}
	cmd.Flags().StringVar(&o.script, "script", "", "YAML script of turns to answer from (required)")
	cmd.Flags().StringVar(&o.listen, "listen", "127.0.0.1:0", "address to listen on; port 0 picks a free port")
	cmd.Flags().StringVar(&o.record, "record", "", "append every request received to this file as JSON Lines")
	cmd.Flags().StringVar(&o.addrFile, "addr-file", "", "write the server's base URL to this file once listening")
	return cmd
}

func run(cmd *cobra.Command, f *cmdutil.Factory, o options) error {
	if o.script == "" {
		return errors.New("--script is required: the YAML file of turns to answer from")
	}
	wd, err := f.Getwd()
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(wd, p)
	}
	script, err := fake.LoadScript(abs(o.script))
	if err != nil {
		return err
	}
	var opts []fake.Option
	if o.record != "" {
		rf, err := os.OpenFile(abs(o.record), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("open --record file: %w", err)
		}
		defer rf.Close()
		opts = append(opts, fake.WithRecord(rf))
	}
	srv := fake.NewServer(script, opts...)
	ctx := cmd.Context()
	base, stop, err := fake.Listen(ctx, o.listen, srv)
	if err != nil {
		return err
	}
	defer stop()
	if o.addrFile != "" {
		// Write then rename, so a watcher never reads half a URL.
		tmp := abs(o.addrFile) + ".tmp"
		if err := os.WriteFile(tmp, []byte(base+"\n"), 0o644); err != nil {
			return fmt.Errorf("write --addr-file: %w", err)
		}
		if err := os.Rename(tmp, abs(o.addrFile)); err != nil {
			return fmt.Errorf("write --addr-file: %w", err)
		}
	}
	fmt.Fprintf(f.IO.ErrOut, "fake model server listening on %s (%d turns)\n", base, len(script.Turns))
	fmt.Fprintf(f.IO.ErrOut, "  Anthropic: ANTHROPIC_BASE_URL=%s\n  OpenAI:    OPENAI_BASE_URL=%s/v1\n", base, base)

	<-ctx.Done()
	if err := stop(); err != nil {
		return fmt.Errorf("stop fake model server: %w", err)
	}
	reqs := srv.Requests()
	left := srv.Remaining()
	fmt.Fprintf(f.IO.ErrOut, "fake model server stopped: %d requests received, %d scripted turns unused\n", len(reqs), len(left))
	if err := srv.RecordErr(); err != nil {
		return fmt.Errorf("write --record file: %w", err)
	}
	return nil
}
