package run_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluice-run/sluice/internal/demo"
	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/run"
)

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func fixedClock() func() time.Time {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return func() time.Time { return t0 }
}

// runDemo runs the embedded demo with jobs in a fresh directory.
func runDemo(t *testing.T, jobs int) (*demo.Result, string) {
	t.Helper()
	dir := t.TempDir()
	res, err := demo.Run(context.Background(), demo.Options{Dir: dir, Jobs: jobs, Run: run.Options{Now: fixedClock(), Getenv: func(string) string { return "" }}})
	if err != nil {
		t.Fatalf("demo run: %v", err)
	}
	return res, dir
}

func TestDemoRunMergesEveryTaskAndTheBranchPassesItsTests(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test in real worktrees; skipped with -short")
	}
	res, dir := runDemo(t, 4)
	s := res.State
	if s.Status != loop.StatusDone {
		t.Fatalf("status %s: %s", s.Status, s.Reason)
	}
	if len(s.Critiques) != 2 || s.Critiques[0].Verdict != "REVISE" {
		t.Fatalf("want one revision from the critic, got %+v", s.Critiques)
	}
	t3 := s.Tasks["t3"]
	if t3.Attempt != 2 || len(t3.Failures) != 1 || !strings.Contains(strings.Join(t3.Failures[0].SpecificFailures, "\n"), "test gate failed") {
		t.Fatalf("t3 should fail its test gate once and pass on retry: %+v", t3)
	}
	for _, id := range []string{"t1", "t2", "t3", "t4"} {
		if s.Tasks[id].Status != loop.TaskMerged {
			t.Fatalf("task %s = %s", id, s.Tasks[id].Status)
		}
	}
	// The user's branch and working tree are untouched; the run branch
	// holds every task and passes go test.
	if got := gitOut(t, dir, "status", "--porcelain"); got != "" {
		t.Fatalf("the user's working tree changed:\n%s", got)
	}
	if gitOut(t, dir, "rev-parse", "main") == gitOut(t, dir, "rev-parse", res.Branch) {
		t.Fatal("the run branch did not move")
	}
	check := t.TempDir()
	gitOut(t, dir, "worktree", "add", "--detach", check, res.Branch)
	cmd := exec.Command("go", "test", "./...")
	cmd.Dir = check
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test on the run branch: %v\n%s", err, out)
	}
	for _, f := range []string{"words.go", "count.go", "title.go", "report.go"} {
		if _, err := os.Stat(check + "/" + f); err != nil {
			t.Fatalf("run branch lacks %s", f)
		}
	}
}

// TestParityBetweenOneJobAndEight: the same scripted run with --jobs 1 and
// --jobs 8 ends with the same tree, plan and task states (seed 003).
func TestParityBetweenOneJobAndEight(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two whole demo runs; skipped with -short")
	}
	one, dir1 := runDemo(t, 1)
	eight, dir8 := runDemo(t, 8)
	if a, b := gitOut(t, dir1, "rev-parse", one.Branch+"^{tree}"), gitOut(t, dir8, "rev-parse", eight.Branch+"^{tree}"); a != b {
		t.Fatalf("tree hashes differ: jobs 1 %s, jobs 8 %s", a, b)
	}
	p1, _ := json.Marshal(one.State.Plan)
	p8, _ := json.Marshal(eight.State.Plan)
	if string(p1) != string(p8) {
		t.Fatalf("plans differ:\n%s\n%s", p1, p8)
	}
	for _, id := range one.State.Order {
		a, b := one.State.Tasks[id], eight.State.Tasks[id]
		if a.Status != b.Status || a.Attempt != b.Attempt || strings.Join(a.Changed, ",") != strings.Join(b.Changed, ",") {
			t.Fatalf("task %s differs: %+v vs %+v", id, a, b)
		}
	}
}

// TestDemoWithTheShippedCapabilities: security-review and design-spec enabled
// on the demo produce their artifacts and gates: a design spec per plan
// version, the checklist in every code review and only there, and the
// blocking attested gate put to every verifier.
func TestDemoWithTheShippedCapabilities(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole demo; skipped with -short")
	}
	dir := t.TempDir()
	res, err := demo.Run(context.Background(), demo.Options{Dir: dir, Jobs: 4, Capabilities: []string{"design-spec", "security-review"},
		Run: run.Options{Now: fixedClock(), Getenv: func(string) string { return "" }}})
	if err != nil {
		t.Fatalf("demo run: %v", err)
	}
	if res.State.Status != loop.StatusDone || strings.Join(res.State.Settings.Capabilities, ",") != "design-spec,security-review" {
		t.Fatalf("status %s (%s), capabilities %v", res.State.Status, res.State.Reason, res.State.Settings.Capabilities)
	}
	for _, v := range []string{"1", "2"} {
		spec, err := os.ReadFile(res.RunDir + "/artifacts/design-spec-v" + v + ".md")
		if err != nil || !strings.Contains(string(spec), "Report(\"the cat THE hat\")") {
			t.Fatalf("design spec of plan version %s: %v\n%s", v, err, spec)
		}
	}
	transcripts, _ := os.ReadDir(res.RunDir + "/transcripts")
	reviews := 0
	for _, e := range transcripts {
		data, _ := os.ReadFile(res.RunDir + "/transcripts/" + e.Name())
		checklist := strings.Contains(string(data), "Security checklist")
		attest := strings.Contains(string(data), "Blocking attested gate no-open-security-findings")
		switch {
		case strings.HasSuffix(e.Name(), "_review.jsonl"):
			reviews++
			if !checklist {
				t.Errorf("%s: the code reviewer did not get the security checklist", e.Name())
			}
		case strings.HasSuffix(e.Name(), "_verify.jsonl"):
			if !attest {
				t.Errorf("%s: the verifier was not asked to attest the security gate", e.Name())
			}
		default:
			if checklist || attest {
				t.Errorf("%s: security-review reached a role it does not contribute into", e.Name())
			}
		}
	}
	if reviews != 4 {
		t.Fatalf("%d code reviews, want one per task", reviews)
	}
}

// TestDisabledOrIncompatibleCapabilityChangesNothing: a run with a disabled
// capability and one whose runtimeCompat excludes the backend ends in the
// same tree and state, with byte-identical delegations, prompts and
// transcripts, as a run without them.
func TestDisabledOrIncompatibleCapabilityChangesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole demo twice; skipped with -short")
	}
	runIn := func(dir string, extra func()) *demo.Result {
		t.Helper()
		extra()
		res, err := demo.Run(context.Background(), demo.Options{Dir: dir, Jobs: 4, Run: run.Options{Now: fixedClock(), Getenv: func(string) string { return "" }}})
		if err != nil || res.State.Status != loop.StatusDone {
			t.Fatalf("demo in %s: %v", dir, err)
		}
		return res
	}
	plainDir, withDir := t.TempDir(), t.TempDir()
	plain := runIn(plainDir, func() {})
	with := runIn(withDir, func() {
		// The demo writes the sample into an empty directory; a project
		// capability that only runs under codex sits beside it, enabled, and
		// security-review stays off.
		capDir := withDir + "/.sluice/capabilities/cli-only"
		if err := os.MkdirAll(capDir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(capDir+"/capability.json", []byte(`{"id": "cli-only", "version": "1.0.0", "title": "CLI only", "description": "Only for codex.",
  "tier": "standard", "default": "on", "runtimeCompat": ["codex"],
  "contributions": [{"point": "execute:pre", "into": "executor", "fragment": {"inline": "Use the codex sandbox."}}]}`), 0o644)
	})
	if len(with.State.Settings.Capabilities) != 0 {
		t.Fatalf("the incompatible capability was activated: %v", with.State.Settings.Capabilities)
	}
	// The capability's own file is part of the sample's base commit, so the
	// runs are compared by what they changed.
	if a, b := gitOut(t, plainDir, "diff", "main", plain.Branch), gitOut(t, withDir, "diff", "main", with.Branch); a != b {
		t.Fatalf("the runs changed different things:\n%s\n---\n%s", a, b)
	}
	for _, sub := range []string{"artifacts", "transcripts"} {
		entries, err := os.ReadDir(plain.RunDir + "/" + sub)
		if err != nil || len(entries) == 0 {
			t.Fatalf("%s: %v", sub, err)
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), "gates.json") || e.Name() == "baseline.json" {
				continue // raw process results, with timings and timestamps
			}
			a, _ := os.ReadFile(plain.RunDir + "/" + sub + "/" + e.Name())
			b, err := os.ReadFile(with.RunDir + "/" + sub + "/" + e.Name())
			if err != nil {
				t.Fatalf("%s/%s missing from the run with the capability", sub, e.Name())
			}
			if normalize(string(a), plainDir) != normalize(string(b), withDir) {
				t.Fatalf("%s/%s differs between the runs", sub, e.Name())
			}
		}
	}
	sa, _ := json.Marshal(plain.State)
	sb, _ := json.Marshal(with.State)
	if a, b := normalize(string(sa), plainDir), normalize(string(sb), withDir); a != b {
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		t.Fatalf("end states differ at byte %d: %.120q vs %.120q", i, a[i:], b[i:])
	}
}

// timing matches what differs between two runs that do the same thing: how
// long a gate or a test took, whether its result came from the cache, and
// commit ids (the runs start from different base commits).
var timing = regexp.MustCompile(`"(duration|cached)": [^,\n]*,?|[0-9]+\.[0-9]+s|\(cached\)|[0-9a-f]{40}`)

func normalize(s, dir string) string {
	return timing.ReplaceAllString(strings.ReplaceAll(s, dir, "DIR"), "")
}
