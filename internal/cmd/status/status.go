// Package status implements `sluice status`.
package status

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/run"
	"github.com/sluice-run/sluice/internal/store"
)

// NewCmd returns `sluice status`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	var dir string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "status [RUN]",
		Short: "Show a run on one screen: phase, tasks, gates, budget, what it waits for",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := rootDir(f, dir)
			if err != nil {
				return err
			}
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			l, err := run.Load(root, id)
			if err != nil {
				return err
			}
			if jsonOut {
				enc := json.NewEncoder(f.IO.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(l.State)
			}
			Print(f.IO.Out, l)
			return nil
		},
	}
	cmd.Flags().StringVarP(&dir, "dir", "C", "", "the repository (default: the current directory)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the folded state as JSON")
	return cmd
}

func rootDir(f *cmdutil.Factory, dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	return f.Getwd()
}

// Print writes the one-screen status of a run.
func Print(w io.Writer, l *run.Loaded) {
	s := l.State
	fmt.Fprintf(w, "run %s  %s  phase %s\n", s.RunID, s.Status, s.Phase)
	fmt.Fprintf(w, "goal: %s\n", l.Meta.Goal)
	if s.Reason != "" {
		fmt.Fprintf(w, "reason: %s\n", s.Reason)
	}
	fmt.Fprintf(w, "branch: %s (from %s at %.10s)\n", loop.IntegrationBranch(s.RunID), orDetached(l.Meta.BaseBranch), l.Meta.BaseSHA)
	if a := l.Temporal; a != nil {
		via := ""
		if l.Meta.Remote {
			via = ", branches through a git remote"
		}
		fmt.Fprintf(w, "engine: temporal, workflow %s at %s (task queue %s%s)\n", a.WorkflowID, a.HostPort, a.TaskQueue, via)
		if a.Following && l.DriverPID == 0 {
			// Its starter died while the workflow ran: the journal stops
			// where the starter did.
			fmt.Fprintf(w, "note: no sluice process follows the workflow, which may still be running; `%s` re-attaches to it\n", a.ResumeCommand())
		}
	}
	budget := "unlimited"
	if b := s.Settings.Budget; b.Tokens > 0 || b.USD > 0 {
		var parts []string
		if b.Tokens > 0 {
			parts = append(parts, fmt.Sprintf("%d tokens", b.Tokens))
		}
		if b.USD > 0 {
			parts = append(parts, fmt.Sprintf("$%.2f", b.USD))
		}
		budget = strings.Join(parts, ", ")
	}
	fmt.Fprintf(w, "spent: %d tokens, $%.4f in %d calls (budget: %s)\n", s.Usage.Tokens, s.Usage.CostUSD, s.Usage.Calls, budget)
	if s.Plan != nil {
		fmt.Fprintf(w, "plan: version %d, %d tasks, %d critiques\n", s.PlanVersion, len(s.Plan.Tasks), len(s.Critiques))
	}
	if len(s.Order) > 0 {
		fmt.Fprintln(w, "\ntasks:")
		for _, id := range s.Order {
			t := s.Tasks[id]
			line := fmt.Sprintf("  %-10s %-8s", id, t.Status)
			if t.Status == loop.TaskRunning {
				line += fmt.Sprintf(" %-8s attempt %d", t.Stage, t.Attempt)
			} else if t.Attempt > 0 {
				line += fmt.Sprintf(" attempts %d", t.Attempt)
			}
			if t.Usage.Tokens > 0 {
				line += fmt.Sprintf("  %d tokens $%.4f", t.Usage.Tokens, t.Usage.CostUSD)
			}
			var gates []string
			for _, g := range t.Gates {
				mark := "ok"
				if !g.Passed && !g.Skipped {
					mark = "FAIL"
				}
				gates = append(gates, g.Name+":"+mark)
			}
			if len(gates) > 0 {
				line += "  gates " + strings.Join(gates, " ")
			}
			if t.Reason != "" {
				line += "  " + t.Reason
			}
			fmt.Fprintln(w, strings.TrimRight(line, " "))
		}
	}
	if inflight := loop.InFlightActions(s); len(inflight) > 0 {
		fmt.Fprintln(w, "\nwaiting for:")
		issued := map[string]time.Time{}
		for _, r := range l.Records {
			if r.Kind == store.KindAction {
				issued[r.ID] = r.Time
			}
		}
		for _, a := range inflight {
			what := a.Role
			if what == "" {
				what = string(a.Type)
			}
			line := fmt.Sprintf("  %-28s %s", a.ID, what)
			if at, ok := issued[a.ID]; ok {
				line += " since " + at.Local().Format("15:04:05")
			}
			fmt.Fprintln(w, line)
		}
	}
	for _, warn := range l.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn.String())
	}
}

func orDetached(b string) string {
	if b == "" {
		return "a detached HEAD"
	}
	return b
}
