/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// procStat returns the command name, parent pid and user+system CPU seconds
// of pid from /proc/<pid>/stat (proc(5)).
func procStat(pid int) (comm string, ppid int, cpu float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, 0, err
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	comm = s[open+1 : end]
	// Fields after the command: state(3) ppid(4) … utime(14) stime(15).
	f := strings.Fields(s[end+1:])
	if len(f) < 13 {
		return "", 0, 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	if ppid, err = strconv.Atoi(f[1]); err != nil {
		return "", 0, 0, err
	}
	utime, err := strconv.ParseFloat(f[11], 64)
	if err != nil {
		return "", 0, 0, err
	}
	stime, err := strconv.ParseFloat(f[12], 64)
	if err != nil {
		return "", 0, 0, err
	}
	return comm, ppid, (utime + stime) / clockTicks, nil
}

// cpuSeconds is the user+system CPU time of pid so far, in seconds.
func cpuSeconds(pid int) (float64, error) {
	_, _, cpu, err := procStat(pid)
	return cpu, err
}

// rssSplitKiB is RssAnon and RssFile of pid (its resident anonymous memory
// and resident pages of mapped files, mostly its own binary) in KiB, from
// /proc/<pid>/status.
func rssSplitKiB(pid int) (anon, file int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "RssAnon" && k != "RssFile") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status: %s: %w", pid, k, err)
		}
		if k == "RssAnon" {
			anon = n
		} else {
			file = n
		}
	}
	return anon, file, nil
}

// peakRSSKiB is VmHWM of pid (its peak resident set size) in KiB, from
// /proc/<pid>/status.
func peakRSSKiB(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmHWM", pid)
}

// childPIDs finds the children of this process by command name (envtest
// starts kube-apiserver and etcd as direct children).
func childPIDs(names ...string) (map[string]int, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	found := map[string]int{}
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		comm, ppid, _, err := procStat(pid)
		if err != nil || ppid != os.Getpid() || !want[comm] {
			continue
		}
		found[comm] = pid
	}
	for _, n := range names {
		if _, ok := found[n]; !ok {
			return nil, fmt.Errorf("no child process %q", n)
		}
	}
	return found, nil
}

// cpuOf sums the CPU seconds of pids.
func cpuOf(pids ...int) (float64, error) {
	var sum float64
	for _, p := range pids {
		c, err := cpuSeconds(p)
		if err != nil {
			return 0, err
		}
		sum += c
	}
	return sum, nil
}

// rssSample is one reading of a process's resident memory, in KiB: its
// anonymous pages (RssAnon: heap, stacks, the Go runtime's own) and its
// pages of mapped files (RssFile: mostly its own binary), from
// /proc/<pid>/status.
// rssSample is a process's resident memory in KiB: anonymous (RssAnon:
// heap, stacks) and file-backed (RssFile: the binary's pages), and
// maxAnon, the largest RssAnon of every sample a sampling saw (its
// anon for a single reading): memory goals are about anonymous memory.
type rssSample struct{ anon, file, maxAnon int64 }

func (s rssSample) total() int64 { return s.anon + s.file }

func readRSS(pid int) (rssSample, error) {
	anon, file, err := rssSplitKiB(pid)
	return rssSample{anon: anon, file: file, maxAnon: anon}, err
}

// rssPeak samples a process's resident memory every interval until stop
// is called, and keeps the sample with the largest total: VmHWM gives the
// peak's size but not how much of it is file-backed.
type rssPeak struct {
	pid  int
	done chan struct{}
	out  chan rssSample
}

// watchRSS starts sampling pid every interval.
func watchRSS(pid int, interval time.Duration) *rssPeak {
	p := &rssPeak{pid: pid, done: make(chan struct{}), out: make(chan rssSample, 1)}
	go func() {
		var peak rssSample
		var maxAnon int64
		sample := func() {
			s, err := readRSS(pid)
			if err != nil {
				return
			}
			maxAnon = max(maxAnon, s.anon)
			if s.total() > peak.total() {
				peak = s
			}
		}
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			sample()
			select {
			case <-p.done:
				sample()
				peak.maxAnon = maxAnon
				p.out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// stop ends the sampling (after one last sample) and returns the peak.
func (p *rssPeak) stop() rssSample {
	close(p.done)
	return <-p.out
}
