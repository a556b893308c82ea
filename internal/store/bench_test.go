package store

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkAppend measures one journal append of a typical record
// (~300 bytes), including its fsync: the floor on how fast the engine can
// issue actions.
func BenchmarkAppend(b *testing.B) {
	r, err := Create(filepath.Join(b.TempDir(), "runs"), "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	data, _ := json.Marshal(map[string]string{"role": "executor", "task": "t1", "summary": strings.Repeat("s", 200)})
	rec := Record{Time: t0, Kind: KindEvent, Type: "DelegationDone", ID: "t1/exec/1", Data: data}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Append(rec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendBatch8 appends eight records per call: one write and one
// fsync for the batch.
func BenchmarkAppendBatch8(b *testing.B) {
	r, err := Create(filepath.Join(b.TempDir(), "runs"), "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	data, _ := json.Marshal(map[string]string{"summary": strings.Repeat("s", 200)})
	batch := make([]Record, 8)
	for i := range batch {
		batch[i] = Record{Time: t0, Kind: KindAction, Type: "Delegate", ID: "t1/exec/1", Data: data}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Append(batch...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteSnapshot measures an atomic state.json write (temp file,
// fsync, rename, directory fsync) of a ~10 KB state.
func BenchmarkWriteSnapshot(b *testing.B) {
	r, err := Create(filepath.Join(b.TempDir(), "runs"), "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	state := map[string]any{"phase": "execute", "tasks": strings.Repeat("t", 10000)}
	b.ReportAllocs()
	for b.Loop() {
		if err := r.WriteSnapshot(state); err != nil {
			b.Fatal(err)
		}
	}
}
