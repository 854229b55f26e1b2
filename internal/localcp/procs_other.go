//go:build !linux

/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package localcp

import "syscall"

// Elsewhere than Linux there is no parent-death signal: the guard alone
// kills what is left.
func setParentDeathSignal() error { return nil }

func childProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
