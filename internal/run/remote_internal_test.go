package run

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-run/sluice/internal/gitx"
	"github.com/sluice-run/sluice/internal/store"
)

func gitCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	gitOutput(t, dir, "", args...)
}

// TestRunFilesTravelAndStayInTheRunDirectory: a worker takes the files it
// lacks from other clones' refs and keeps its own; the starter takes every
// artifact (the later publication wins) but keeps its meta.json; a ref that
// holds anything but run files (the journal, say) is refused, naming it.
func TestRunFilesTravelAndStayInTheRunDirectory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	gitCmd(t, dir, "init", "-q", "-b", "main")
	gitCmd(t, dir, "commit", "-q", "--allow-empty", "-m", "first")
	bare := filepath.Join(t.TempDir(), "remote.git")
	gitCmd(t, dir, "init", "-q", "--bare", bare)
	gitCmd(t, dir, "remote", "add", "origin", bare)
	repo, err := gitx.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(time.Second); return clock }
	sync := func(owner string) *remoteSync {
		return &remoteSync{repo: repo, remote: "origin", runID: "r1", owner: owner, now: now}
	}
	write := func(root, name, content string) {
		t.Helper()
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// attach opens root as a run directory (it needs a journal file).
	attach := func(root string) *store.Run {
		t.Helper()
		f, err := os.OpenFile(filepath.Join(root, store.JournalFile), os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		run, err := store.Attach(root)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	read := func(root, name string) string {
		data, _ := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		return string(data)
	}

	a := t.TempDir()
	write(a, "meta.json", "{}")
	write(a, "artifacts/baseline.json", "A")
	write(a, "transcripts/task_t1_a1_execute.jsonl", "A")
	if err := sync("worker-a").pushFiles(ctx, a); err != nil {
		t.Fatal(err)
	}
	b := t.TempDir()
	write(b, "artifacts/baseline.json", "B")
	write(b, "artifacts/task_t2_a1_execute.json", "B")
	wb := sync("worker-b")
	if err := wb.pushFiles(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := wb.fetch(ctx); err == nil {
		t.Fatal("fetch succeeded although the remote has no run branch; the starter always pushes it first")
	}
	if err := repo.Fetch(ctx, "origin", "+refs/sluice/r1/files/*:"+wb.fetchedFiles()+"*"); err != nil {
		t.Fatal(err)
	}
	if err := wb.pullFiles(ctx, attach(b), false); err != nil {
		t.Fatal(err)
	}
	if got := read(b, "artifacts/baseline.json"); got != "B" {
		t.Errorf("a worker's own file was overwritten: %q", got)
	}
	if got := read(b, "transcripts/task_t1_a1_execute.jsonl"); got != "A" {
		t.Errorf("a worker did not take the file it lacked: %q", got)
	}
	// It publishes only what it wrote itself, never a copy it took.
	if err := wb.pushFiles(ctx, b); err != nil {
		t.Fatal(err)
	}
	own, err := repo.Files(ctx, "refs/sluice/r1/files/worker-b", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := own["transcripts/task_t1_a1_execute.jsonl"]; ok || len(own) != 2 {
		t.Errorf("worker b publishes %d files, copies included: %v", len(own), own)
	}
	// Nor does it after a restart (a new process, a new name).
	if err := sync("worker-b2").pushFiles(ctx, b); err != nil {
		t.Fatal(err)
	}
	again, err := repo.Files(ctx, "refs/sluice/r1/files/worker-b2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again["transcripts/task_t1_a1_execute.jsonl"]; ok || len(again) != 2 {
		t.Errorf("worker b, restarted, publishes %d files, copies included: %v", len(again), again)
	}

	starter := t.TempDir()
	write(starter, "meta.json", "starter's")
	write(starter, "artifacts/baseline.json", "old")
	if err := sync("starter").pullFiles(ctx, attach(starter), true); err != nil {
		t.Fatal(err)
	}
	if got := read(starter, "meta.json"); got != "starter's" {
		t.Errorf("the starter's meta.json was overwritten: %q", got)
	}
	if got := read(starter, "artifacts/baseline.json"); got != "B" {
		t.Errorf("the starter kept %q; the later publication (worker b's) should win", got)
	}
	if got := read(starter, "artifacts/task_t2_a1_execute.json"); got != "B" {
		t.Errorf("the starter lacks worker b's artifact: %q", got)
	}

	evil := t.TempDir()
	write(evil, "log.jsonl", "{}")
	if _, err := repo.CommitFiles(ctx, wb.fetchedFiles()+"evil", evil, []string{"log.jsonl"}, "evil", gitx.Identity{Name: "x", Email: "x@x", When: now()}); err != nil {
		t.Fatal(err)
	}
	err = sync("starter").pullFiles(ctx, attach(starter), true)
	if err == nil || !strings.Contains(err.Error(), "git push origin :refs/sluice/r1/files/evil") || !strings.Contains(err.Error(), "log.jsonl") {
		t.Fatalf("a ref holding the journal: want an error naming the ref and the file, got %v", err)
	}
	if got := read(starter, "log.jsonl"); got != "" {
		t.Fatalf("a journal from the remote was written into the run directory: %q", got)
	}

	// Git takes a ".." tree entry: artifacts/../log.jsonl must be refused
	// like log.jsonl, and the journal left alone.
	gitCmd(t, dir, "update-ref", "-d", wb.fetchedFiles()+"evil")
	write(starter, "log.jsonl", "the journal")
	blob := gitOutput(t, dir, "{}", "hash-object", "-w", "--stdin")
	inner := gitOutput(t, dir, "100644 blob "+blob+"\tlog.jsonl\n", "mktree")
	dotdot := gitOutput(t, dir, "040000 tree "+inner+"\t..\n", "mktree")
	root := gitOutput(t, dir, "040000 tree "+dotdot+"\tartifacts\n", "mktree")
	commit := gitOutput(t, dir, "", "commit-tree", root, "-m", "escape")
	gitCmd(t, dir, "update-ref", wb.fetchedFiles()+"escape", commit)
	err = sync("starter").pullFiles(ctx, attach(starter), true)
	if err == nil || !strings.Contains(err.Error(), "artifacts/../log.jsonl") {
		t.Fatalf("a ref escaping through artifacts/..: want an error naming it, got %v", err)
	}
	if got := read(starter, "log.jsonl"); got != "the journal" {
		t.Fatalf("the journal was replaced from the remote: %q", got)
	}
}

// gitOutput runs git with stdin, without the machine's git configuration,
// and returns its trimmed output.
func gitOutput(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
