package store

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCrashRecovery kills a process that appends journal records (fsync,
// then snapshot) with SIGKILL at 200 random moments. After every kill the
// run must reopen; every record whose Append returned must be there, byte
// for byte; at most the one torn line may be lost; state.json must be the
// fold of a prefix of the kept journal no older than the last snapshot the
// helper confirmed; and the fold of the kept records is what the engine
// would write as the new snapshot. Runs rotate every 20 kills to keep the
// journals (and the test) small.
//
// Under -race the helper is a race-instrumented binary that starts several
// times slower, so the race build runs 40 kills: it checks the test's own
// goroutines, and the 200-kill run is the plain `go test`.
func TestCrashRecovery(t *testing.T) {
	kills := 200
	switch {
	case testing.Short():
		kills = 20
	case raceEnabled:
		kills = 40
	}
	const killsPerRun = 20
	const seed = 20260301
	rng := rand.New(rand.NewPCG(seed, 1))
	runs := filepath.Join(t.TempDir(), "runs")

	var dir string
	torn, beforeReady, maxRecords := 0, 0, 0
	for i := 0; i < kills; i++ {
		if i%killsPerRun == 0 {
			r, err := Create(runs, "run-"+strconv.Itoa(i/killsPerRun))
			if err != nil {
				t.Fatal(err)
			}
			dir = r.Dir()
			r.Close()
		}

		h := startHelper(t, "append", dir, "SLUICE_STORE_TEST_SEED="+strconv.Itoa(rng.IntN(1<<30)))
		// Mostly kill while appending; one kill in ten lands during start-up
		// or Open's own repair.
		if rng.IntN(10) != 0 {
			h.waitReady(t)
		} else {
			beforeReady++
		}
		// Log-uniform between 1µs and ~8ms.
		time.Sleep(time.Duration(1<<rng.IntN(14)+rng.IntN(1000)) * time.Microsecond)
		if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		h.wait(t)
		if ws, ok := h.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("kill %d: helper exited on its own (%v); stderr: %s", i, h.cmd.ProcessState, h.stderr.String())
		}

		var appended, snapped int64
		for _, l := range h.output() {
			kind, n, _ := strings.Cut(l, " ")
			v, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				t.Fatalf("kill %d: helper printed %q", i, l)
			}
			switch kind {
			case "a":
				appended = v
			case "s":
				snapped = v
			}
		}

		before, _ := os.ReadFile(filepath.Join(dir, JournalFile))
		r, recs, warns, err := Open(dir)
		if err != nil {
			t.Fatalf("kill %d: reopen: %v", i, err)
		}
		if len(warns) > 1 {
			t.Fatalf("kill %d: %d warnings, want at most one torn line: %v", i, len(warns), warns)
		}
		if len(warns) == 1 {
			torn++
			after, _ := os.ReadFile(filepath.Join(dir, JournalFile))
			if !bytes.HasPrefix(before, after) || bytes.Count(before[len(after):], []byte("\n")) > 1 {
				t.Fatalf("kill %d: repair removed more than the torn line (%d -> %d bytes)", i, len(before), len(after))
			}
		}
		if int64(len(recs)) < appended {
			t.Fatalf("kill %d: %d records kept, but Append had returned seq %d", i, len(recs), appended)
		}
		for j, rc := range recs {
			seq := int64(j + 1)
			if rc.Seq != seq || !bytes.Equal(rc.Data, dataFor(seq)) || rc.ID != "a"+strconv.FormatInt(seq, 10) {
				t.Fatalf("kill %d: record %d is %+v, want seq %d with its data", i, j, rc, seq)
			}
		}
		maxRecords = max(maxRecords, len(recs))

		if data, err := os.ReadFile(filepath.Join(dir, SnapshotFile)); err == nil {
			var snap foldState
			if err := json.Unmarshal(data, &snap); err != nil {
				t.Fatalf("kill %d: state.json is not whole: %v\n%q", i, err, data)
			}
			if snap.LastSeq < snapped || snap.LastSeq > int64(len(recs)) {
				t.Fatalf("kill %d: snapshot at seq %d, want between %d and %d", i, snap.LastSeq, snapped, len(recs))
			}
			if want := fold(recs[:snap.LastSeq]); snap != want {
				t.Fatalf("kill %d: snapshot %+v is not the fold of the journal up to its seq (%+v)", i, snap, want)
			}
		} else if snapped > 0 {
			t.Fatalf("kill %d: snapshot confirmed at seq %d but state.json is missing: %v", i, snapped, err)
		}
		assertNoTemps(t, dir)

		// What the engine does on resume: fold the kept journal, write it.
		state := fold(recs)
		if state.Count != len(recs) || (len(recs) > 0 && state.LastSeq != recs[len(recs)-1].Seq) {
			t.Fatalf("kill %d: fold %+v disagrees with %d records", i, state, len(recs))
		}
		if err := r.WriteSnapshot(state); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d: %d kills (%d before ready), %d torn last lines repaired, up to %d records per run", seed, kills, beforeReady, torn, maxRecords)
}
