// Command sluice runs a gated, resumable, parallel agentic development loop
// on a git repository. This file only wires the process to the command tree.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluice-run/sluice/internal/cmd/root"
	"github.com/sluice-run/sluice/internal/cmdutil"
)

func main() {
	os.Exit(run())
}

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return root.Main(ctx, cmdutil.New(), os.Args[1:])
}
