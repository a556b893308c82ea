//go:build !unix

package gates

import "os/exec"

// setProcessGroup has no process groups to use here: cancellation kills the
// shell only (exec.CommandContext's default).
func setProcessGroup(cmd *exec.Cmd) {}
