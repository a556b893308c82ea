package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func rec(kind, typ, id, data string) Record {
	r := Record{Time: t0, Kind: kind, Type: typ, ID: id}
	if data != "" {
		r.Data = json.RawMessage(data)
	}
	return r
}

func newRun(t *testing.T) (*Run, string) {
	t.Helper()
	runs := filepath.Join(t.TempDir(), ".sluice", "runs")
	r, err := Create(runs, "20260301-120000-abcd")
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r, r.Dir()
}

func TestCreateAppendReopen(t *testing.T) {
	r, dir := newRun(t)
	for _, sub := range []string{ArtifactsDir, TranscriptsDir} {
		if fi, err := os.Stat(filepath.Join(dir, sub)); err != nil || !fi.IsDir() {
			t.Errorf("Create did not make %s/: %v", sub, err)
		}
	}
	got, err := r.Append(rec(KindAction, "Delegate", "plan/1", `{"role": "planner"}`), rec(KindEvent, "DelegationDone", "plan/1", ""))
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Seq != 1 || got[1].Seq != 2 {
		t.Errorf("seqs = %d, %d; want 1, 2", got[0].Seq, got[1].Seq)
	}
	got, err = r.Append(rec(KindAction, "Merge", "t1/merge", ""))
	if err != nil || got[0].Seq != 3 {
		t.Fatalf("third append: seq %v, err %v", got, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(rec(KindEvent, "X", "", "")); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v, want ErrClosed", err)
	}

	r2, recs, warns, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if len(warns) != 0 {
		t.Errorf("warnings on a clean journal: %v", warns)
	}
	want := []Record{
		{Seq: 1, Time: t0, Kind: KindAction, Type: "Delegate", ID: "plan/1", Data: json.RawMessage(`{"role":"planner"}`)},
		{Seq: 2, Time: t0, Kind: KindEvent, Type: "DelegationDone", ID: "plan/1"},
		{Seq: 3, Time: t0, Kind: KindAction, Type: "Merge", ID: "t1/merge"},
	}
	if !reflect.DeepEqual(recs, want) {
		t.Errorf("reopened records:\n got %+v\nwant %+v", recs, want)
	}
	// Seq continues after reopen.
	got, err = r2.Append(rec(KindEvent, "Merged", "t1/merge", ""))
	if err != nil || got[0].Seq != 4 {
		t.Errorf("append after reopen: %+v, %v; want seq 4", got, err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, JournalFile))
	if n := bytes.Count(data, []byte("\n")); n != 4 || !bytes.HasSuffix(data, []byte("}\n")) {
		t.Errorf("journal has %d lines, want 4 newline-terminated:\n%s", n, data)
	}
}

func TestCreateRefusesExistingAndBadIDs(t *testing.T) {
	runs := t.TempDir()
	r, err := Create(runs, "r1")
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := Create(runs, "r1"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over an existing run: %v, want fs.ErrExist", err)
	}
	for _, id := range []string{"", ".", "..", "a/b", "../x", "-x", "a b"} {
		if _, err := Create(runs, id); err == nil || !strings.Contains(err.Error(), "invalid run id") {
			t.Errorf("Create(%q) = %v, want an invalid run id error", id, err)
		}
	}
}

func TestAppendRejectsBadRecordsWithoutWriting(t *testing.T) {
	r, dir := newRun(t)
	if _, err := r.Append(rec(KindAction, "A", "", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(rec(KindEvent, "B", "", ""), rec("note", "C", "", "")); err == nil || !strings.Contains(err.Error(), `kind "note"`) {
		t.Errorf("Append with a bad kind: %v", err)
	}
	if _, err := r.Append(Record{Kind: KindEvent, Type: "D", Data: json.RawMessage(`{bad`)}); err == nil {
		t.Error("Append with invalid JSON data succeeded")
	}
	got, err := r.Append(rec(KindEvent, "E", "", ""))
	if err != nil || got[0].Seq != 2 {
		t.Fatalf("after rejected appends: %+v, %v; want seq 2 (nothing consumed)", got, err)
	}
	recs, _, err := ReadRecords(dir)
	if err != nil || len(recs) != 2 {
		t.Errorf("ReadRecords = %d records, %v; want 2", len(recs), err)
	}
}

func writeJournal(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, JournalFile), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const (
	line1 = `{"seq":1,"time":"2026-03-01T12:00:00Z","kind":"action","type":"A"}` + "\n"
	line2 = `{"seq":2,"time":"2026-03-01T12:00:00Z","kind":"event","type":"B","id":"x"}` + "\n"
	line3 = `{"seq":3,"time":"2026-03-01T12:00:00Z","kind":"event","type":"C"}` + "\n"
)

func TestTornLastLineIsDropped(t *testing.T) {
	tests := []struct {
		name, tail string
	}{
		{"partial JSON without newline", `{"seq":3,"time":"2026-03-0`},
		{"complete JSON without newline", strings.TrimSuffix(line3, "\n")},
		{"unparsable last line", "\x00\x00\x00\x00\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, dir := newRun(t)
			r.Close()
			writeJournal(t, dir, line1+line2+tt.tail)

			// A read-only reader skips the torn line and leaves the file alone.
			recs, warns, err := ReadRecords(dir)
			if err != nil || len(recs) != 2 || len(warns) != 1 {
				t.Fatalf("ReadRecords: %d records, %v, %v", len(recs), warns, err)
			}
			if data, _ := os.ReadFile(filepath.Join(dir, JournalFile)); string(data) != line1+line2+tt.tail {
				t.Error("ReadRecords modified the journal")
			}

			r2, recs, warns, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer r2.Close()
			if len(recs) != 2 || recs[1].Seq != 2 {
				t.Errorf("Open kept %d records, want 2", len(recs))
			}
			if len(warns) != 1 || warns[0].Line != 3 || !strings.Contains(warns[0].String(), "log.jsonl:3: dropped a torn last line") {
				t.Errorf("warnings = %v, want one about line 3", warns)
			}
			data, _ := os.ReadFile(filepath.Join(dir, JournalFile))
			if string(data) != line1+line2 {
				t.Errorf("torn line not cut off the file:\n%q", data)
			}
			got, err := r2.Append(rec(KindEvent, "C", "", ""))
			if err != nil || got[0].Seq != 3 {
				t.Errorf("append after repair: %+v, %v", got, err)
			}
			if recs, warns, err := ReadRecords(dir); err != nil || len(recs) != 3 || len(warns) != 0 {
				t.Errorf("after repair and append: %d records, %v, %v", len(recs), warns, err)
			}
		})
	}
}

func TestCorruptMiddleLineIsAnError(t *testing.T) {
	tests := []struct {
		name, content string
		line          int
		msg           string
	}{
		{"garbage", line1 + "garbage here\n" + line3, 2, "invalid JSON"},
		{"truncated record followed by more", line1 + `{"seq":2,"ti` + "\n" + line3, 2, "invalid JSON"},
		{"empty line", line1 + "\n" + line2, 2, "invalid JSON"},
		{"seq gap", line1 + line3 + line2, 2, "seq is 3, want 2"},
		{"seq gap on the last line", line1 + line3, 2, "seq is 3, want 2"},
		{"unknown kind", line1 + strings.Replace(line2, `"event"`, `"note"`, 1) + line3, 2, `kind is "note"`},
		{"unknown field", line1 + strings.Replace(line2, `"id"`, `"actor"`, 1) + line3, 2, `unknown field "actor"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, dir := newRun(t)
			r.Close()
			writeJournal(t, dir, tt.content)
			_, _, _, err := Open(dir)
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open = %v, want a *CorruptError", err)
			}
			if ce.Line != tt.line || !strings.Contains(err.Error(), fmt.Sprintf("%s:%d: corrupt journal record", filepath.Join(dir, JournalFile), tt.line)) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error = %v, want line %d and %q", err, tt.line, tt.msg)
			}
			if data, _ := os.ReadFile(filepath.Join(dir, JournalFile)); string(data) != tt.content {
				t.Error("Open modified a corrupt journal")
			}
			if _, _, err := ReadRecords(dir); !errors.Is(err, ErrCorrupt) {
				t.Errorf("ReadRecords = %v, want ErrCorrupt", err)
			}
			// The failed Open released the lock.
			if unlockErr := tryLockOnce(t, dir); unlockErr != nil {
				t.Errorf("lock still held after a failed Open: %v", unlockErr)
			}
		})
	}
}

func tryLockOnce(t *testing.T, dir string) error {
	t.Helper()
	l, err := acquire(filepath.Join(dir, LockFile), dir, false)
	if err != nil {
		return err
	}
	return l.release()
}

func TestOpenMissingRun(t *testing.T) {
	_, _, _, err := Open(filepath.Join(t.TempDir(), "nope"))
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "not a run directory") {
		t.Errorf("Open of a missing run: %v", err)
	}
}

func TestWriteFileAndSnapshot(t *testing.T) {
	r, dir := newRun(t)
	if err := r.WriteSnapshot(map[string]int{"phase": 1}); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteSnapshot(map[string]int{"phase": 2}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, SnapshotFile))
	if err != nil || string(data) != "{\n  \"phase\": 2\n}\n" {
		t.Errorf("state.json = %q, %v", data, err)
	}
	if err := r.WriteFile("artifacts/t1/attempt-2/result.json", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "artifacts", "t1", "attempt-2", "result.json")); err != nil || string(data) != "{}" {
		t.Errorf("nested artifact = %q, %v", data, err)
	}
	if err := r.WriteFile(PlanMarkdown, []byte("# Plan\n")); err != nil {
		t.Fatal(err)
	}

	for _, bad := range []string{"../escape", "/abs/x", "artifacts/../../x", "", JournalFile, "./" + LockFile} {
		if err := r.WriteFile(bad, []byte("x")); err == nil {
			t.Errorf("WriteFile(%q) succeeded", bad)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape")); err == nil {
		t.Error("WriteFile escaped the run directory")
	}

	// A value that cannot be encoded leaves the old snapshot in place.
	if err := r.WriteSnapshot(map[string]any{"ch": make(chan int)}); err == nil || !strings.Contains(err.Error(), SnapshotFile) {
		t.Errorf("WriteSnapshot of a channel: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, SnapshotFile)); string(data) != "{\n  \"phase\": 2\n}\n" {
		t.Errorf("failed snapshot changed state.json: %q", data)
	}
	assertNoTemps(t, dir)
}

func assertNoTemps(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), tempPrefix) {
			t.Errorf("temp file left behind: %s", path)
		}
		return nil
	})
}

func TestOpenRemovesLeftoverTempFiles(t *testing.T) {
	r, dir := newRun(t)
	r.Close()
	for _, p := range []string{tempPrefix + "state.json-123", "artifacts/" + tempPrefix + "x-9"} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r2, _, _, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r2.Close()
	assertNoTemps(t, dir)
}

func TestListAndLatest(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	if ids, err := List(runs); err != nil || len(ids) != 0 {
		t.Errorf("List of a missing dir = %v, %v", ids, err)
	}
	if _, err := Latest(runs); !errors.Is(err, ErrNoRuns) {
		t.Errorf("Latest with no runs: %v, want ErrNoRuns", err)
	}
	for _, id := range []string{"20260302-1", "20260301-9", "20260303-0"} {
		r, err := Create(runs, id)
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	os.Mkdir(filepath.Join(runs, "zz-not-a-run"), 0o755)
	os.WriteFile(filepath.Join(runs, "zz-file"), nil, 0o644)
	ids, err := List(runs)
	if want := []string{"20260301-9", "20260302-1", "20260303-0"}; err != nil || !reflect.DeepEqual(ids, want) {
		t.Errorf("List = %v, %v; want %v", ids, err, want)
	}
	if id, err := Latest(runs); err != nil || id != "20260303-0" {
		t.Errorf("Latest = %q, %v", id, err)
	}
}

// helper is the test binary running as a helper process.
type helper struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	ready  chan struct{} // closed when the helper prints "ready"
	done   chan struct{} // closed when it has exited and its output is read

	mu    sync.Mutex
	lines []string
}

func startHelper(t *testing.T, mode, dir string, env ...string) *helper {
	t.Helper()
	h := &helper{ready: make(chan struct{}), done: make(chan struct{})}
	h.cmd = exec.Command(os.Args[0], "-test.run=^$")
	h.cmd.Env = append(os.Environ(), helperEnv+"="+mode, "SLUICE_STORE_TEST_DIR="+dir)
	h.cmd.Env = append(h.cmd.Env, env...)
	pr, pw := io.Pipe()
	h.cmd.Stdout = pw
	h.cmd.Stderr = &h.stderr
	stdin, err := h.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.stdin = stdin
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		h.cmd.Wait()
		pw.Close()
	}()
	go func() {
		defer close(h.done)
		readyClosed := false
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if sc.Text() == "ready" && !readyClosed {
				readyClosed = true
				close(h.ready)
				continue
			}
			h.mu.Lock()
			h.lines = append(h.lines, sc.Text())
			h.mu.Unlock()
		}
		io.Copy(io.Discard, pr)
	}()
	return h
}

func (h *helper) waitReady(t *testing.T) {
	t.Helper()
	select {
	case <-h.ready:
	case <-h.done:
		t.Fatalf("helper exited before it was ready; stderr: %s", h.stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("helper never became ready")
	}
}

// wait waits for the helper to exit and its output to be read.
func (h *helper) wait(t *testing.T) {
	t.Helper()
	select {
	case <-h.done:
	case <-time.After(20 * time.Second):
		t.Fatal("helper did not exit")
	}
}

func (h *helper) output() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.lines...)
}

func TestLockNamesTheHolderPID(t *testing.T) {
	r, dir := newRun(t)
	r.Close()

	h := startHelper(t, "hold", dir)
	h.waitReady(t)
	pid := h.cmd.Process.Pid

	_, _, _, err := Open(dir)
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want a *LockedError", err)
	}
	if le.PID != pid || !strings.Contains(err.Error(), "process "+strconv.Itoa(pid)) || !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name pid %d and %s", err, pid, dir)
	}
	// The read-only path does not need the lock.
	if _, _, err := ReadRecords(dir); err != nil {
		t.Errorf("ReadRecords while locked: %v", err)
	}

	// When the holder dies, even by SIGKILL, the kernel releases the lock.
	h.cmd.Process.Kill()
	h.wait(t)
	r2, _, _, err := Open(dir)
	if err != nil {
		t.Fatalf("Open after the holder died: %v", err)
	}
	// The same process cannot open a run twice either: the flock is per open file.
	if _, _, _, err := Open(dir); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "process "+strconv.Itoa(os.Getpid())) {
		t.Errorf("second Open in the same process: %v", err)
	}
	r2.Close()
}

func TestLockRepo(t *testing.T) {
	sluiceDir := filepath.Join(t.TempDir(), ".sluice")
	h := startHelper(t, "holdrepo", sluiceDir)
	h.waitReady(t)
	pid := h.cmd.Process.Pid

	_, err := LockRepo(sluiceDir)
	var le *LockedError
	if !errors.As(err, &le) || !le.Repo || le.PID != pid {
		t.Fatalf("LockRepo while held = %#v, want a repo *LockedError with pid %d", err, pid)
	}
	if !strings.Contains(err.Error(), "another sluice run (process "+strconv.Itoa(pid)+")") {
		t.Errorf("message does not name the holder: %v", err)
	}

	// A clean release (stdin closed) frees the lock and clears the pid.
	h.stdin.Close()
	h.wait(t)
	if data, _ := os.ReadFile(filepath.Join(sluiceDir, LockFile)); len(data) != 0 {
		t.Errorf("lock file still names a pid after release: %q", data)
	}
	unlock, err := LockRepo(sluiceDir)
	if err != nil {
		t.Fatalf("LockRepo after release: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(sluiceDir, LockFile)); strings.TrimSpace(string(data)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file = %q, want our pid", data)
	}
	if err := unlock(); err != nil {
		t.Error(err)
	}
}

// TestDiskFullLeavesNoDamage runs the store in a process whose file size
// limit stands in for a full disk.
func TestDiskFullLeavesNoDamage(t *testing.T) {
	r, dir := newRun(t)
	if _, err := r.Append(rec(KindAction, "A", "", `{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteSnapshot(map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	r.Close()
	before, _ := os.ReadFile(filepath.Join(dir, SnapshotFile))

	h := startHelper(t, "fsize", dir)
	h.stdin.Close()
	h.wait(t)
	if !h.cmd.ProcessState.Success() {
		t.Fatalf("helper failed: %s", h.stderr.String())
	}
	got := map[string]string{}
	for _, l := range h.output() {
		var m map[string]string
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("helper output %q: %v", l, err)
		}
		got[m["op"]] = m["err"]
	}
	journal := filepath.Join(dir, JournalFile)
	if e := got["append-big"]; !strings.Contains(e, journal) || !strings.Contains(e, "file too large") {
		t.Errorf("big append error = %q, want it to name %s and the cause", e, journal)
	}
	if e := got["append-small"]; e != "" {
		t.Errorf("small append after a failed one: %q", e)
	}
	if e := got["snapshot-big"]; !strings.Contains(e, filepath.Join(dir, SnapshotFile)) || !strings.Contains(e, "file too large") {
		t.Errorf("big snapshot error = %q", e)
	}

	after, _ := os.ReadFile(filepath.Join(dir, SnapshotFile))
	if !bytes.Equal(before, after) {
		t.Errorf("state.json changed by a failed write: %q", after)
	}
	assertNoTemps(t, dir)
	r2, recs, warns, err := Open(dir)
	if err != nil {
		t.Fatalf("reopen after disk full: %v", err)
	}
	defer r2.Close()
	if len(warns) != 0 || len(recs) != 2 || recs[1].Type != "Small" {
		t.Errorf("journal after disk full: %+v, warnings %v; want A then Small", recs, warns)
	}
}

// TestInUseSeesTheDriver: a run directory whose lock is held reads as in
// use by the holder's pid; once released, or after the holder crashed, it
// reads as free.
func TestInUseSeesTheDriver(t *testing.T) {
	dir := t.TempDir()
	if _, inUse, err := InUse(dir); err != nil || inUse {
		t.Fatalf("a directory with no lock file: in use %v (%v)", inUse, err)
	}
	l, err := acquire(filepath.Join(dir, LockFile), dir, false)
	if err != nil {
		t.Fatal(err)
	}
	pid, inUse, err := InUse(dir)
	if err != nil || !inUse || pid != os.Getpid() {
		t.Fatalf("held lock: pid %d in use %v (%v), want pid %d", pid, inUse, err, os.Getpid())
	}
	if err := l.release(); err != nil {
		t.Fatal(err)
	}
	if _, inUse, err := InUse(dir); err != nil || inUse {
		t.Fatalf("released lock: in use %v (%v)", inUse, err)
	}
	// A crashed holder leaves its pid behind, naming a process that is gone.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, LockFile), []byte(fmt.Sprintf("%d\n", gone.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, inUse, err := InUse(dir); err != nil || inUse {
		t.Fatalf("a dead holder's pid: in use %v (%v)", inUse, err)
	}
}
