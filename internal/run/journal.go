package run

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/plan"
	"github.com/sluice-run/sluice/internal/store"
)

// journal stores the loop's entries in the run directory: log.jsonl for
// every entry, state.json for the fold, plan.yaml and plan.md when the plan
// changes.
type journal struct {
	run         *store.Run
	planVersion int
}

func (j *journal) Record(e loop.Entry, at time.Time) error {
	rec, err := recordOf(e, at)
	if err != nil {
		return err
	}
	_, err = j.run.Append(rec)
	return err
}

func recordOf(e loop.Entry, at time.Time) (store.Record, error) {
	rec := store.Record{Time: at.UTC()}
	var v any
	switch {
	case e.Action != nil:
		rec.Kind, rec.Type, rec.ID, v = store.KindAction, string(e.Action.Type), e.Action.ID, e.Action
	case e.Event != nil:
		rec.Kind, rec.Type, rec.ID, v = store.KindEvent, string(e.Event.Type), e.Event.ActionID, e.Event
	default:
		return rec, fmt.Errorf("journal entry holds neither an action nor an event")
	}
	data, err := json.Marshal(v)
	if err != nil {
		return rec, fmt.Errorf("encode %s %s: %w", rec.Kind, rec.Type, err)
	}
	rec.Data = data
	return rec, nil
}

func (j *journal) Snapshot(s loop.State) error {
	if err := j.run.WriteSnapshot(s); err != nil {
		return err
	}
	if s.Plan != nil && s.PlanVersion != j.planVersion {
		data, err := plan.Marshal(s.Plan)
		if err != nil {
			return fmt.Errorf("encode plan.yaml: %w", err)
		}
		if err := j.run.WriteFile(store.PlanFile, data); err != nil {
			return err
		}
		if err := j.run.WriteFile(store.PlanMarkdown, plan.RenderMarkdown(s.Plan)); err != nil {
			return err
		}
		j.planVersion = s.PlanVersion
	}
	return nil
}

// Entries decodes journal records into loop entries.
func Entries(recs []store.Record) ([]loop.Entry, error) {
	out := make([]loop.Entry, 0, len(recs))
	for _, r := range recs {
		var e loop.Entry
		switch r.Kind {
		case store.KindAction:
			var a loop.Action
			if err := json.Unmarshal(r.Data, &a); err != nil {
				return nil, fmt.Errorf("journal record %d: decode action: %w", r.Seq, err)
			}
			e.Action = &a
		case store.KindEvent:
			var ev loop.Event
			if err := json.Unmarshal(r.Data, &ev); err != nil {
				return nil, fmt.Errorf("journal record %d: decode event: %w", r.Seq, err)
			}
			e.Event = &ev
		default:
			continue // records of other kinds (notes) do not change the state
		}
		out = append(out, e)
	}
	return out, nil
}
