// Package run implements `sluice run` and `sluice resume`.
package run

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/engine/local"
	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/report"
	"github.com/sluice-run/sluice/internal/run"
	"github.com/sluice-run/sluice/internal/slash"
	"github.com/sluice-run/sluice/internal/ui"
	"github.com/sluice-run/sluice/internal/ui/live"
)

// Exit statuses of run and resume.
const (
	ExitFailed = 1
	ExitPaused = 3
)

type flags struct {
	dir          string
	jobs         int
	schedule     string
	depth        string
	yes          bool
	json         bool
	budgetTokens int64
	budgetUSD    float64
	timeout      time.Duration
	engine       string
	temporal     run.TemporalOptions
}

func (fl *flags) register(cmd *cobra.Command, forResume bool) {
	cmd.Flags().StringVarP(&fl.dir, "dir", "C", "", "the repository to work on (default: the current directory)")
	cmd.Flags().BoolVarP(&fl.yes, "yes", "y", false, "approve the plan without asking")
	cmd.Flags().BoolVar(&fl.json, "json", false, "print the run's events as JSON Lines on stdout")
	cmd.Flags().Int64Var(&fl.budgetTokens, "budget-tokens", 0, "stop starting model calls after this many tokens (0: unlimited)")
	cmd.Flags().Float64Var(&fl.budgetUSD, "budget-usd", 0, "stop starting model calls after this many dollars (0: unlimited)")
	cmd.Flags().DurationVar(&fl.timeout, "timeout", 0, "pause the run after this much wall time (0: no limit)")
	cmd.Flags().StringVar(&fl.engine, "engine", run.EngineLocal, "local (actions run here) or temporal (a workflow; `sluice worker` processes run the actions)")
	cmd.Flags().StringVar(&fl.temporal.HostPort, "temporal", "", "with --engine temporal: the Temporal frontend address HOST:PORT")
	cmd.Flags().StringVar(&fl.temporal.Namespace, "namespace", "default", "with --engine temporal: the Temporal namespace")
	cmd.Flags().StringVar(&fl.temporal.TaskQueue, "task-queue", "sluice", "with --engine temporal: the task queue the workers poll")
	cmd.Flags().IntVar(&fl.temporal.ContinueAfter, "continue-after", 0, "with --engine temporal: continue the workflow as new after this many journal entries, keeping each history small (0: 2000)")
	cmd.Flags().StringVar(&fl.temporal.Remote, "remote", "", "with --engine temporal: a git remote through which the run's branches and files reach workers in clones of their own (default: workers share this repository's path)")
	cmd.Flags().DurationVar(&fl.temporal.Timeouts.Heartbeat, "heartbeat-timeout", time.Minute, "with --engine temporal: how long a silent worker keeps its action before another worker retries it")
	if !forResume {
		cmd.Flags().IntVarP(&fl.jobs, "jobs", "j", 0, "tasks run in parallel (default: from config, else the number of CPUs)")
		cmd.Flags().StringVar(&fl.schedule, "schedule", "", "dag (a task starts as soon as it can) or waves (a barrier per wave)")
		cmd.Flags().StringVar(&fl.depth, "depth", "", "review depth: lightweight, standard or full")
	}
}

func (fl *flags) validate() error {
	if fl.schedule != "" && fl.schedule != "dag" && fl.schedule != "waves" {
		return fmt.Errorf("--schedule %q: use dag or waves", fl.schedule)
	}
	switch fl.depth {
	case "", "lightweight", "standard", "full":
	default:
		return fmt.Errorf("--depth %q: use lightweight, standard or full", fl.depth)
	}
	switch fl.engine {
	case run.EngineLocal:
	case run.EngineTemporal:
		if fl.temporal.HostPort == "" {
			return errors.New("--engine temporal needs --temporal HOST:PORT, the Temporal frontend address (e.g. 127.0.0.1:7233)")
		}
	default:
		return fmt.Errorf("--engine %q: use local or temporal", fl.engine)
	}
	if fl.temporal.Remote != "" && fl.engine != run.EngineTemporal {
		return errors.New("--remote is for --engine temporal: it is how workers in other clones reach the run")
	}
	if fl.temporal.Timeouts.Heartbeat < 0 || fl.temporal.ContinueAfter < 0 {
		return errors.New("--heartbeat-timeout and --continue-after cannot be negative")
	}
	if fl.jobs < 0 || fl.budgetTokens < 0 || fl.budgetUSD < 0 || fl.timeout < 0 {
		return errors.New("--jobs, --budget-tokens, --budget-usd and --timeout cannot be negative")
	}
	return nil
}

// NewCmd returns `sluice run`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	fl := &flags{}
	cmd := &cobra.Command{
		Use:   "run GOAL | /COMMAND [ARGS]",
		Short: "Run the loop on this repository: research, plan, critique, execute in parallel, gate, merge",
		Long: `Run the loop on the repository for GOAL. The result lands on the branch
sluice/<run-id>; your own branch, index and working tree are never touched
(use "sluice apply" to merge the run branch when you are happy with it).

A goal that starts with /NAME runs the slash command .claude/commands/NAME.md
(or .sluice/commands/NAME.md) with $ARGUMENTS and $1..$9 filled in.

Exit status: 0 when every task merged and the integration branch passed its
gates, 1 when the run ended with failures, 3 when it paused (budget, time
limit, or a plan awaiting approval); "sluice resume" continues a paused run.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return execute(cmd, f, fl, func(ctx context.Context, opts run.Options, p *ui.RunPrinter) (*run.Result, error) {
				goal, err := expandGoal(opts.Root, args, p)
				if err != nil {
					return nil, err
				}
				opts.Goal = goal
				return run.Start(ctx, opts)
			})
		},
	}
	fl.register(cmd, false)
	return cmd
}

// NewResumeCmd returns `sluice resume`.
func NewResumeCmd(f *cmdutil.Factory) *cobra.Command {
	fl := &flags{}
	cmd := &cobra.Command{
		Use:   "resume [RUN]",
		Short: "Continue a paused or interrupted run exactly where it stopped",
		Long: `Continue a run (default: the latest) from its journal. Work that was in
flight when the run stopped is done again; nothing that completed is repeated.
Raise the budget with --budget-tokens or --budget-usd; approve a plan that
awaits approval with --yes.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			return execute(cmd, f, fl, func(ctx context.Context, opts run.Options, p *ui.RunPrinter) (*run.Result, error) {
				return run.Resume(ctx, id, opts)
			})
		},
	}
	fl.register(cmd, true)
	return cmd
}

// execute is what run and resume share: check the flags, set up the output
// (the live view on a terminal), drive the run, and present where it ended.
func execute(cmd *cobra.Command, f *cmdutil.Factory, fl *flags, drive func(context.Context, run.Options, *ui.RunPrinter) (*run.Result, error)) error {
	if err := fl.validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	opts, p, stop, err := options(ctx, f, fl, cancel)
	if err != nil {
		return err
	}
	res, err := drive(ctx, opts, p)
	stop()
	if res == nil && err != nil {
		return err
	}
	return Present(cmd.Context(), f, p, fl.json, res, err)
}

// expandGoal turns `/name args` into the text of the project's slash
// command (.claude/commands, .sluice/commands); any other goal is kept.
func expandGoal(root string, args []string, p *ui.RunPrinter) (string, error) {
	cmds, errs := slash.Load(root)
	for _, e := range errs {
		p.Note("warning: " + e.Error())
	}
	goal, used, err := slash.ExpandArgs(args, cmds)
	if err != nil {
		return "", err
	}
	if used {
		p.Note("goal from slash command " + args[0])
	}
	return goal, nil
}

// options builds the run's options. On a terminal (without --json) the
// run is shown in the live view; stop ends it before the summary prints.
func options(ctx context.Context, f *cmdutil.Factory, fl *flags, cancel context.CancelFunc) (opts run.Options, p *ui.RunPrinter, stop func(), err error) {
	dir := fl.dir
	if dir == "" {
		wd, err := f.Getwd()
		if err != nil {
			return run.Options{}, nil, nil, err
		}
		dir = wd
	}
	exe, _ := f.Executable()
	// Progress goes to stdout with --json (the stream CI reads), else to
	// stderr so stdout stays free for the summary.
	w := f.IO.ErrOut
	if fl.json {
		w = f.IO.Out
	}
	p = ui.NewRunPrinter(w, fl.json, time.Now)
	opts = run.Options{
		Root:       dir,
		Jobs:       fl.jobs,
		Schedule:   fl.schedule,
		Depth:      fl.depth,
		Yes:        fl.yes,
		Budget:     loop.Budget{Tokens: fl.budgetTokens, USD: fl.budgetUSD},
		Timeout:    fl.timeout,
		Engine:     fl.engine,
		Temporal:   fl.temporal,
		Getenv:     f.Getenv,
		SandboxExe: exe,
		Observe:    p.Entry,
		Notice:     p.Note,
	}
	if f.IO.InIsTTY && !fl.json {
		in := bufio.NewReader(f.IO.In)
		opts.Ask = func(ctx context.Context, q string) (bool, bool) {
			fmt.Fprintf(f.IO.ErrOut, "\n%s [y/N] ", q)
			line, err := in.ReadString('\n')
			if err != nil {
				return false, false
			}
			a := strings.ToLower(strings.TrimSpace(line))
			return a == "y" || a == "yes", true
		}
	}
	stop = func() {}
	if f.IO.OutIsTTY && !fl.json {
		lv := live.New(live.Options{Out: f.IO.Out, In: f.IO.In, Interrupt: cancel})
		lv.Start()
		opts.Observe = lv.Entry
		opts.Activity = func(a local.Activity) { lv.Activity(live.Activity(a)) }
		opts.Notice = lv.Note
		if ask := opts.Ask; ask != nil {
			opts.Ask = func(ctx context.Context, q string) (approve, answered bool) {
				lv.Hold(func() { approve, answered = ask(ctx, q) })
				return approve, answered
			}
		}
		stop = func() { _ = lv.Stop() }
	}
	return opts, p, stop, nil
}

// Present prints where a run ended and turns its status into the exit status.
func Present(ctx context.Context, f *cmdutil.Factory, p *ui.RunPrinter, jsonOut bool, res *run.Result, err error) error {
	if res != nil && res.RunDir != "" {
		// Every run leaves a report, whatever its end; a report that cannot
		// be written is worth a warning, not a failed run.
		repo := filepath.Dir(filepath.Dir(filepath.Dir(res.RunDir)))
		path, rerr := report.Write(context.WithoutCancel(ctx), res.RunDir, report.Options{Repo: repo})
		if rerr != nil {
			p.Note("warning: " + rerr.Error())
		} else {
			res.Report = path
		}
	}
	if res != nil && res.RunID != "" && !jsonOut {
		ui.Summary(f.IO.Out, res.State, res.Branch, res.RunDir)
		if res.Report != "" {
			fmt.Fprintf(f.IO.Out, "  report: %s\n", res.Report)
		}
		if res.Models != "" {
			fmt.Fprintf(f.IO.Out, "  model: %s\n", res.Models)
		}
	}
	if err != nil {
		return err
	}
	switch res.State.Status {
	case loop.StatusDone:
		if !jsonOut {
			fmt.Fprintf(f.IO.Out, "\nReview with `git log -p %s`, then `sluice apply %s` to merge it into your branch.\n", res.Branch, res.RunID)
		}
		return nil
	case loop.StatusPaused:
		if !jsonOut {
			fmt.Fprintf(f.IO.Out, "\nThe run is paused. Continue it with `sluice resume %s`.\n", res.RunID)
		}
		return &cmdutil.ExitError{Code: ExitPaused, Err: cmdutil.ErrSilent}
	default:
		return &cmdutil.ExitError{Code: ExitFailed, Err: cmdutil.ErrSilent}
	}
}
