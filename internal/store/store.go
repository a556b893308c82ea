// Package store keeps a run's directory (.sluice/runs/<run-id>/): the journal
// log.jsonl, the state.json snapshot, plan.yaml, plan.md, artifacts/ and
// transcripts/.
//
// The journal is the source of truth. Every record is appended and fsynced
// before Append returns, so whatever the engine does next is already on disk.
// A crash can tear only the last line, which Open drops with a warning; any
// other damage is an error naming the line, because guessing past it could
// replay a different history. Everything else in the directory is written
// atomically (temp file, fsync, rename, fsync dir), so a reader never sees a
// half-written file.
package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Record kinds.
const (
	KindAction = "action"
	KindEvent  = "event"
)

// File names inside a run directory.
const (
	JournalFile    = "log.jsonl"
	SnapshotFile   = "state.json"
	LockFile       = "lock"
	PlanFile       = "plan.yaml"
	PlanMarkdown   = "plan.md"
	ArtifactsDir   = "artifacts"
	TranscriptsDir = "transcripts"
)

// Record is one line of the journal: an action when it was issued or an
// event when it arrived.
type Record struct {
	// Seq numbers records from 1 with no gaps; the store assigns it.
	Seq int64 `json:"seq"`
	// Time is set by the caller: the store never reads the clock.
	Time time.Time `json:"time"`
	// Kind is KindAction or KindEvent.
	Kind string `json:"kind"`
	// Type names the action or event ("Delegate", "DelegationDone").
	Type string `json:"type"`
	// ID is the action id an event answers, or the id of the action itself.
	ID   string          `json:"id,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// Warning is something Open or ReadRecords repaired or skipped.
type Warning struct {
	Path    string
	Line    int
	Message string
}

func (w Warning) String() string {
	return fmt.Sprintf("%s:%d: %s", w.Path, w.Line, w.Message)
}

// ErrCorrupt is matched (errors.Is) by every *CorruptError.
var ErrCorrupt = errors.New("corrupt journal")

// CorruptError is damage to the journal before its last line.
type CorruptError struct {
	Path string
	Line int
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s:%d: corrupt journal record: %v; only a torn last line can be repaired automatically, so inspect the file or restore it from a backup", e.Path, e.Line, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// ErrNoRuns is returned by Latest when the runs directory holds no run.
var ErrNoRuns = errors.New("no runs")

// ErrClosed is returned by a Run's methods after Close.
var ErrClosed = errors.New("run is closed")

// Run is an open run directory. It holds the run's lock until Close, so only
// one process drives a run at a time. Its methods are safe for concurrent use.
type Run struct {
	dir  string
	lock *fileLock

	mu      sync.Mutex
	journal *os.File
	nextSeq int64
	// broken is set when an append failed in a way that may have left bytes
	// on disk we could not take back; appending more would bury them.
	broken error
	closed bool
}

var runIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Create makes the run directory runsDir/runID with an empty journal and
// opens it. It fails if the directory already exists.
func Create(runsDir, runID string) (*Run, error) {
	if !runIDRE.MatchString(runID) {
		return nil, fmt.Errorf("create run: invalid run id %q: use letters, digits, '.', '_' and '-', starting with a letter or digit", runID)
	}
	if err := os.MkdirAll(runsDir, 0o755); err != nil {
		return nil, fmt.Errorf("create runs directory: %w", err)
	}
	dir := filepath.Join(runsDir, runID)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create run: %w", err)
	}
	lock, err := acquire(filepath.Join(dir, LockFile), dir, false)
	if err != nil {
		return nil, err
	}
	r, err := func() (*Run, error) {
		for _, sub := range []string{ArtifactsDir, TranscriptsDir} {
			if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
				return nil, fmt.Errorf("create run: %w", err)
			}
		}
		path := filepath.Join(dir, JournalFile)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, fmt.Errorf("create journal: %w", err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, fmt.Errorf("sync %s: %w", path, err)
		}
		if err := syncDir(dir); err != nil {
			f.Close()
			return nil, err
		}
		if err := syncDir(runsDir); err != nil {
			f.Close()
			return nil, err
		}
		return &Run{dir: dir, lock: lock, journal: f, nextSeq: 1}, nil
	}()
	if err != nil {
		_ = lock.release()
		return nil, err
	}
	return r, nil
}

// Open locks an existing run directory and reads its journal. A torn last
// line is cut off the file and reported as a warning; any other bad line is a
// *CorruptError. Leftover temp files from an interrupted atomic write are
// removed. A run already open elsewhere gives a *LockedError.
func Open(runDir string) (*Run, []Record, []Warning, error) {
	path := filepath.Join(runDir, JournalFile)
	if _, err := os.Stat(path); err != nil {
		return nil, nil, nil, fmt.Errorf("open run %s: not a run directory: %w", runDir, err)
	}
	lock, err := acquire(filepath.Join(runDir, LockFile), runDir, false)
	if err != nil {
		return nil, nil, nil, err
	}
	r, recs, warns, err := openLocked(runDir, path, lock)
	if err != nil {
		_ = lock.release()
		return nil, nil, nil, err
	}
	return r, recs, warns, nil
}

// Attach opens an existing run directory for writing artifacts and
// transcripts only, without taking its lock: for a worker that executes
// actions of a run another process drives and journals (the Temporal
// engine). Append on an attached Run fails.
func Attach(runDir string) (*Run, error) {
	if _, err := os.Stat(filepath.Join(runDir, JournalFile)); err != nil {
		return nil, fmt.Errorf("attach to run %s: not a run directory: %w", runDir, err)
	}
	return &Run{dir: runDir}, nil
}

func openLocked(runDir, path string, lock *fileLock) (*Run, []Record, []Warning, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read journal: %w", err)
	}
	recs, keep, warns, err := parseJournal(path, data)
	if err != nil {
		return nil, nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open journal: %w", err)
	}
	if keep < int64(len(data)) {
		if err := f.Truncate(keep); err != nil {
			f.Close()
			return nil, nil, nil, fmt.Errorf("cut torn line off %s: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, nil, nil, fmt.Errorf("sync %s: %w", path, err)
		}
	}
	if err := removeTemps(runDir); err != nil {
		f.Close()
		return nil, nil, nil, err
	}
	next := int64(1)
	if len(recs) > 0 {
		next = recs[len(recs)-1].Seq + 1
	}
	return &Run{dir: runDir, lock: lock, journal: f, nextSeq: next}, recs, warns, nil
}

// ReadRecords reads a run's journal without locking it, for status and log.
// A torn last line (which may be a write in progress) is skipped with a
// warning and the file is left as it is.
func ReadRecords(runDir string) ([]Record, []Warning, error) {
	path := filepath.Join(runDir, JournalFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read journal: %w", err)
	}
	recs, _, warns, err := parseJournal(path, data)
	if err != nil {
		return nil, nil, err
	}
	return recs, warns, nil
}

// parseJournal decodes the journal and returns the records, the length of
// the intact prefix, and a warning when the last line is torn.
func parseJournal(path string, data []byte) ([]Record, int64, []Warning, error) {
	var recs []Record
	var warns []Warning
	off := 0
	line := 0
	for off < len(data) {
		line++
		end := bytes.IndexByte(data[off:], '\n')
		last := end < 0 || off+end+1 == len(data)
		var raw []byte
		if end < 0 {
			raw = data[off:]
		} else {
			raw = data[off : off+end]
		}
		rec, perr := decodeRecord(raw)
		if perr == nil && end >= 0 {
			if want := int64(len(recs)) + 1; rec.Seq != want {
				perr = fmt.Errorf("seq is %d, want %d", rec.Seq, want)
				// A wrong sequence number is not a torn write: the line is complete.
				return nil, 0, nil, &CorruptError{Path: path, Line: line, Err: perr}
			}
			recs = append(recs, rec)
			off += end + 1
			continue
		}
		if !last {
			return nil, 0, nil, &CorruptError{Path: path, Line: line, Err: perr}
		}
		why := "no trailing newline"
		if perr != nil {
			why = perr.Error()
		}
		warns = append(warns, Warning{Path: path, Line: line,
			Message: fmt.Sprintf("dropped a torn last line (%d bytes, %s): the process stopped mid-write", len(data)-off, why)})
		return recs, int64(off), warns, nil
	}
	return recs, int64(off), warns, nil
}

func decodeRecord(raw []byte) (Record, error) {
	var rec Record
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return Record{}, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Record{}, errors.New("invalid JSON: extra data after the record")
	}
	if rec.Kind != KindAction && rec.Kind != KindEvent {
		return Record{}, fmt.Errorf("kind is %q, want %q or %q", rec.Kind, KindAction, KindEvent)
	}
	return rec, nil
}

// Dir returns the run directory.
func (r *Run) Dir() string { return r.dir }

// Append writes records to the journal and fsyncs it before returning them
// with Seq set. Each record is durable on its own; a crash during a batch
// may keep a prefix of it. After a failed write the Run refuses further
// appends; reopen the run to recover.
func (r *Run) Append(recs ...Record) ([]Record, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	if r.journal == nil {
		return nil, fmt.Errorf("append to the journal of %s: this process attached to the run for artifacts only; the process driving the run keeps its journal", r.dir)
	}
	if r.broken != nil {
		return nil, fmt.Errorf("journal unusable after an earlier failure (reopen the run to recover): %w", r.broken)
	}
	path := filepath.Join(r.dir, JournalFile)
	out := make([]Record, len(recs))
	var buf bytes.Buffer
	for i, rec := range recs {
		if rec.Kind != KindAction && rec.Kind != KindEvent {
			return nil, fmt.Errorf("append to %s: record %d (%s) has kind %q, want %q or %q", path, i, rec.Type, rec.Kind, KindAction, KindEvent)
		}
		rec.Seq = r.nextSeq + int64(i)
		line, err := json.Marshal(rec)
		if err != nil {
			return nil, fmt.Errorf("append to %s: encode record %d (%s): %w", path, i, rec.Type, err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
		out[i] = rec
	}

	st, err := r.journal.Stat()
	if err != nil {
		return nil, fmt.Errorf("append to %s: %w", path, err)
	}
	before := st.Size()
	if _, err := r.journal.Write(buf.Bytes()); err != nil {
		// Take back a partial write so the next append does not land after
		// a torn line, which would then be corruption in the middle.
		if terr := r.journal.Truncate(before); terr != nil {
			r.broken = err
		}
		return nil, fmt.Errorf("append to %s: %w", path, err)
	}
	if err := r.journal.Sync(); err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages;
		// nothing written since can be trusted (see PostgreSQL's fsync
		// incident), so stop here.
		r.broken = err
		return nil, fmt.Errorf("append to %s: sync: %w", path, err)
	}
	r.nextSeq += int64(len(recs))
	return out, nil
}

// WriteSnapshot writes v as JSON to state.json atomically.
func (r *Run) WriteSnapshot(v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode snapshot for %s: %w", filepath.Join(r.dir, SnapshotFile), err)
	}
	return r.WriteFile(SnapshotFile, append(data, '\n'))
}

// WriteFile writes data to rel, a path inside the run directory (plan.yaml,
// plan.md, artifacts/..., transcripts/...), atomically: readers see the old
// content or the new, never a mix. Missing parent directories are created.
func (r *Run) WriteFile(rel string, data []byte) error {
	if !filepath.IsLocal(rel) {
		return fmt.Errorf("write %q in run %s: the path must be relative and stay inside the run directory", rel, r.dir)
	}
	clean := filepath.Clean(rel)
	if clean == JournalFile || clean == LockFile {
		return fmt.Errorf("write %q in run %s: %s is managed by the store", rel, r.dir, clean)
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return ErrClosed
	}
	path := filepath.Join(r.dir, clean)
	if err := mkdirAllSync(r.dir, filepath.Dir(clean)); err != nil {
		return err
	}
	return writeAtomic(path, data)
}

// Close releases the journal and the lock.
func (r *Run) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	if r.journal == nil {
		return nil // attached: no journal, no lock
	}
	err := r.journal.Close()
	if lerr := r.lock.release(); err == nil {
		err = lerr
	}
	return err
}

// tempPrefix marks a file being written atomically; Open deletes leftovers.
const tempPrefix = ".tmp-"

// writeAtomic writes a temp file next to path, fsyncs it, renames it over
// path and fsyncs the directory. On failure the temp file is removed and
// path keeps its old content.
func writeAtomic(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	f, err := os.CreateTemp(dir, tempPrefix+base+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return syncDir(filepath.Clean(dir))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// mkdirAllSync creates root/rel's missing directories one level at a time,
// fsyncing each parent so the new entries survive a crash.
func mkdirAllSync(root, rel string) error {
	if rel == "." || rel == "" {
		return nil
	}
	parent := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		dir := filepath.Join(parent, part)
		err := os.Mkdir(dir, 0o755)
		switch {
		case err == nil:
			if err := syncDir(parent); err != nil {
				return err
			}
		case errors.Is(err, fs.ErrExist):
			if fi, serr := os.Stat(dir); serr != nil || !fi.IsDir() {
				return fmt.Errorf("create directory %s: it exists and is not a directory", dir)
			}
		default:
			return fmt.Errorf("create directory: %w", err)
		}
		parent = dir
	}
	return nil
}

// removeTemps deletes temp files an interrupted writeAtomic left behind in
// the run directory and its subdirectories. Only the lock holder calls it,
// so no write is in progress.
func removeTemps(runDir string) error {
	return filepath.WalkDir(runDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("clean temp files in %s: %w", runDir, err)
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), tempPrefix) {
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("remove leftover temp file: %w", err)
			}
		}
		return nil
	})
}

// List returns the ids of the runs in runsDir (directories holding a
// journal), sorted by name. A missing runsDir has no runs.
func List(runsDir string) ([]string, error) {
	entries, err := os.ReadDir(runsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(runsDir, e.Name(), JournalFile)); err == nil {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// Latest returns the id of the last run by name, which is the newest when
// run ids begin with their creation time. It returns ErrNoRuns if there is
// none.
func Latest(runsDir string) (string, error) {
	ids, err := List(runsDir)
	if err != nil {
		return "", err
	}
	if len(ids) == 0 {
		return "", fmt.Errorf("%s: %w", runsDir, ErrNoRuns)
	}
	return ids[len(ids)-1], nil
}
