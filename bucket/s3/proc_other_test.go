//go:build !unix

package s3_test

import "os/exec"

func ownGroup(*exec.Cmd) {}

func killServer(cmd *exec.Cmd) error { return cmd.Process.Kill() }
