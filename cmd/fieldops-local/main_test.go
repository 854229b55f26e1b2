/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMain runs main instead of the tests when re-executed by
// startLocal: the test binary is then fieldops-local itself (and, through
// internal/localcp's init, its own shim and guard).
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv("FIELDOPS_TEST_LOCAL_ARGS"); ok {
		os.Args = append([]string{"fieldops-local"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// local is a running fieldops-local and the processes it started.
type local struct {
	cmd      *exec.Cmd
	tmp      string         // its TMPDIR
	children map[int]string // pid: /proc start time
	names    []string
	out      []string // its output up to the KUBECONFIG line
	dir      string   // its --local-dir
}

// startLocal starts fieldops-local and returns once it printed the
// KUBECONFIG line (the control plane is up and the manager starting).
func startLocal(t *testing.T) *local {
	t.Helper()
	dir := t.TempDir()
	l := &local{tmp: filepath.Join(dir, "tmp"), dir: filepath.Join(dir, "local"), children: map[int]string{}}
	if err := os.Mkdir(l.tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	l.cmd = exec.Command(os.Args[0], "-test.run=^$")
	l.cmd.Env = append(os.Environ(), "TMPDIR="+l.tmp, "FIELDOPS_TEST_LOCAL_ARGS=--local-dir="+l.dir+" --zap-log-level=error")
	// Its log, shown if the test fails.
	logf, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	l.cmd.Stderr = logf
	t.Cleanup(func() {
		_ = logf.Close()
		if b, _ := os.ReadFile(logf.Name()); t.Failed() {
			t.Logf("fieldops-local's stderr:\n%s", b)
		}
	})
	out, err := l.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	up := make(chan error, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			l.out = append(l.out, s.Text())
			if strings.Contains(s.Text(), "export KUBECONFIG=") {
				up <- nil
				for s.Scan() {
				}
				return
			}
		}
		up <- fmt.Errorf("fieldops-local ended its output before the KUBECONFIG line (%v)", s.Err())
	}()
	select {
	case err := <-up:
		if err != nil {
			_ = l.cmd.Process.Kill()
			_ = l.cmd.Wait()
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		_ = l.cmd.Process.Kill()
		_ = l.cmd.Wait()
		t.Fatal("fieldops-local not up within 2 minutes")
	}
	// Its children, from /proc: the components and the guard.
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _ := stat(pid, 3); ppid == strconv.Itoa(l.cmd.Process.Pid) {
			start, _ := stat(pid, 21)
			name, _ := stat(pid, 1)
			l.children[pid] = start
			l.names = append(l.names, name)
		}
	}
	// (/proc's command names are cut at 15 characters.)
	for _, want := range []string{"(etcd)", "(kube-apiserver)", "(kube-controller)", "(kube-scheduler)", "(kwok)"} {
		if !strings.Contains(strings.Join(l.names, " "), want) {
			t.Errorf("fieldops-local's children are %v: no %s", l.names, want)
		}
	}
	return l
}

// stat returns field i (0-based, proc(5)) of /proc/<pid>/stat.
func stat(pid, i int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if i == 1 {
		return s[open : end+1], nil
	}
	f := strings.Fields(s[end+1:])
	if i-2 >= len(f) {
		return "", fmt.Errorf("no field %d", i)
	}
	return f[i-2], nil
}

// alive lists the children still running (not zombies), reaping the
// zombies that were reparented to this process (a subreaper).
func (l *local) alive() []int {
	var pids []int
	for pid, start := range l.children {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		st, err := stat(pid, 21)
		if err != nil || st != start {
			continue
		}
		if state, _ := stat(pid, 2); state == "Z" || state == "X" {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// checkClean fails unless every child is gone and TMPDIR is empty once
// they are, polling until deadline.
func (l *local) checkClean(t *testing.T, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for len(l.alive()) > 0 {
		select {
		case <-ctx.Done():
			for _, pid := range l.alive() {
				name, _ := stat(pid, 1)
				t.Errorf("child %d %s still running %s after its parent ended", pid, name, within)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		case <-tick.C:
		}
	}
	left, err := os.ReadDir(l.tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left behind in TMPDIR: %s", e.Name())
	}
}

// Process hygiene (issue 12, part 3): whichever way fieldops-local ends,
// no process it started survives it and it leaves no temporary files.
// (SIGINT, Ctrl-C, ends TestLocalMode, with the same checks.)
func TestNoOrphans(t *testing.T) {
	t.Parallel()
	// Orphans are reparented to this process, which reaps them, rather
	// than to a PID 1 that may not.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		signals []syscall.Signal
	}{
		{"SIGTERM", []syscall.Signal{syscall.SIGTERM}},
		{"SIGKILL", []syscall.Signal{syscall.SIGKILL}},
		// Killed while it stops its children.
		{"SIGTERM then SIGKILL", []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Each case is its own fieldops-local (free ports, its own
			// TMPDIR, children found by parent pid): they run at once.
			t.Parallel()
			l := startLocal(t)
			for _, sig := range c.signals {
				if err := l.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
			}
			err := l.cmd.Wait()
			if c.signals[len(c.signals)-1] != syscall.SIGKILL {
				// Stopped in order: everything is gone when it exits.
				if err != nil {
					t.Errorf("fieldops-local after %s: %v", c.name, err)
				}
				l.checkClean(t, 0)
				return
			}
			l.checkClean(t, 30*time.Second)
		})
	}
}
