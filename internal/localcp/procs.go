/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package localcp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process hygiene. Every process the control plane starts dies with it:
//
//   - Stop (and so SIGINT or SIGTERM in cmd/fieldops-local) stops each one
//     and waits for it.
//   - If this process dies without Stop (SIGKILL, a panic, a test binary's
//     timeout), the kernel kills each one: they are started with the Linux
//     parent-death signal (Pdeathsig). That signal fires when the *thread*
//     that started the child exits, not the process, so every child is
//     started from one goroutine locked to its OS thread (launcher), which
//     ends only after Stop. etcd and kube-apiserver are started by envtest,
//     which sets no Pdeathsig: it starts them through a symbolic link to
//     this executable (the shim), which sets Pdeathsig on itself and execs
//     the real binary; the signal survives the exec.
//   - The files of the control plane (etcd's data, certificates, the
//     webhook serving certificates) live under one temporary directory. A
//     guard process, this executable again, waits for this process to end
//     (EOF on a pipe only this process holds) and then kills any recorded
//     child still alive and removes that directory. After Stop, it finds
//     nothing to do.
//
// The shim and the guard run from this package's init, before the host
// program's main or TestMain: every binary that imports localcp (the
// suites, cmd/fieldops-local, the demo) is its own shim and guard.

const (
	guardEnv   = "FIELDOPS_LOCALCP_GUARD"
	shimDir    = "fieldops-localcp-shim"
	procsFile  = "procs"   // "<pid> <start time>" of each child, one a line
	dirsFile   = "dirs"    // more directories to remove, one a line
	parentFile = "parent"  // the pid of the process that owns the control plane
	targetExt  = ".target" // next to a shim link: the real binary's path
	stopGrace  = 15 * time.Second
	pollPeriod = 20 * time.Millisecond
)

func init() {
	if root, ok := os.LookupEnv(guardEnv); ok {
		os.Exit(guardMain(root))
	}
	if dir := filepath.Dir(os.Args[0]); filepath.Base(dir) == shimDir {
		if target, err := os.ReadFile(os.Args[0] + targetExt); err == nil {
			os.Exit(shimMain(filepath.Dir(dir), string(target)))
		}
	}
}

// shimMain becomes target with Pdeathsig set, after recording itself.
func shimMain(root, target string) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "localcp shim %s: %v\n", filepath.Base(target), err)
		return 1
	}
	if err := setParentDeathSignal(); err != nil {
		return fail(err)
	}
	b, err := os.ReadFile(filepath.Join(root, parentFile))
	if err != nil {
		return fail(err)
	}
	if strconv.Itoa(os.Getppid()) != strings.TrimSpace(string(b)) {
		return fail(errors.New("the control plane's process is gone"))
	}
	if err := record(root, os.Getpid()); err != nil {
		return fail(err)
	}
	return fail(syscall.Exec(target, append([]string{target}, os.Args[1:]...), os.Environ()))
}

// guardMain waits for EOF on stdin, then kills what is left and removes root.
func guardMain(root string) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM)
	_, _ = io.Copy(io.Discard, os.Stdin)
	killRecorded(root)
	if b, err := os.ReadFile(filepath.Join(root, dirsFile)); err == nil {
		for _, d := range strings.Fields(string(b)) {
			_ = os.RemoveAll(d)
		}
	}
	_ = os.RemoveAll(root)
	return 0
}

// record appends pid and its start time to root's procs file.
func record(root string, pid int) error {
	start, err := startTime(pid)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(root, procsFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "%d %s\n", pid, start); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// killRecorded kills every recorded process that is still the one
// recorded (same start time: never a reused pid) and waits until each is
// gone, for at most stopGrace.
func killRecorded(root string) {
	f, err := os.Open(filepath.Join(root, procsFile))
	if err != nil {
		return
	}
	defer f.Close()
	type proc struct {
		pid   int
		start string
	}
	var alive []proc
	s := bufio.NewScanner(f)
	for s.Scan() {
		var p proc
		if _, err := fmt.Sscanf(s.Text(), "%d %s", &p.pid, &p.start); err != nil {
			continue
		}
		if running(p.pid, p.start) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
			alive = append(alive, p)
		}
	}
	deadline := time.Now().Add(stopGrace)
	for _, p := range alive {
		for running(p.pid, p.start) && time.Now().Before(deadline) {
			time.Sleep(pollPeriod)
		}
	}
}

// running reports whether pid is alive (not a zombie) and started at start.
func running(pid int, start string) bool {
	st, err := startTime(pid)
	if err != nil || st != start {
		return false
	}
	state, _ := procStat(pid, 2)
	return state != "Z" && state != "X"
}

func startTime(pid int) (string, error) { return procStat(pid, 21) }

// procStat returns field i (0-based, from proc(5)) of /proc/<pid>/stat.
func procStat(pid, i int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// Field 1, the command, is in parentheses and may hold spaces.
	s := string(b)
	end := strings.LastIndexByte(s, ')')
	if end < 0 || i < 2 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected %q", pid, s)
	}
	fields := strings.Fields(s[end+1:])
	if i-2 >= len(fields) {
		return "", fmt.Errorf("/proc/%d/stat: no field %d", pid, i)
	}
	return fields[i-2], nil
}

// launcher runs functions on one goroutine locked to its OS thread, the
// parent thread of every child (see Pdeathsig above). The thread ends
// when the launcher is closed, after every child has stopped.
type launcher struct{ fns chan func() }

func newLauncher() *launcher {
	l := &launcher{fns: make(chan func())}
	go func() {
		// Never unlocked: the thread exits with this goroutine.
		runtime.LockOSThread()
		for fn := range l.fns {
			fn()
		}
	}()
	return l
}

// do runs fn on the launcher's thread and waits for it.
func (l *launcher) do(fn func() error) error {
	errc := make(chan error, 1)
	l.fns <- func() { errc <- fn() }
	return <-errc
}

func (l *launcher) close() { close(l.fns) }

// guard is the guard process's end of the pipe; closing it lets the guard go.
type guard struct {
	w   *os.File
	cmd *exec.Cmd
}

func startGuard(root string) (*guard, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), guardEnv+"="+root)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, nil, os.Stderr
	// Its own process group: a Ctrl-C in the terminal does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("start the control plane's guard: %w", err)
	}
	return &guard{w: w, cmd: cmd}, nil
}

// release lets the guard finish (its directory is gone by then) and waits.
func (g *guard) release() error {
	_ = g.w.Close()
	return g.cmd.Wait()
}

// makeShim links dir/<name> to this executable, which execs target.
func makeShim(root, name, target string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, shimDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	link := filepath.Join(dir, name)
	if err := os.WriteFile(link+targetExt, []byte(target), 0o600); err != nil {
		return "", err
	}
	return link, os.Symlink(exe, link)
}

// child is a process the control plane starts itself.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	log  string // its output, if in a file
}

// startChild starts cmd (on the launcher's thread) with Pdeathsig, in its
// own process group, and records it for the guard.
func startChild(root, name string, cmd *exec.Cmd) (*child, error) {
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { c.err = cmd.Wait(); close(c.done) }()
	if err := record(root, cmd.Process.Pid); err != nil {
		_ = c.stop()
		return nil, err
	}
	return c, nil
}

// exited reports whether the child has exited.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits stopGrace, then SIGKILL, and waits.
func (c *child) stop() error {
	if c.exited() {
		return nil
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return nil
	case <-time.After(stopGrace):
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("%s did not stop within %s of SIGTERM; killed", c.name, stopGrace)
	}
}
