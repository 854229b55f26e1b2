/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldops/fieldops/internal/localcp"
)

// TestSmoke runs the whole benchmark with N=5: both binaries build, both
// sides converge on the same control plane, the table prints. Timings are
// printed, never asserted. Skipped unless FIELDOPS_BENCHSCALE_SMOKE is set
// (it builds two binaries and starts a control plane).
func TestSmoke(t *testing.T) {
	dir, managerBin, fluxBin := smokeBinaries(t, "set FIELDOPS_BENCHSCALE_SMOKE=1 to run (or: make bench-scale N=50)")
	const n = 5
	r, err := run(options{n: n, concurrency: 2, managerBin: managerBin,
		fluxBin: fluxBin, logDir: dir, timeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	r.print(&out)
	t.Log(out.String())
	if r.flux.applied != n || r.fieldops.applied != n {
		t.Errorf("applied: Flux %d, fieldops %d; want %d each", r.flux.applied, r.fieldops.applied, n)
	}
	if r.flux.requests.total() == 0 || r.fieldops.requests.total() == 0 || r.handBack.requests.total() == 0 {
		t.Errorf("no requests counted: Flux %v, fieldops %v, hand-back %v", r.flux.requests, r.fieldops.requests, r.handBack.requests)
	}
}

// smokeBinaries skips a smoke test unless FIELDOPS_BENCHSCALE_SMOKE is set
// (hint says how else to run it); else it builds the manager and the Flux
// peer into a temporary directory, and returns it with their paths.
func smokeBinaries(t *testing.T, hint string) (dir, manager, flux string) {
	t.Helper()
	if os.Getenv("FIELDOPS_BENCHSCALE_SMOKE") == "" {
		t.Skip(hint)
	}
	root, err := localcp.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	build := func(pkgDir, out string) string {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, out), ".")
		cmd.Dir = filepath.Join(root, pkgDir)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkgDir, err, b)
		}
		return filepath.Join(dir, out)
	}
	return dir, build("cmd/manager", "manager"), build("test/benchscale/flux", "flux")
}

func TestCapacity(t *testing.T) {
	for _, c := range []struct {
		before, peak rssSample
		n            int
		want         string
	}{
		// 40 MiB before, 10 MiB more at the peak for 1000 objects:
		// (409.6 - 40) MiB at 10.24 KiB each.
		{rssSample{anon: 40 * 1024}, rssSample{maxAnon: 50 * 1024}, 1000, "36960 (10.2 KiB each to the peak)"},
		{rssSample{anon: 40 * 1024}, rssSample{maxAnon: 40 * 1024}, 1000, "–"},
		// The binary's 44 MiB of file-backed pages count too.
		{rssSample{anon: 20 * 1024}, rssSample{maxAnon: 235 * 1024, file: 44 * 1024}, 10000, "16074 (22.0 KiB each to the peak)"},
		{rssSample{anon: 500 * 1024}, rssSample{maxAnon: 510 * 1024}, 10, "–"},
	} {
		if got := capacity(c.before, c.peak, c.n); got != c.want {
			t.Errorf("capacity(%v, %v, %d) = %q, want %q", c.before, c.peak, c.n, got, c.want)
		}
	}
}
