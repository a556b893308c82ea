package run

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/store"
)

// Loaded is a run read from disk without taking its lock: for status, log
// and report, which may run beside the process driving it.
type Loaded struct {
	Dir      string
	Meta     Meta
	State    loop.State
	Records  []store.Record
	Entries  []loop.Entry
	Warnings []store.Warning
	// Temporal is the workflow the run was last driven by on the Temporal
	// engine; nil when it never was.
	Temporal *Attachment
	// DriverPID is the process driving the run now (sluice run or resume),
	// 0 when none is.
	DriverPID int
}

// RunsDir is where a repository keeps its runs.
func RunsDir(root string) string { return filepath.Join(root, ".sluice", "runs") }

// Load reads run runID (empty: the latest) of the repository at root.
func Load(root, runID string) (*Loaded, error) {
	runs := RunsDir(root)
	if runID == "" {
		id, err := store.Latest(runs)
		if err != nil {
			return nil, fmt.Errorf("no runs in %s (start one with `sluice run GOAL`, or try `sluice demo`): %w", runs, err)
		}
		runID = id
	}
	return LoadDir(filepath.Join(runs, runID))
}

// LoadDir reads the run directory dir.
func LoadDir(dir string) (*Loaded, error) {
	data, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", dir, err)
	}
	l := &Loaded{Dir: dir}
	if err := json.Unmarshal(data, &l.Meta); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, metaFile), err)
	}
	recs, warnings, err := store.ReadRecords(dir)
	if err != nil {
		return nil, err
	}
	entries, err := Entries(recs)
	if err != nil {
		return nil, err
	}
	l.Records, l.Entries, l.Warnings = recs, entries, warnings
	l.State = loop.Fold(loop.New(l.Meta.RunID, l.Meta.Settings), entries)
	if data, err := os.ReadFile(filepath.Join(dir, attachmentFile)); err == nil {
		var a Attachment
		if err := json.Unmarshal(data, &a); err != nil {
			return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, attachmentFile), err)
		}
		l.Temporal = &a
	}
	if pid, inUse, err := store.InUse(dir); err == nil && inUse {
		l.DriverPID = pid
	}
	return l, nil
}
