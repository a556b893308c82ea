package gitx

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// clonePair makes a repository a with a bare remote "origin" and a clone b
// of that remote.
func clonePair(t *testing.T) (a *Repo, dirA string, b *Repo, dirB string) {
	t.Helper()
	a, dirA = newRepo(t)
	bare := filepath.Join(t.TempDir(), "remote.git")
	run(t, t.TempDir(), "init", "-q", "--bare", "-b", "main", bare)
	run(t, dirA, "remote", "add", "origin", bare)
	run(t, dirA, "push", "-q", "origin", "main")
	dirB = filepath.Join(t.TempDir(), "b")
	run(t, t.TempDir(), "clone", "-q", bare, dirB)
	b, err := Open(context.Background(), dirB)
	if err != nil {
		t.Fatal(err)
	}
	return a, dirA, b, dirB
}

// TestFilesTravelThroughARemote: files committed under a ref in one clone
// are pushed, fetched by another clone and read back byte for byte; a
// branch pushed from one clone is fetched into the other's remote-tracking
// refs, and pruned there once the remote deletes it.
func TestFilesTravelThroughARemote(t *testing.T) {
	ctx := context.Background()
	a, dirA, b, _ := clonePair(t)

	src := t.TempDir()
	files := map[string]string{
		"meta.json":                     "{\"run\": 1}\n",
		"artifacts/task_t1.json":        "[]",
		"transcripts/t 1 with space.md": "no newline at the end",
		"artifacts/empty.txt":           "",
	}
	var names []string
	for name, content := range files {
		write(t, filepath.Join(src, filepath.FromSlash(name)), content)
		names = append(names, name)
	}
	const ref = "refs/sluice/r1/files/worker-a"
	sha, err := a.CommitFiles(ctx, ref, src, names, "files of worker a", testID)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := a.RefSHA(ctx, ref); got != sha {
		t.Fatalf("%s points at %q, want the new commit %s", ref, got, sha)
	}
	if err := a.Push(ctx, "origin", "+"+ref+":"+ref); err != nil {
		t.Fatal(err)
	}
	if err := b.Fetch(ctx, "origin", "+refs/sluice/r1/files/*:refs/sluice/r1/files/*"); err != nil {
		t.Fatal(err)
	}
	if got, err := a.RemoteRef(ctx, "origin", ref); err != nil || got != sha {
		t.Fatalf("the remote has %s at %q (%v), want %s", ref, got, err, sha)
	}
	if got, err := a.RemoteRef(ctx, "origin", "refs/sluice/r1/files/nobody"); err != nil || got != "" {
		t.Fatalf("the remote has a ref never pushed, at %q (%v)", got, err)
	}
	refs, err := b.Refs(ctx, "refs/sluice/r1/files/")
	if err != nil || len(refs) != 1 || refs[0] != (Ref{Name: ref, SHA: sha}) {
		t.Fatalf("refs of clone b: %v (%v), want %s at %s", refs, err, ref, sha)
	}
	got, err := b.Files(ctx, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	some, err := b.Files(ctx, ref, func(name string) bool { return name == "meta.json" })
	if err != nil || len(some) != 1 || string(some["meta.json"]) != files["meta.json"] {
		t.Fatalf("reading only meta.json: %q (%v)", some, err)
	}
	if len(got) != len(files) {
		t.Fatalf("read %d files, want %d: %v", len(got), len(files), got)
	}
	for name, content := range files {
		if string(got[name]) != content {
			t.Errorf("%s: read %q, want %q", name, got[name], content)
		}
	}

	// A branch: pushed, fetched, then deleted on the remote and pruned.
	head := run(t, dirA, "rev-parse", "HEAD")
	if err := a.SetBranch(ctx, "sluice/r1-tasks/t1-a1", head); err != nil {
		t.Fatal(err)
	}
	if err := a.Push(ctx, "origin", "+refs/heads/sluice/r1-tasks/t1-a1:refs/heads/sluice/r1-tasks/t1-a1"); err != nil {
		t.Fatal(err)
	}
	spec := "+refs/heads/sluice/r1-tasks/*:refs/remotes/origin/sluice/r1-tasks/*"
	if err := b.Fetch(ctx, "origin", spec); err != nil {
		t.Fatal(err)
	}
	if got, err := b.RefSHA(ctx, "refs/remotes/origin/sluice/r1-tasks/t1-a1"); err != nil || got != head {
		t.Fatalf("fetched task branch at %q (%v), want %s", got, err, head)
	}
	if err := a.Push(ctx, "origin", ":refs/heads/sluice/r1-tasks/t1-a1"); err != nil {
		t.Fatal(err)
	}
	if err := b.Fetch(ctx, "origin", spec); err != nil {
		t.Fatal(err)
	}
	if got, err := b.RefSHA(ctx, "refs/remotes/origin/sluice/r1-tasks/t1-a1"); err != nil || got != "" {
		t.Fatalf("a task branch deleted on the remote is still at %q (%v) after a fetch", got, err)
	}
}

// TestPushRefusesANonFastForward: a push that would drop the remote's
// commits fails, so a merge made on a stale integration head never
// overwrites another worker's.
func TestPushRefusesANonFastForward(t *testing.T) {
	ctx := context.Background()
	a, dirA, b, dirB := clonePair(t)
	write(t, filepath.Join(dirB, "b.txt"), "b\n")
	run(t, dirB, "add", "b.txt")
	run(t, dirB, "commit", "-q", "-m", "b")
	if err := b.Push(ctx, "origin", "main:main"); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dirA, "a2.txt"), "a\n")
	run(t, dirA, "add", "a2.txt")
	run(t, dirA, "commit", "-q", "-m", "a")
	if err := a.Push(ctx, "origin", "main:main"); err == nil {
		t.Fatal("a non-fast-forward push succeeded")
	}
	if _, err := os.Stat(filepath.Join(dirB, "b.txt")); err != nil {
		t.Fatal(err)
	}
}
