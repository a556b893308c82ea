package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sluice-run/sluice/internal/model/fake"
)

// goEnv is the Go toolchain's own cache and module locations, handed to
// scripts (testscript gives them no HOME), so quality gates that run `go`
// share the machine's build cache.
var goEnv = sync.OnceValue(func() map[string]string {
	out := map[string]string{}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		v, err := exec.Command("go", "env", k).Output()
		if err == nil {
			out[k] = strings.TrimSpace(string(v))
		}
	}
	return out
})

func setupEnv(env *testscript.Env) error {
	env.Setenv("GIT_AUTHOR_NAME", "sluice test")
	env.Setenv("GIT_AUTHOR_EMAIL", "test@sluice.invalid")
	env.Setenv("GIT_COMMITTER_NAME", "sluice test")
	env.Setenv("GIT_COMMITTER_EMAIL", "test@sluice.invalid")
	env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	env.Setenv("GOFLAGS", "-buildvcs=false")
	env.Setenv("GOTOOLCHAIN", "local")
	for k, v := range goEnv() {
		env.Setenv(k, v)
	}
	return nil
}

// scriptCmds are the harness commands end-to-end scripts use.
func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		// fakemodel SCRIPT: serve the scripted replay on 127.0.0.1 for the
		// rest of the test and point ANTHROPIC_BASE_URL at it.
		"fakemodel": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 1 {
				ts.Fatalf("usage: fakemodel SCRIPT")
			}
			s, err := fake.LoadScript(ts.MkAbs(args[0]))
			ts.Check(err)
			rec, err := os.Create(ts.MkAbs("fake-requests.jsonl"))
			ts.Check(err)
			srv := fake.NewServer(s, fake.WithRecord(rec))
			url, stop, err := fake.Listen(context.Background(), "127.0.0.1:0", srv)
			ts.Check(err)
			ts.Defer(func() { stop(); rec.Close() })
			ts.Setenv("ANTHROPIC_BASE_URL", url)
			ts.Setenv("ANTHROPIC_API_KEY", "sk-ant-test-key-0000000000")
		},
		// initrepo DIR: git init DIR and commit everything in it.
		"initrepo": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 1 {
				ts.Fatalf("usage: initrepo DIR")
			}
			dir := ts.MkAbs(args[0])
			for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "fixture"}} {
				cmd := exec.Command("git", a...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
				if out, err := cmd.CombinedOutput(); err != nil {
					ts.Fatalf("git %s: %v\n%s", strings.Join(a, " "), err, out)
				}
			}
		},
		// treehash DIR REV FILE: write REV's tree hash in DIR to FILE.
		"treehash": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 3 {
				ts.Fatalf("usage: treehash DIR REV FILE")
			}
			cmd := exec.Command("git", "rev-parse", args[1]+"^{tree}")
			cmd.Dir = ts.MkAbs(args[0])
			out, err := cmd.Output()
			if err != nil {
				ts.Fatalf("tree of %s: %v", args[1], err)
			}
			ts.Check(os.WriteFile(ts.MkAbs(args[2]), out, 0o644))
		},
		// requests MATCH [!]WANT: every request the fake model server
		// recorded whose body contains MATCH also contains WANT (with !:
		// does not), and at least one request contains MATCH.
		"requests": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 2 {
				ts.Fatalf("usage: requests MATCH [!]WANT")
			}
			want, absent := strings.CutPrefix(args[1], "!")
			data, err := os.ReadFile(filepath.Join(ts.Getenv("WORK"), "fake-requests.jsonl"))
			ts.Check(err)
			n := 0
			for _, line := range strings.Split(string(data), "\n") {
				var rec struct {
					Body json.RawMessage `json:"body"`
				}
				if line == "" || json.Unmarshal([]byte(line), &rec) != nil {
					continue
				}
				body := string(rec.Body)
				if !strings.Contains(body, args[0]) {
					continue
				}
				n++
				if strings.Contains(body, want) == absent {
					ts.Fatalf("a request containing %q %s %q", args[0], map[bool]string{true: "contains", false: "lacks"}[absent], want)
				}
			}
			if n == 0 {
				ts.Fatalf("no recorded request contains %q", args[0])
			}
		},
		// runbranch DIR VAR: set VAR to the branch of DIR's newest run.
		"runbranch": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 2 {
				ts.Fatalf("usage: runbranch DIR VAR")
			}
			entries, err := os.ReadDir(filepath.Join(ts.MkAbs(args[0]), ".sluice", "runs"))
			ts.Check(err)
			if len(entries) == 0 {
				ts.Fatalf("no runs")
			}
			ts.Setenv(args[1], "sluice/"+entries[len(entries)-1].Name())
		},
	}
}
