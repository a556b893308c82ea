package sandboxexec

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-run/sluice/internal/cmdutil"
	"github.com/sluice-run/sluice/internal/sandbox"
	"github.com/sluice-run/sluice/internal/ui"
)

// helperEnv makes the test binary run the command under test instead of the
// tests, because the command replaces its process and so cannot run in the
// test process itself.
const helperEnv = "SLUICE_SANDBOXEXEC_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		io := &ui.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
		cmd := NewCmd(&cmdutil.Factory{IO: io})
		cmd.SetArgs(os.Args[1:])
		cmd.SilenceUsage = true
		if err := cmd.Execute(); err != nil {
			os.Exit(127)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func run(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func TestCommandConfinesWrites(t *testing.T) {
	if _, err := sandbox.ABI(); err != nil {
		t.Skipf("skipped: this kernel lacks Landlock, so writes cannot be confined here (%v)", err)
	}
	work, outside := t.TempDir(), t.TempDir()
	out, err := run(t, work, "--rw", work, "--", "sh", "-c", "echo -n in > inside && echo done")
	if err != nil || out != "done\n" {
		t.Fatalf("write inside: %v\n%s", err, out)
	}
	out, err = run(t, work, "--rw", work, "--", "sh", "-c", "echo x > "+filepath.Join(outside, "f"))
	if err == nil || !strings.Contains(out, "Permission denied") {
		t.Fatalf("write outside was not refused: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); !os.IsNotExist(err) {
		t.Errorf("file outside exists (stat err %v)", err)
	}
}

func TestCommandUsageError(t *testing.T) {
	out, err := run(t, t.TempDir(), "sh", "-c", "true")
	if err == nil || !strings.Contains(out, "missing --") && !strings.Contains(out, "unexpected argument") {
		t.Errorf("bad usage: err=%v\n%s", err, out)
	}
}
