package store

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests re-execute the test binary as a helper process (crash, lock and
// disk-full tests need a second process). The helper's role is chosen by
// this environment variable.
const helperEnv = "SLUICE_STORE_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode, os.Getenv("SLUICE_STORE_TEST_DIR")))
	}
	os.Exit(m.Run())
}

func runHelper(mode, dir string) int {
	var err error
	switch mode {
	case "append":
		err = helperAppend(dir)
	case "hold":
		err = helperHold(dir, false)
	case "holdrepo":
		err = helperHold(dir, true)
	case "fsize":
		err = helperFileSizeLimit(dir)
	default:
		err = fmt.Errorf("unknown helper mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	return 0
}

// foldState is the test's stand-in for the loop's state: a deterministic
// fold over the journal.
type foldState struct {
	Count   int   `json:"count"`
	Sum     int64 `json:"sum"`
	LastSeq int64 `json:"last_seq"`
}

func fold(recs []Record) foldState {
	var s foldState
	for _, r := range recs {
		s = s.apply(r)
	}
	return s
}

func (s foldState) apply(r Record) foldState {
	var d recordData
	if err := json.Unmarshal(r.Data, &d); err != nil {
		// Unreachable for journals the helper wrote; a sentinel the
		// test's comparison will catch.
		s.Sum = -1 << 40
		return s
	}
	s.Count++
	s.Sum += d.N
	s.LastSeq = r.Seq
	return s
}

type recordData struct {
	N   int64  `json:"n"`
	Pad string `json:"pad,omitempty"`
}

// dataFor is the payload of record seq: a pure function of seq, so the
// parent can check every kept record byte for byte. One record in eight
// carries several pages of padding so that a batch's write spans pages and
// a SIGKILL can tear it.
func dataFor(seq int64) json.RawMessage {
	d := recordData{N: seq*7%13 + 1}
	if seq%8 == 3 {
		d.Pad = strings.Repeat(strconv.FormatInt(seq%10, 10), 4096+int(seq%5)*3000)
	}
	b, _ := json.Marshal(d)
	return b
}

// helperAppend opens the run and appends batches forever, reporting on
// stdout "a N" after Append returned up to seq N and "s N" after a snapshot
// of the fold up to N was written.
func helperAppend(dir string) error {
	seed, _ := strconv.ParseUint(os.Getenv("SLUICE_STORE_TEST_SEED"), 10, 64)
	rng := rand.New(rand.NewPCG(seed, 99))
	r, recs, _, err := Open(dir)
	if err != nil {
		return err
	}
	state := fold(recs)
	next := state.LastSeq + 1
	out := os.Stdout
	fmt.Fprintln(out, "ready")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for {
		batch := make([]Record, 1+rng.IntN(8))
		for i := range batch {
			seq := next + int64(i)
			kind := KindAction
			if seq%2 == 0 {
				kind = KindEvent
			}
			batch[i] = Record{Time: base.Add(time.Duration(seq) * time.Second), Kind: kind, Type: "Tick", ID: "a" + strconv.FormatInt(seq, 10), Data: dataFor(seq)}
		}
		got, err := r.Append(batch...)
		if err != nil {
			return err
		}
		next = got[len(got)-1].Seq + 1
		fmt.Fprintf(out, "a %d\n", next-1)
		for _, rec := range got {
			state = state.apply(rec)
		}
		if err := r.WriteSnapshot(state); err != nil {
			return err
		}
		fmt.Fprintf(out, "s %d\n", state.LastSeq)
	}
}

// helperHold takes the run lock (or the repository lock), says so, and
// holds it until stdin closes.
func helperHold(dir string, repo bool) error {
	if repo {
		unlock, err := LockRepo(dir)
		if err != nil {
			return err
		}
		defer unlock()
	} else {
		r, _, _, err := Open(dir)
		if err != nil {
			return err
		}
		defer r.Close()
	}
	fmt.Fprintln(os.Stdout, "ready")
	_, err := io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	return err
}

// helperFileSizeLimit stands in for a full disk: RLIMIT_FSIZE makes any
// write past the limit fail with EFBIG (Go ignores SIGXFSZ). It reports each
// outcome as a JSON line.
func helperFileSizeLimit(dir string) error {
	r, _, _, err := Open(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	const limit = 64 << 10
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		return err
	}
	big := json.RawMessage(`"` + strings.Repeat("z", 2*limit) + `"`)
	report := func(what string, err error) {
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		line, _ := json.Marshal(map[string]string{"op": what, "err": msg})
		fmt.Fprintln(os.Stdout, string(line))
	}
	_, err = r.Append(Record{Kind: KindEvent, Type: "Big", Data: big})
	report("append-big", err)
	// The failed write was taken back, so a small append still works.
	_, err = r.Append(Record{Kind: KindEvent, Type: "Small", Data: json.RawMessage(`{"n":1}`)})
	report("append-small", err)
	err = r.WriteSnapshot(map[string]string{"blob": strings.Repeat("y", 2*limit)})
	report("snapshot-big", err)
	return nil
}
