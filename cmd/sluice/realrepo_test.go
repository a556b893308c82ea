package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// uuidScript is a scripted model that adds one small, tested helper to
// google/uuid.
const uuidScript = `
defaults: {usage: {input: 2000, output: 200}}
turns:
  - name: research
    repeat: true
    match: {contains: "# Delegation: researcher"}
    response:
      tool_calls:
        - name: submit_result
          input: {context_map: {primary_files: [{path: version.go, role: "Version type and UUID.Version"}]}, findings: {architecture_notes: "one package, UUID is [16]byte, Version() reads byte 6"}, passes_completed: 1, confidence: high}
  - name: plan
    repeat: true
    match: {contains: "# Delegation: planner"}
    response:
      tool_calls:
        - name: submit_result
          input:
            plan:
              tasks:
                - {id: t1, title: IsV4, description: "Add IsV4(u UUID) bool with a test", files_to_modify: [isv4.go, isv4_test.go], acceptance_criteria: ["IsV4 reports whether u is a version 4 UUID"]}
            task_count: 1
            estimated_total_effort: 1 small
            critical_risks: []
  - name: critic
    repeat: true
    match: {contains: "# Delegation: critic"}
    response:
      tool_calls:
        - name: submit_result
          input: {verdict: APPROVE, specification_compliance: {compliant: true, violations: []}, end_game_synthesis: {resilience_verdict: robust, overall_assessment: small}}
  - name: write
    repeat: true
    match: {contains: "# Delegation: executor, task t1", assistant_turns: 0}
    response:
      tool_calls:
        - name: write_file
          input: {path: isv4.go, content: "package uuid\n\n// IsV4 reports whether u is a version 4 (random) UUID.\nfunc IsV4(u UUID) bool { return u.Version() == 4 }\n"}
        - name: write_file
          input: {path: isv4_test.go, content: "package uuid\n\nimport \"testing\"\n\nfunc TestIsV4(t *testing.T) {\n\tif !IsV4(New()) {\n\t\tt.Error(\"New() is not version 4\")\n\t}\n\tif IsV4(Nil) {\n\t\tt.Error(\"Nil is version 4\")\n\t}\n}\n"}
  - name: done
    repeat: true
    match: {contains: "# Delegation: executor, task t1", assistant_turns: 1}
    response:
      tool_calls:
        - name: submit_result
          input: {status: COMPLETE, files_modified: [isv4.go, isv4_test.go], acceptance_criteria_confirmation: [{criterion: "IsV4 reports whether u is a version 4 UUID", met: true, evidence: "isv4.go; TestIsV4"}], summary: added IsV4}
  - name: verify
    repeat: true
    match: {contains: "# Delegation: verifier, task t1"}
    response:
      tool_calls:
        - name: submit_result
          input: {verdict: PASS, criteria: [{criterion: "IsV4 reports whether u is a version 4 UUID", met: true, evidence: "TestIsV4 passes in the test gate"}], failures: [], fix_instructions: ""}
`

// TestRunOnGoogleUUID runs sluice on a real repository that is not spotless
// (newer gofmt flags files nobody touched): the run gets past its gates and
// merges its task. The source comes from the Go module proxy; without it
// the test is skipped.
func TestRunOnGoogleUUID(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads github.com/google/uuid and runs its tests; skipped with -short")
	}
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/google/uuid@v1.6.0").Output()
	if err != nil {
		t.Skipf("github.com/google/uuid is not reachable through the Go module proxy here: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Skipf("go mod download gave no directory: %v", err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(mod.Dir)); err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			mode := os.FileMode(0o644)
			if d.IsDir() {
				mode = 0o755
			}
			os.Chmod(p, mode)
		}
		return nil
	})
	for _, a := range [][]string{{"init", "-q", "-b", "master"}, {"add", "-A"}, {"commit", "-q", "-m", "google/uuid v1.6.0"}} {
		cmd := exec.Command("git", a...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", a, err, b)
		}
	}
	e := newE2E(t, []byte(uuidScript))
	res, err := e.command(dir, "run", "--yes", "--depth", "lightweight", "Add an IsV4 helper").CombinedOutput()
	if err != nil {
		t.Fatalf("sluice run on google/uuid: %v\n%s", err, res)
	}
	for _, want := range []string{"run ", ": done", "t1         merged"} {
		if !strings.Contains(string(res), want) {
			t.Fatalf("output lacks %q:\n%s", want, res)
		}
	}
	t.Logf("%s", res)
	show := exec.Command("git", "show", runBranch(t, dir)+":isv4.go")
	show.Dir = dir
	if b, err := show.Output(); err != nil || !strings.Contains(string(b), "func IsV4") {
		t.Fatalf("the run branch lacks isv4.go: %v", err)
	}
}
