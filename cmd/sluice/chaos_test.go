package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-run/sluice/internal/demo"
	"github.com/sluice-run/sluice/internal/model/fake"
	"github.com/sluice-run/sluice/internal/store"
)

// sluiceBin links the test binary under the name "sluice", which
// testscript.RunMain runs as the real command.
func sluiceBin(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "sluice")
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

type e2e struct {
	t    *testing.T
	bin  string
	env  []string
	srv  *fake.Server
	stop func() error
}

func newE2E(t *testing.T, script []byte) *e2e {
	t.Helper()
	s, err := fake.ParseScript(script)
	if err != nil {
		t.Fatal(err)
	}
	srv := fake.NewServer(s)
	url, stop, err := fake.Listen(context.Background(), "127.0.0.1:0", srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop() })
	env := append(os.Environ(), "ANTHROPIC_BASE_URL="+url, "ANTHROPIC_API_KEY=sk-ant-test-0000000000", "GOFLAGS=-buildvcs=false", "GOTOOLCHAIN=local")
	return &e2e{t: t, bin: sluiceBin(t), env: env, srv: srv, stop: stop}
}

func (e *e2e) command(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(e.bin, args...)
	cmd.Dir, cmd.Env = dir, e.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

func gitTree(t *testing.T, dir, rev string) string {
	t.Helper()
	cmd := exec.Command("git", "rev-parse", rev+"^{tree}")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tree of %s in %s: %v", rev, dir, err)
	}
	return strings.TrimSpace(string(out))
}

func runBranch(t *testing.T, dir string) string {
	t.Helper()
	id, err := store.Latest(filepath.Join(dir, ".sluice", "runs"))
	if err != nil {
		t.Fatal(err)
	}
	return "sluice/" + id
}

// waitGroupGone waits until no process of the group is left, so orphaned
// git children cannot race the resumed run.
func waitGroupGone(pgid int) {
	for i := 0; i < 600; i++ {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestChaosKilledRunsResumeToTheSameTree SIGKILLs `sluice run` and then
// `sluice resume` at random moments, resumes each time, and checks that the
// run ends with the same tree as an uninterrupted run and that no
// delegation whose completion was journaled was ever sent again.
func TestChaosKilledRunsResumeToTheSameTree(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and resumes a whole run 20 times; skipped with -short")
	}
	e := newE2E(t, demo.Script())

	ref := t.TempDir()
	if err := demo.WriteSample(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	if out, err := e.command(ref, "run", "--yes", "--jobs", "4", demo.Goal).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	want := gitTree(t, ref, runBranch(t, ref))

	dir := t.TempDir()
	if err := demo.WriteSample(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 11))
	kills := 0
	for attempt := 0; attempt < 60 && kills < 20; attempt++ {
		args := []string{"resume", "--yes"}
		if attempt == 0 {
			args = []string{"run", "--yes", "--jobs", "4", demo.Goal}
		}
		cmd := e.command(dir, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			// Finished before the kill: nothing left to interrupt.
			if err == nil {
				attempt = 60
			}
		case <-time.After(time.Duration(300+r.IntN(2500)) * time.Millisecond):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
			kills++
		}
		waitGroupGone(cmd.Process.Pid)
	}
	out, err := e.command(dir, "resume", "--yes").CombinedOutput()
	if err != nil {
		t.Fatalf("final resume after %d kills: %v\n%s", kills, err, out)
	}
	if got := gitTree(t, dir, runBranch(t, dir)); got != want {
		t.Fatalf("after %d kills the run branch tree is %s, want %s (uninterrupted)\n%s", kills, got, want, out)
	}
	t.Logf("%d kills, same tree %s", kills, want)
	checkNoCompletedDelegationRepeated(t, dir, e.srv.Requests())
}

// checkNoCompletedDelegationRepeated: for every delegation the journal says
// completed, no conversation with the same delegation message started after
// the completion was journaled.
func checkNoCompletedDelegationRepeated(t *testing.T, dir string, reqs []fake.Recorded) {
	t.Helper()
	runDir := filepath.Join(dir, ".sluice", "runs", strings.TrimPrefix(runBranch(t, dir), "sluice/"))
	recs, _, err := store.ReadRecords(runDir)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, rec := range recs {
		if rec.Kind != store.KindEvent || rec.Type != "delegation_done" {
			continue
		}
		msg, err := os.ReadFile(filepath.Join(runDir, "artifacts", strings.ReplaceAll(rec.ID, "/", "_")+".delegation.md"))
		if err != nil {
			t.Fatalf("delegation message of %s: %v", rec.ID, err)
		}
		started := false
		for _, q := range reqs {
			if !startsConversation(q.Body, string(msg)) {
				continue
			}
			if q.Time.After(rec.Time) {
				t.Errorf("delegation %s completed at %s and was started again at %s", rec.ID, rec.Time.Format(time.RFC3339Nano), q.Time.Format(time.RFC3339Nano))
			} else {
				started = true
			}
		}
		if !started {
			t.Errorf("no recorded request started delegation %s: the check cannot see it", rec.ID)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no completed delegations in the journal")
	}
}

// startsConversation reports whether an Anthropic request body is the first
// turn of a delegation whose message is msg.
func startsConversation(body json.RawMessage, msg string) bool {
	var req struct {
		Messages []struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Messages) != 1 {
		return false
	}
	for _, b := range req.Messages[0].Content {
		if b.Type == "text" && b.Text == msg {
			return true
		}
	}
	return false
}

// TestSecondRunOnTheSameRepositoryIsRefused: while one process holds the
// repository, `sluice run` refuses with a message naming the holder.
func TestSecondRunOnTheSameRepositoryIsRefused(t *testing.T) {
	e := newE2E(t, demo.Script())
	dir := t.TempDir()
	if err := demo.WriteSample(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	unlock, err := store.LockRepo(filepath.Join(dir, ".sluice"))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	out, err := e.command(dir, "run", "--yes", demo.Goal).CombinedOutput()
	if err == nil {
		t.Fatalf("a second run started:\n%s", out)
	}
	if !strings.Contains(string(out), "another sluice run") || !strings.Contains(string(out), fmt.Sprint(os.Getpid())) {
		t.Fatalf("the refusal should name the other run's process %d:\n%s", os.Getpid(), out)
	}
	if runs, _ := store.List(filepath.Join(dir, ".sluice", "runs")); len(runs) != 0 {
		t.Fatalf("the refused run left a run directory: %v", runs)
	}
}
