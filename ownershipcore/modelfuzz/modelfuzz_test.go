/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package modelfuzz

import (
	"errors"
	"flag"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
)

var (
	seed      = flag.Int64("model-seed", 1, "first sequence's seed; sequence i has seed+i")
	sequences = flag.Int("model-sequences", 10000, "how many sequences")
	steps     = flag.Int("model-steps", 8, "steps of each sequence after the object's creation")
)

// gcPercent and gcMemoryLimit are the garbage collector's target and
// soft memory limit (bytes) while sequences run: each step allocates many
// short-lived values (typed values, field sets, unstructured copies) and
// keeps almost none, so collecting at 1600% instead of the usual 100-400%
// costs about 15% less CPU; the limit keeps the heap that grows in between
// under half a gigabyte.
const (
	gcPercent     = 1600
	gcMemoryLimit = 512 << 20
)

// lessGC raises the GC target to gcPercent, under gcMemoryLimit, unless
// GOGC or GOMEMLIMIT already ask for less collection or less memory; the
// returned function restores both.
func lessGC() (restore func()) {
	percent := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(-1)
	if percent >= 0 && percent < gcPercent {
		debug.SetGCPercent(gcPercent)
		if limit > gcMemoryLimit {
			debug.SetMemoryLimit(gcMemoryLimit)
		}
	} else {
		debug.SetGCPercent(percent)
	}
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}

// TestModelSequences runs -model-sequences random sequences over the model
// and fails with the shortest failing one (shrunk), naming its seed. It
// runs one sequence at a time on each of GOMAXPROCS workers; one
// sequence of 12 steps costs about 4 ms of CPU (BenchmarkModelSequence
// measures one), so 10,000 of 8 steps take about 12 s on 2 idle cores and
// 100,000 of 12 about 3.5 minutes.
func TestModelSequences(t *testing.T) {
	r, err := NewRunner()
	if err != nil {
		t.Fatal(err)
	}
	defer lessGC()()
	type failure struct {
		seed  int64
		steps []Step
		err   error
	}
	var (
		mu       sync.Mutex
		failures []failure
		next     = make(chan int64)
		wg       sync.WaitGroup
	)
	for i := 0; i < runtime.GOMAXPROCS(0); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range next {
				seq := Generate(s, *steps)
				if err := r.Run(seq); err != nil {
					mu.Lock()
					failures = append(failures, failure{seed: s, steps: seq, err: err})
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < *sequences; i++ {
		next <- *seed + int64(i)
	}
	close(next)
	wg.Wait()
	if len(failures) == 0 {
		t.Logf("%d sequences of %d steps from seed %d: no invariant broken", *sequences, *steps, *seed)
		return
	}
	best := failures[0]
	for _, f := range failures {
		if len(f.steps) < len(best.steps) || (len(f.steps) == len(best.steps) && f.seed < best.seed) {
			best = f
		}
	}
	best.steps = r.Shrink(best.steps)
	err = r.Run(best.steps)
	var fail *Failure
	if !errors.As(err, &fail) {
		err = best.err
	}
	t.Fatalf("%d of %d sequences failed; the shortest, from seed %d (-model-seed %d -model-sequences 1 -model-steps %d replays it), shrunk to %d steps:\n%s%v",
		len(failures), *sequences, best.seed, best.seed, *steps, len(best.steps), Format(best.steps), err)
}

// modelRegressions are model sequences that once broke an invariant, by
// seed and steps (Generate), replayed on every run:
//   - 10096, 12 steps: an apply that dropped a map-list item whose granular
//     map held another manager's key pruned the map with that key when
//     only ownership went before the apply (Model.BeforeApply now checks
//     the predicted apply and drops the values first instead).
var modelRegressions = []struct {
	seed  int64
	steps int
}{{10096, 12}}

// TestModelRegressions replays modelRegressions.
func TestModelRegressions(t *testing.T) {
	r, err := NewRunner()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range modelRegressions {
		if err := r.Run(Generate(c.seed, c.steps)); err != nil {
			t.Errorf("seed %d, %d steps: %v", c.seed, c.steps, err)
		}
	}
}

// BenchmarkModelSequence measures one sequence of 12 steps (the object's
// creation, then 12), a different seed each iteration, on one goroutine,
// with the GC target TestModelSequences runs at.
func BenchmarkModelSequence(b *testing.B) {
	r, err := NewRunner()
	if err != nil {
		b.Fatal(err)
	}
	defer lessGC()()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := r.Run(Generate(int64(1+i), 12)); err != nil {
			b.Fatal(err)
		}
	}
}
