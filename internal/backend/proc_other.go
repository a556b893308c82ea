//go:build !unix

package backend

import (
	"os/exec"
	"time"
)

// setProcessGroup only bounds the wait where process groups do not exist;
// cancellation kills the agent process itself.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.WaitDelay = 5 * time.Second
}
