package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMain lets the test binary stand in for the sluice binary: run as
// "<test> __sandbox-exec ...", it is the sandbox helper.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Subcommand {
		err := Main(os.Args[2:], os.Environ())
		fmt.Fprintln(os.Stderr, err)
		os.Exit(127)
	}
	os.Exit(m.Run())
}

func requireLandlock(t *testing.T) {
	t.Helper()
	if _, err := ABI(); err != nil {
		t.Skipf("skipped: this kernel lacks Landlock, so writes cannot be confined here (%v)", err)
	}
}

func sandboxed(t *testing.T, rw []string, script string) (string, error) {
	t.Helper()
	args := Args(os.Args[0], rw, "sh", "-c", script)
	cmd := exec.Command(args[0], args[1:]...)
	if len(rw) > 0 {
		cmd.Dir = rw[0]
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestRestrictConfinesWrites(t *testing.T) {
	requireLandlock(t)
	work, outside := t.TempDir(), t.TempDir()
	sub := filepath.Join(work, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "readable"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}

	out, err := sandboxed(t, []string{work}, `
		echo in > a/b/inside && mv a/b/inside a/moved && cat `+outside+`/readable &&
		echo quiet > /dev/null && echo ok`)
	if err != nil || !strings.Contains(out, "hello") || !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("allowed work failed: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(work, "a", "moved")); err != nil {
		t.Errorf("rename across directories inside the writable dir: %v", err)
	}

	out, err = sandboxed(t, []string{work}, `echo x > `+outside+`/escaped`)
	if err == nil {
		t.Fatalf("write outside the writable dirs succeeded:\n%s", out)
	}
	if !strings.Contains(out, "Permission denied") {
		t.Errorf("want a permission error, got:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); !os.IsNotExist(err) {
		t.Errorf("file outside was created (stat err %v)", err)
	}
	out, err = sandboxed(t, []string{work}, `rm `+outside+`/readable`)
	if err == nil {
		t.Errorf("delete outside the writable dirs succeeded:\n%s", out)
	}
}

func TestRestrictNoWritableDirs(t *testing.T) {
	requireLandlock(t)
	dir := t.TempDir()
	out, err := sandboxed(t, nil, `cd `+dir+` && echo x > f`)
	if err == nil {
		t.Fatalf("write with no writable dirs succeeded:\n%s", out)
	}
}

func TestRestrictRejectsBadDirs(t *testing.T) {
	if err := Restrict([]string{"relative/dir"}); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
		t.Errorf("relative dir: err = %v", err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	if err := Restrict([]string{missing}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing dir: err = %v", err)
	}
}

func TestArgsRoundTrip(t *testing.T) {
	args := Args("/bin/sluice", []string{"/w", "/tmp/t"}, "sh", "-c", "echo --rw -- hi")
	if args[0] != "/bin/sluice" || args[1] != Subcommand {
		t.Fatalf("Args = %q", args)
	}
	rw, argv, err := ParseArgs(args[2:])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rw, []string{"/w", "/tmp/t"}) || !slices.Equal(argv, []string{"sh", "-c", "echo --rw -- hi"}) {
		t.Errorf("ParseArgs = %q, %q", rw, argv)
	}
	if rw, _, err := ParseArgs([]string{"--rw=/x", "--", "true"}); err != nil || !slices.Equal(rw, []string{"/x"}) {
		t.Errorf("--rw=/x: %q, %v", rw, err)
	}
}

func TestParseArgsErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--rw"},
		{"--rw", "/x"},
		{"--rw", "/x", "--"},
		{"sh", "-c", "true"},
	} {
		if _, _, err := ParseArgs(args); err == nil {
			t.Errorf("ParseArgs(%q) succeeded", args)
		}
	}
}
