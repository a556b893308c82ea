// Package logcmd implements `sluice log`.
package logcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/run"
	"github.com/sluice-run/sluice/internal/ui"
)

// NewCmd returns `sluice log`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	var dir, task string
	var jsonOut, follow bool
	cmd := &cobra.Command{
		Use:   "log [RUN]",
		Short: "Print a run's journal as readable lines or JSON Lines",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := dir
			if root == "" {
				wd, err := f.Getwd()
				if err != nil {
					return err
				}
				root = wd
			}
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			l, err := run.Load(root, id)
			if err != nil {
				return err
			}
			printed := Print(f.IO.Out, l, 0, task, jsonOut)
			for follow && !done(l.State) {
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(300 * time.Millisecond):
				}
				if l, err = run.LoadDir(l.Dir); err != nil {
					return err
				}
				printed = Print(f.IO.Out, l, printed, task, jsonOut)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&dir, "dir", "C", "", "the repository (default: the current directory)")
	cmd.Flags().StringVar(&task, "task", "", "only entries of this task")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON Lines (the same schema as run --json)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing as the run goes on")
	return cmd
}

func done(s loop.State) bool { return s.Status == loop.StatusDone || s.Status == loop.StatusFailed }

// Print writes entries from index `from` on and returns how many entries
// the run has, for the next call.
func Print(w io.Writer, l *run.Loaded, from int, task string, jsonOut bool) int {
	s := loop.New(l.Meta.RunID, l.Meta.Settings)
	for i, e := range l.Entries {
		s2 := s
		if e.Action != nil {
			s2 = loop.Issue(s, *e.Action)
		} else {
			s2 = loop.Apply(s, *e.Event)
		}
		if i >= from && matches(e, task) {
			at := l.Records[i].Time
			if jsonOut {
				j := ui.JSONEntry{Time: at, Kind: "event", Action: e.Action, Event: e.Event, Phase: s2.Phase, Status: s2.Status, Tokens: s2.Usage.Tokens, Cost: s2.Usage.CostUSD}
				if e.Action != nil {
					j.Kind = "action"
				}
				b, _ := json.Marshal(j)
				fmt.Fprintf(w, "%s\n", b)
			} else if line := ui.Describe(e, s2); line != "" {
				fmt.Fprintf(w, "%s  %s\n", at.Local().Format("15:04:05"), line)
			}
		}
		s = s2
	}
	return len(l.Entries)
}

func matches(e loop.Entry, task string) bool {
	if task == "" {
		return true
	}
	if e.Action != nil {
		return e.Action.TaskID == task
	}
	prefix := "task/" + task + "/"
	return len(e.Event.ActionID) > len(prefix) && e.Event.ActionID[:len(prefix)] == prefix
}
