/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"strings"
	"testing"
	"time"
)

// TestSmokeSelector runs the whole benchmark with N=5 and the selector
// run (a 2 s quiet period): the selector patch converges on all 5
// Deployments, drift on all 5 is repaired (the run waits for it), the
// hand-back leaves none with the env var, the table prints. Timings and
// request counts are printed, never asserted. Skipped unless
// FIELDOPS_BENCHSCALE_SMOKE is set.
func TestSmokeSelector(t *testing.T) {
	dir, managerBin, fluxBin := smokeBinaries(t, "set FIELDOPS_BENCHSCALE_SMOKE=1 to run (or: make bench-scale N=50)")
	const n = 5
	r, err := run(options{n: n, concurrency: 2, managerBin: managerBin,
		fluxBin: fluxBin, logDir: dir, timeout: 5 * time.Minute,
		selector: true, selectorQuiet: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	r.print(&out)
	r.printSelector(&out)
	t.Log(out.String())
	s := r.selector
	if s == nil {
		t.Fatal("no selector result")
	}
	if s.applied != n {
		t.Errorf("selector patch: status.targets.applied %d, want %d", s.applied, n)
	}
	if s.driftN != n {
		t.Errorf("drifted %d targets, want %d", s.driftN, n)
	}
	if s.handBack.left != 0 {
		t.Errorf("after the hand-back %d Deployments keep the env var, want 0", s.handBack.left)
	}
	if s.requests.total() == 0 || s.driftRequests.total() == 0 || s.handBack.requests.total() == 0 {
		t.Errorf("no requests counted: converge %v, drift %v, hand-back %v", s.requests, s.driftRequests, s.handBack.requests)
	}
	if !strings.Contains(out.String(), "one selector patch") {
		t.Errorf("no selector row in the output:\n%s", out.String())
	}
}
