package slash

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func write(t *testing.T, root, rel, body string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFixIssue(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".claude/commands/fix-issue.md", "---\ndescription: Fix a GitHub issue\nargument-hint: ISSUE [PRIORITY]\nallowed-tools: Bash(git:*)\n---\nFix issue #$1 (priority: $2).\nFull request: $ARGUMENTS\n")
	cmds, errs := Load(root)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	c := cmds["fix-issue"]
	if c.Description != "Fix a GitHub issue" || c.ArgumentHint != "ISSUE [PRIORITY]" {
		t.Errorf("front matter: %+v", c)
	}
	got, used, err := Expand("/fix-issue 42", cmds)
	if err != nil || !used {
		t.Fatalf("used %v err %v", used, err)
	}
	if want := "Fix issue #42 (priority: ).\nFull request: 42"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	got, _, err = Expand(`  /fix-issue 42 "very high"  `, cmds)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Fix issue #42 (priority: very high).\nFull request: 42 \"very high\""; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestUnknownCommandListsKnown(t *testing.T) {
	cmds := map[string]Command{"fix-issue": {Body: "x"}, "review": {Body: "y"}}
	_, used, err := Expand("/deploy prod", cmds)
	if !used || !errors.Is(err, ErrUnknown) {
		t.Fatalf("used %v err %v", used, err)
	}
	if !strings.Contains(err.Error(), "/deploy: known: /fix-issue, /review") {
		t.Errorf("err = %v", err)
	}
	_, _, err = Expand("/deploy", nil)
	if err == nil || !strings.Contains(err.Error(), "none are defined; add Markdown files to .claude/commands/") {
		t.Errorf("err = %v", err)
	}
}

func TestNotACommand(t *testing.T) {
	for _, g := range []string{"Add a search endpoint", "/usr/bin/env is missing from the image", "fix /fix-issue"} {
		got, used, err := Expand(g, map[string]Command{"fix-issue": {Body: "x"}})
		if used || err != nil || got != g {
			t.Errorf("%q: got %q used %v err %v", g, got, used, err)
		}
	}
}

func TestNoPlaceholderAppendsArguments(t *testing.T) {
	cmds := map[string]Command{"review": {Body: "Review the code."}}
	if got, _, _ := Expand("/review internal/x", cmds); got != "Review the code.\n\nArguments: internal/x" {
		t.Errorf("got %q", got)
	}
	if got, _, _ := Expand("/review", cmds); got != "Review the code." {
		t.Errorf("got %q", got)
	}
}

func TestLoadPrecedenceNamespacesAndErrors(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".claude/commands/review.md", "Claude's review.\n")
	write(t, root, ".sluice/commands/review.md", "Sluice's review.\n")
	write(t, root, ".claude/commands/frontend/lint.md", "Lint $1.\n")
	write(t, root, ".claude/commands/empty.md", "---\ndescription: nothing\n---\n")
	write(t, root, ".claude/commands/open.md", "---\ndescription: never closed\n")
	write(t, root, ".claude/commands/bad name.md", "x\n")
	cmds, errs := Load(root)
	if cmds["review"].Body != "Sluice's review." {
		t.Errorf("review = %+v", cmds["review"])
	}
	if got, _, err := Expand("/frontend:lint web", cmds); err != nil || got != "Lint web." {
		t.Errorf("namespaced: %q %v", got, err)
	}
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	joined := strings.Join(msgs, "\n")
	for _, w := range []string{"empty.md: the command has no text", "open.md: front matter is not closed", `"bad name" is not a usable command name`} {
		if !strings.Contains(joined, w) {
			t.Errorf("missing %q in:\n%s", w, joined)
		}
	}
	if len(errs) != 3 || len(cmds) != 2 {
		t.Errorf("%d errors, %d commands", len(errs), len(cmds))
	}
}

func TestSplit(t *testing.T) {
	tests := map[string][]string{
		``:                        nil,
		`42`:                      {"42"},
		`a  b	c`:                  {"a", "b", "c"},
		`"two words" 'single $x'`: {"two words", "single $x"},
		`it\'s "say \"hi\"" a\ b`: {"it's", `say "hi"`, "a b"},
		`x"y"'z'`:                 {"xyz"},
		`""`:                      {""},
	}
	for in, want := range tests {
		got, err := Split(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Split(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{`"open`, `'open`} {
		if _, err := Split(in); err == nil {
			t.Errorf("Split(%q) accepted an unterminated quote", in)
		}
	}
	if _, _, err := Expand(`/x "open`, map[string]Command{"x": {Body: "$1"}}); err == nil || !strings.Contains(err.Error(), "/x: arguments: unterminated double quote") {
		t.Errorf("Expand err = %v", err)
	}
}

func TestExpandArgs(t *testing.T) {
	cmds := map[string]Command{"fix-issue": {Body: "Fix #$1 at $2 priority. ($ARGUMENTS)"}}
	got, used, err := ExpandArgs([]string{"/fix-issue", "42", "very high"}, cmds)
	if err != nil || !used || got != "Fix #42 at very high priority. (42 very high)" {
		t.Errorf("got %q used %v err %v", got, used, err)
	}
	got, used, err = ExpandArgs([]string{"Add", "search"}, cmds)
	if err != nil || used || got != "Add search" {
		t.Errorf("plain goal: %q %v %v", got, used, err)
	}
	if _, _, err := ExpandArgs([]string{"/nope", "1"}, cmds); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "known: /fix-issue") {
		t.Errorf("unknown: %v", err)
	}
	// A goal whose first word only starts like a command is not one.
	if got, used, _ := ExpandArgs([]string{"/usr/bin/env", "missing"}, cmds); used || got != "/usr/bin/env missing" {
		t.Errorf("path goal: %q %v", got, used)
	}
}
