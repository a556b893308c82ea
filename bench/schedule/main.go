// Command schedule measures how close sluice's scheduler gets to the best
// possible wall time. It runs the real engine and reducer on random task
// DAGs (fixed seed) of 8, 32 and 128 tasks, with every model turn taking a
// fixed latency (200 ms by default) and git and gates taking no time, and
// prints wall time divided by the lower bound — the larger of the critical
// path and the total work divided by the jobs — for --schedule dag and waves.
//
//	go run ./bench/schedule [-latency 200ms] [-jobs 8] [-sizes 8,32,128]
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-run/sluice/internal/engine"
	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/loop/looptest"
	"github.com/sluice-run/sluice/internal/plan"
)

// turnsPerTask is the model turns one task costs: executor (2), code
// reviewer (1) and verifier (1).
const turnsPerTask = 4

func main() {
	latency := flag.Duration("latency", 200*time.Millisecond, "latency of one model turn")
	jobs := flag.Int("jobs", 8, "tasks in parallel")
	sizes := flag.String("sizes", "8,32,128", "plan sizes")
	seed := flag.Uint64("seed", 42, "random DAG seed")
	flag.Parse()
	fmt.Printf("model turn %s, --jobs %d, seed %d; wall / lower bound (1.00 is perfect)\n", *latency, *jobs, *seed)
	fmt.Printf("%6s %10s %10s %8s %10s %8s\n", "tasks", "bound", "dag", "ratio", "waves", "ratio")
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bad size %q\n", f)
			os.Exit(2)
		}
		p := randomDAG(rand.New(rand.NewPCG(*seed, uint64(n))), n)
		task := time.Duration(turnsPerTask) * *latency
		cp := time.Duration(plan.CriticalPath(p, func(*plan.Task) float64 { return float64(task) }))
		bound := max(cp, time.Duration(n)*task/time.Duration(*jobs))
		dag := measure(p, "dag", *jobs, *latency)
		waves := measure(p, "waves", *jobs, *latency)
		fmt.Printf("%6d %10s %10s %8.2f %10s %8.2f\n", n, bound.Round(time.Millisecond), dag.Round(time.Millisecond),
			float64(dag)/float64(bound), waves.Round(time.Millisecond), float64(waves)/float64(bound))
	}
}

// randomDAG makes n tasks, each depending on up to three earlier ones and
// modifying its own file, so only dependencies constrain the schedule.
func randomDAG(r *rand.Rand, n int) *plan.Plan {
	p := &plan.Plan{Goal: "bench"}
	for i := 0; i < n; i++ {
		t := plan.Task{ID: fmt.Sprintf("t%03d", i), Title: "task", Description: "d", AcceptanceCriteria: []string{"ok"}, FilesToModify: []string{fmt.Sprintf("f%03d.go", i)}}
		if i > 0 {
			for k := r.IntN(4); k > 0; k-- {
				d := fmt.Sprintf("t%03d", r.IntN(i))
				if !contains(t.DependsOn, d) {
					t.DependsOn = append(t.DependsOn, d)
				}
			}
		}
		p.Tasks = append(p.Tasks, t)
	}
	return p
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// measure runs the execute phase of p and returns its wall time.
func measure(p *plan.Plan, schedule string, jobs int, latency time.Duration) time.Duration {
	s := loop.New("bench", loop.Settings{Goal: "bench", ResearchPasses: 1, CriticMaxIterations: 1, TaskRetries: 2, Jobs: jobs, Schedule: schedule, Depth: plan.DepthStandard, AutoApprove: true})
	// Bring the run to the start of execution without model latency.
	instant := &simulated{plan: p}
	for s.Phase != loop.PhaseExecute {
		for _, a := range loop.Next(s) {
			s = loop.Issue(s, a)
			s = loop.Apply(s, instant.Execute(context.Background(), s, a))
		}
	}
	e := &engine.Engine{Exec: &simulated{plan: p, latency: latency}, Journal: nopJournal{}, Now: time.Now}
	start := time.Now()
	end, err := e.Run(context.Background(), s)
	if err != nil || end.Status != loop.StatusDone {
		fmt.Fprintf(os.Stderr, "%s run ended %s: %v %s\n", schedule, end.Status, err, end.Reason)
		os.Exit(1)
	}
	return time.Since(start)
}

type nopJournal struct{}

func (nopJournal) Record(loop.Entry, time.Time) error { return nil }
func (nopJournal) Snapshot(loop.State) error          { return nil }

// simulated answers every action successfully; delegations take their
// model turns' latency.
type simulated struct {
	plan    *plan.Plan
	latency time.Duration
}

func (x *simulated) Execute(ctx context.Context, s loop.State, a loop.Action) loop.Event {
	ev := loop.Event{ActionID: a.ID}
	switch a.Type {
	case loop.ActBaseline:
		ev.Type = loop.EvBaselineDone
	case loop.ActWorktree:
		ev.Type, ev.Branch = loop.EvWorktreeReady, a.Branch
	case loop.ActGates:
		ev.Type, ev.Passed, ev.Changed = loop.EvGatesEvaluated, true, []string{a.TaskID}
	case loop.ActMerge:
		ev.Type = loop.EvMerged
	case loop.ActFinalVerify:
		ev.Type, ev.Passed = loop.EvFinalVerified, true
	case loop.ActAsk:
		ev.Type, ev.Approve = loop.EvUserAnswered, true
	case loop.ActDelegate:
		turns := 1
		if a.Role == loop.RoleExecutor {
			turns = 2
		}
		if a.TaskID != "" {
			time.Sleep(time.Duration(turns) * x.latency)
		}
		ev.Type = loop.EvDelegationDone
		ev.Output = looptest.Output(a.Role, x.plan)
	}
	return ev
}
