/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package localcp

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// setParentDeathSignal has the kernel send SIGKILL to this process when
// its parent thread exits; execve keeps it.
func setParentDeathSignal() error {
	return unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
}

// childProcAttr: killed with the parent thread, in its own process group.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
