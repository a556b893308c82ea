package live

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/report/fixture"
	"github.com/sluice-run/sluice/internal/store"
)

// BenchmarkSinkEntry is what the engine pays per journal entry for the live
// view (128 tasks in the state).
func BenchmarkSinkEntry(b *testing.B) {
	r := fixture.Simulate(fixture.Options{Tasks: 128, Jobs: 8})
	var entries []loop.Entry
	for _, rec := range r.Records {
		var e loop.Entry
		if rec.Kind == store.KindAction {
			e.Action = new(loop.Action)
			_ = json.Unmarshal(rec.Data, e.Action)
		} else {
			e.Event = new(loop.Event)
			_ = json.Unmarshal(rec.Data, e.Event)
		}
		entries = append(entries, e)
	}
	k := NewSink(time.Now)
	i := 0
	for b.Loop() {
		k.Entry(entries[i%len(entries)], r.State)
		i++
	}
}
