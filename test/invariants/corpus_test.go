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
// 7000000 on, 18 from there, 20 from 9800000; the four open ones all at
// 20), and the fault seeds with faults, as they were found. The seeds with options were found by
// TestOwnershipInvariants drawing Restore and expiry (GenerateWith):
// 7800120, 32120 and 32173 (a Yield patch on a field deep in a list item
// applied the item's emptied map as null, owned it, released it and
// applied it again, in a loop), 41189 and 8300262 (the checker, not
// fieldops: see "The record follows the apiserver" in doc.go; 43031, with
// selector patches drawn too: a previous owner that wrote the field again
// since keeps it at Restore), and fault
// seed 1200072 (a deletion whose follow-up write failed left the Update
// entry the apiserver records for a field it defaulted again).
var corpus = []struct {
	seed    int64
	steps   int
	faults  bool
	options bool
}{
	{40098, 16, false, false}, {200021, 16, false, false}, {400141, 16, false, false}, {700006, 16, false, false},
	{700073, 16, false, false}, {700239, 16, false, false}, {700280, 16, false, false}, {900076, 16, false, false},
	{2000201, 16, false, false}, {3000031, 16, false, false}, {3000070, 16, false, false}, {3000197, 16, false, false},
	{4000177, 16, false, false}, {4000226, 16, false, false}, {7200016, 18, false, false}, {7200668, 18, false, false},
	{7201807, 18, false, false}, {7202145, 18, false, false}, {8100327, 18, false, false}, {8100545, 18, false, false},
	{9100650, 18, false, false}, {9501226, 20, false, false}, {9800320, 20, false, false}, {9801138, 20, false, false},
	{9801144, 20, false, false},
	{7800039, 12, false, false}, {7800040, 12, false, false}, {32001, 12, false, false},
	{7800120, 12, false, true}, {32120, 12, false, true}, {32173, 12, false, true},
	{41189, 12, false, true}, {8300262, 12, false, true}, {43031, 12, false, true},
	{1000008, 16, true, false}, {1000055, 16, true, false}, {2000088, 16, true, false}, {3000127, 16, true, false},
	{5000069, 16, true, false}, {6000139, 16, true, false}, {6100231, 16, true, false},
	{1200072, 12, true, true},
}

// TestRegressionCorpus runs the corpus against the local control plane on
// every `make test`; a failure prints the sequence as TestOwnershipInvariants
// does (replay one with `make fuzz SEED=<seed> N=1` and the steps shown).
func TestRegressionCorpus(t *testing.T) {
	e := controlPlane(t)
	seqs := make([]Sequence, len(corpus))
	for i, c := range corpus {
		seqs[i] = Generate(c.seed, c.steps)
		if c.options {
			seqs[i] = GenerateWith(c.seed, c.steps, Options{Restore: true, Expire: true, Selector: c.seed == 43031})
		}
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
