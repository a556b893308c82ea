// Package sandbox confines the commands agents run with Landlock: they may
// read and execute anything, but write only inside the directories they are
// given (the task's worktree and its temp dir).
//
// Landlock binds the thread that asks for it and everything it starts, and
// cannot be lifted, so sluice never restricts itself. Instead the agent's
// shell is started through a re-exec of the sluice binary, `sluice
// __sandbox-exec --rw DIR ... -- COMMAND ARG...`, which restricts its own
// process and then execs COMMAND in its place.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Subcommand is the hidden sluice subcommand that runs a command sandboxed.
const Subcommand = "__sandbox-exec"

// ErrUnavailable is returned by ABI when the kernel has no Landlock support.
var ErrUnavailable = errors.New("landlock is not available on this kernel")

// ABI returns the Landlock ABI version the running kernel supports. It
// returns ErrUnavailable (wrapped) when the kernel lacks Landlock or it was
// not enabled at boot.
func ABI() (int, error) {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if v < 1 {
		return 0, ErrUnavailable
	}
	return v, nil
}

// devices are character devices that ordinary commands write to; they are
// not in any writable directory, so they get their own rule.
func devices() []string {
	return []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom"}
}

// Restrict applies the ruleset to the calling process and everything it
// starts from now on: read and execute everywhere, full access beneath each
// directory in rw, and writes to the common character devices. Every rw
// directory must exist. It uses Landlock ABI V5 rights, downgraded to what
// the kernel offers; on a kernel without Landlock it does nothing, so callers
// check ABI first.
func Restrict(rw []string) error {
	for _, d := range rw {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("sandbox: writable directory %q is not an absolute path", d)
		}
		info, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("sandbox: writable directory: %w", err)
		}
		if !info.IsDir() {
			return fmt.Errorf("sandbox: writable path %s is not a directory", d)
		}
	}
	writable := landlock.RWDirs(rw...)
	// Moving a file between two directories of the worktree needs the
	// "refer" right. Landlock V1 cannot grant it, and asking for it there
	// would make go-landlock's best-effort mode drop the whole ruleset, so
	// V1 kernels get the ruleset without cross-directory renames.
	if abi, err := ABI(); err == nil && abi >= 2 {
		writable = writable.WithRefer()
	}
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		writable,
		landlock.RWFiles(devices()...).IgnoreIfMissing(),
	}
	if err := landlock.V5.BestEffort().RestrictPaths(rules...); err != nil {
		return fmt.Errorf("sandbox: applying the landlock ruleset: %w", err)
	}
	return nil
}

// Args returns the argument vector that runs argv sandboxed through exe, the
// sluice binary: exe __sandbox-exec --rw DIR ... -- argv...
func Args(exe string, rw []string, argv ...string) []string {
	args := []string{exe, Subcommand}
	for _, d := range rw {
		args = append(args, "--rw", d)
	}
	args = append(args, "--")
	return append(args, argv...)
}

// ParseArgs parses the arguments that follow Subcommand: any number of
// "--rw DIR" (or "--rw=DIR"), then "--", then the command and its arguments.
func ParseArgs(args []string) (rw, argv []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			argv = args[i+1:]
			if len(argv) == 0 {
				return nil, nil, errors.New("sandbox: no command after --")
			}
			return rw, argv, nil
		case a == "--rw":
			if i+1 >= len(args) {
				return nil, nil, errors.New("sandbox: --rw needs a directory")
			}
			i++
			rw = append(rw, args[i])
		case len(a) > 5 && a[:5] == "--rw=":
			rw = append(rw, a[5:])
		default:
			return nil, nil, fmt.Errorf("sandbox: unexpected argument %q; usage: %s --rw DIR ... -- COMMAND [ARG...]", a, Subcommand)
		}
	}
	return nil, nil, fmt.Errorf("sandbox: missing -- before the command; usage: %s --rw DIR ... -- COMMAND [ARG...]", Subcommand)
}

// Exec restricts the process to write only beneath rw and replaces it with
// argv, looked up in PATH and run with env. It returns only on failure.
func Exec(rw, argv, env []string) error {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if err := Restrict(rw); err != nil {
		return err
	}
	if err := syscall.Exec(path, argv, env); err != nil {
		return fmt.Errorf("sandbox: exec %s: %w", path, err)
	}
	return nil
}

// Main is the whole of the sandbox helper: it parses args (those after
// Subcommand), restricts the process and execs the command. It returns only
// on failure.
func Main(args, env []string) error {
	rw, argv, err := ParseArgs(args)
	if err != nil {
		return err
	}
	return Exec(rw, argv, env)
}
