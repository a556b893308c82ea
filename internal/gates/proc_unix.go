//go:build unix

package gates

import (
	"os/exec"
	"syscall"
)

// setProcessGroup runs the command in its own process group and makes
// cancellation kill the whole group, so a gate's children (a test binary, a
// backgrounded server) die with it instead of holding its output open.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
