// Package logcmd implements `sluice log`.
package logcmd

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
	"github.com/sluice-run/sluice/internal/ui"
)

// NewCmd returns `sluice log`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	var dir, task string
	var jsonOut, follow, schema bool
	cmd := &cobra.Command{
		Use:   "log [RUN]",
		Short: "Print a run's journal as readable lines or JSON Lines",
		Long: `Print a run's journal (the latest run unless RUN names one): one timestamped
line per meaningful action or event, or with --json every entry as a JSON Lines
object whose schema --schema prints (JSON Schema draft 2020-12).`,
		Example: `  sluice log
  sluice log --task t3
  sluice log --follow --json | jq -c 'select(.kind == "event")'
  sluice log --schema`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if schema {
				_, err := f.IO.Out.Write(ui.JSONEntrySchema())
				return err
			}
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
			if task != "" && l.State.Plan != nil {
				if _, ok := l.State.Plan.Task(task); !ok {
					var ids []string
					for _, t := range l.State.Plan.Tasks {
						ids = append(ids, t.ID)
					}
					return fmt.Errorf("run %s has no task %q; its tasks are %s", l.State.RunID, task, strings.Join(ids, ", "))
				}
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
	cmd.Flags().BoolVar(&schema, "schema", false, "print the JSON Schema of the --json lines and exit")
	return cmd
}

func done(s loop.State) bool { return s.Status == loop.StatusDone || s.Status == loop.StatusFailed }

// Print writes entries from index `from` on and returns how many entries
// the run has, for the next call.
func Print(w io.Writer, l *run.Loaded, from int, task string, jsonOut bool) int {
	s := loop.New(l.Meta.RunID, l.Meta.Settings)
	times := entryTimes(l)
	for i, e := range l.Entries {
		s2 := s
		if e.Action != nil {
			s2 = loop.Issue(s, *e.Action)
		} else {
			s2 = loop.Apply(s, *e.Event)
		}
		if i >= from && matches(e, task) {
			at := times[i]
			if jsonOut {
				j := ui.JSONEntry{Time: at.UTC(), Kind: "event", Action: e.Action, Event: e.Event, Phase: s2.Phase, Status: s2.Status, Tokens: s2.Usage.Tokens, Cost: s2.Usage.CostUSD}
				if e.Action != nil {
					j.Kind = "action"
				}
				if e.Event != nil && len(e.Event.Output) > 0 {
					ev := *e.Event
					ev.Output = nil // outputs live in the run's artifacts; lines stay short
					j.Event = &ev
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

// entryTimes pairs each entry with its record's time. The journal may hold
// records of other kinds (notes) that are not entries, so indexes differ.
func entryTimes(l *run.Loaded) []time.Time {
	out := make([]time.Time, 0, len(l.Entries))
	for _, r := range l.Records {
		if r.Kind == store.KindAction || r.Kind == store.KindEvent {
			out = append(out, r.Time)
		}
	}
	for len(out) < len(l.Entries) {
		out = append(out, time.Time{})
	}
	return out
}

func matches(e loop.Entry, task string) bool {
	if task == "" {
		return true
	}
	if e.Action != nil {
		return e.Action.TaskID == task
	}
	return loop.ActionOfID(e.Event.ActionID).TaskID == task
}
