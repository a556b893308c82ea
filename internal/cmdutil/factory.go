// Package cmdutil holds what every command is built from: injected streams,
// environment and working directory, so commands are testable in-process.
package cmdutil

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sluice-run/sluice/internal/ui"
)

// Factory carries the dependencies a command needs from the outside world.
type Factory struct {
	IO *ui.IOStreams
	// Getenv reads the environment; tests replace it.
	Getenv func(string) string
	// Getwd returns the directory the command was started in.
	Getwd func() (string, error)
	// Executable is the path of the running sluice binary (used to re-exec
	// the sandbox helper and the fake model server).
	Executable func() (string, error)
}

// New returns a Factory wired to the real process.
func New() *Factory {
	return &Factory{
		IO:         ui.System(),
		Getenv:     os.Getenv,
		Getwd:      os.Getwd,
		Executable: executable,
	}
}

// executable is how to start this program again: the name it was started
// by, found the way the shell found it, so a binary reached through a link
// (as test harnesses do) re-executes as itself. os.Executable is the
// fallback.
func executable() (string, error) {
	name := os.Args[0]
	if !strings.ContainsRune(name, filepath.Separator) {
		if p, err := exec.LookPath(name); err == nil {
			return filepath.Abs(p)
		}
		return os.Executable()
	}
	return filepath.Abs(name)
}

// ErrSilent is returned by a command that has already printed its error; the
// caller exits non-zero without printing again.
var ErrSilent = errors.New("silent error")

// ExitError carries a specific exit status out of a command.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return "exit status"
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }
