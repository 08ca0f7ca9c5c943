//go:build unix

package s3_test

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in a process group of its own, so that killServer
// reaches anything it spawns.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killServer kills the process group led by cmd's process.
func killServer(cmd *exec.Cmd) error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
