//go:build unix

package backend

import (
	"os/exec"
	"syscall"
	"time"
)

// setProcessGroup puts the agent in its own process group and makes
// cancellation kill the whole group: agents start shells, test runners and
// servers that must not outlive them.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 5 * time.Second
}
