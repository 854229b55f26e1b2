/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package invariants

import (
	"context"
	"sync"
)

// Shrink looks for a shorter sequence that still breaks one of the
// invariants res broke: the failing prefix (the steps after the failing
// one never ran), then, round after round, every way of dropping one step
// (and what no longer makes sense without it, see Normalize), run in
// parallel, keeping the shortest that still fails. It stops when no
// single drop fails any more or after budget runs, and returns the
// smallest failing result found (res itself when none).
func (e *Env) Shrink(ctx context.Context, res Result, budget, parallel int) Result {
	if res.Failed < 0 {
		return res
	}
	want := map[int]bool{}
	for _, i := range res.Invariants() {
		want[i] = true
	}
	from := len(res.Seq.Steps)
	best := res
	best.Seq.Steps = best.Seq.Steps[:best.Failed+1]
	for budget > 0 {
		cands := dropOne(best.Seq, budget)
		if len(cands) == 0 {
			break
		}
		budget -= len(cands)
		improved := false
		if best, improved = shortest(best, e.RunAll(ctx, cands, parallel), want); !improved {
			break
		}
	}
	if len(best.Seq.Steps) < from {
		best.From = from
	}
	return best
}

// dropOne is every distinct sequence that is seq without one of its
// steps after the first (Normalized), from the last step on, at most
// budget of them.
func dropOne(seq Sequence, budget int) []Sequence {
	var cands []Sequence
	seen := map[string]bool{}
	for i := len(seq.Steps) - 1; i >= 1 && len(cands) < budget; i-- {
		steps := Normalize(append(append([]Step{}, seq.Steps[:i]...), seq.Steps[i+1:]...))
		c := Sequence{Seed: seq.Seed, Kind: seq.Kind, Steps: steps, Faults: seq.Faults}
		if k := c.String(); !seen[k] {
			seen[k] = true
			cands = append(cands, c)
		}
	}
	return cands
}

// shortest is the result among results that breaks one of the wanted
// invariants at the earliest step, shorter than best, cut after its
// failing step; improved is false (and best returned) when none is.
func shortest(best Result, results []Result, want map[int]bool) (Result, bool) {
	improved := false
	for _, r := range results {
		if r.Failed < 0 || !breaksAny(r, want) || r.Failed+1 >= len(best.Seq.Steps) {
			continue
		}
		if !improved || r.Failed < best.Failed {
			best, improved = r, true
			best.Seq.Steps = best.Seq.Steps[:best.Failed+1]
		}
	}
	return best, improved
}

func breaksAny(r Result, want map[int]bool) bool {
	for _, i := range r.Invariants() {
		if want[i] {
			return true
		}
	}
	return false
}

// RunAll runs seqs, at most parallel at a time, and returns their results
// in order.
func (e *Env) RunAll(ctx context.Context, seqs []Sequence, parallel int) []Result {
	out := make([]Result, len(seqs))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, s := range seqs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = e.Run(ctx, s)
		}()
	}
	wg.Wait()
	return out
}
