/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package invariants

import (
	"context"
	"testing"
)

// corpus is every seed a commit message or the CHANGELOG names as a
// failure found by this test, and the four that were open when the
// ownership core was rebuilt around its model (9501226, 9800320, 9801138,
// 9801144), and those found since at 12 steps (7800039, 7800040, 32001:
// the check of a hand-back looked for the previous owner's Apply entry in
// the version it had when recorded, not in the one it was applied in
// since). The generator has grown since most were found (FieldPatches in
// a second version, ManagedWorkloads, more kinds of steps), so a seed now
// makes another sequence than the one it named; each runs with the most
// steps of the fuzz runs of its time (16 before the runs of seeds from
// 7000000 on, 18 from there, 20 from 9800000), and the fault seeds with
// faults, as they were found.
var corpus = []struct {
	seed   int64
	steps  int
	faults bool
}{
	{40098, 16, false}, {200021, 16, false}, {400141, 16, false}, {700006, 16, false},
	{700073, 16, false}, {700239, 16, false}, {700280, 16, false}, {900076, 16, false},
	{2000201, 16, false}, {3000031, 16, false}, {3000070, 16, false}, {3000197, 16, false},
	{4000177, 16, false}, {4000226, 16, false}, {7200016, 18, false}, {7200668, 18, false},
	{7201807, 18, false}, {7202145, 18, false}, {8100327, 18, false}, {8100545, 18, false},
	{9100650, 18, false}, {9501226, 18, false}, {9800320, 20, false}, {9801138, 20, false},
	{9801144, 20, false},
	{7800039, 12, false}, {7800040, 12, false}, {32001, 12, false},
	{1000008, 16, true}, {1000055, 16, true}, {2000088, 16, true}, {3000127, 16, true},
	{5000069, 16, true}, {6000139, 16, true}, {6100231, 16, true},
}

// TestRegressionCorpus runs the corpus against the local control plane on
// every `make test`; a failure prints the sequence as TestOwnershipInvariants
// does (replay one with `make fuzz SEED=<seed> N=1` and the steps shown).
func TestRegressionCorpus(t *testing.T) {
	e := controlPlane(t)
	seqs := make([]Sequence, len(corpus))
	for i, c := range corpus {
		seqs[i] = Generate(c.seed, c.steps)
		if c.faults {
			seqs[i].Faults = *faultRate
		}
	}
	for i, r := range e.RunAll(context.Background(), seqs, *workers) {
		if r.Failed >= 0 {
			t.Errorf("seed %d (-steps %d, faults %v) broke an invariant:\n%s", corpus[i].seed, corpus[i].steps, corpus[i].faults, r.Report())
		}
	}
}
