package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestAttachWritesArtifactsBesideTheDriver: while one process holds a run
// open (and its lock), another attaches, writes an artifact, and cannot
// append to the journal; closing the attachment leaves the lock held.
func TestAttachWritesArtifactsBesideTheDriver(t *testing.T) {
	r, dir := newRun(t)
	a, err := Attach(dir)
	if err != nil {
		t.Fatalf("Attach beside an open run: %v", err)
	}
	if err := a.WriteFile("artifacts/x.json", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "artifacts", "x.json")); err != nil || string(data) != `{}` {
		t.Fatalf("artifact: %q, %v", data, err)
	}
	if _, err := a.Append(rec(KindAction, "merge", "t1/merge", "")); err == nil {
		t.Fatal("an attached run appended to the journal")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tryLockOnce(t, dir); err == nil {
		t.Fatal("closing an attachment released the driver's lock")
	}
	if _, err := r.Append(rec(KindAction, "merge", "t1/merge", "")); err != nil {
		t.Fatalf("the driver cannot append after an attachment closed: %v", err)
	}
	if _, err := Attach(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Attach of a missing run: %v", err)
	}
}
