/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package invariants

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/internal/localcp"
)

var (
	seed      = flag.Int64("seed", 1, "seed of the first sequence; sequence i has seed+i")
	sequences = flag.Int("sequences", 200, "how many sequences to run")
	maxSteps  = flag.Int("steps", 7, fmt.Sprintf("most random steps of a sequence (at least %d)", MinSteps))
	workers   = flag.Int("workers", 4, "sequences run at once")
	shrinks   = flag.Int("shrink", 3, "failures to shrink (the shortest first, one per set of invariants broken)")
	budget    = flag.Int("shrink-budget", 40, "runs each shrink may use")
	faultRate = flag.Float64("faults", 0.25, "TestOwnershipInvariantsUnderFaults: probability that a write of fieldops fails during a step")
	faultSeed = flag.Int64("fault-seed", 1000001, "TestOwnershipInvariantsUnderFaults: seed of the first sequence")
	faultSeqs = flag.Int("fault-sequences", 40, "TestOwnershipInvariantsUnderFaults: how many sequences")
	orderNote = flag.Bool("write-order-notes", false, "a plan's order of writes that differs from the controller's is a note of the step, not a violation of (10)")
)

// The control plane starts with the first test that needs it.
var (
	cpOnce sync.Once
	cp     *localcp.ControlPlane
	env    *Env
	cpErr  error
)

func TestMain(m *testing.M) {
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	code := m.Run()
	if cp != nil {
		_ = cp.Stop()
	}
	os.Exit(code)
}

func controlPlane(t *testing.T) *Env {
	t.Helper()
	cpOnce.Do(func() {
		cp, cpErr = localcp.Start(localcp.Options{ExtraCRDPaths: []string{"test/testdata/crds/invariants.example.com_widgets.yaml"}})
		if cpErr != nil {
			return
		}
		var c client.Client
		if c, cpErr = client.New(cp.Config, client.Options{Scheme: controllers.Scheme()}); cpErr != nil {
			return
		}
		env = &Env{Config: cp.Config, Client: c, Timeout: 20 * time.Second, OrderNotes: *orderNote}
	})
	if cpErr != nil {
		t.Fatal(cpErr)
	}
	return env
}

// TestOwnershipInvariants runs -sequences random sequences from -seed
// against the local control plane and fails with the shortest failing
// sequences it finds. Replay one with `make fuzz SEED=<its seed> N=1`.
func TestOwnershipInvariants(t *testing.T) {
	runSequences(t, *seed, *sequences, 0)
}

// TestOwnershipInvariantsUnderFaults runs -fault-sequences sequences from
// -fault-seed with -faults of fieldops' writes failing during each step,
// half of them after the apiserver did them (a crash between two writes):
// the invariants must hold all the same once the faults stop. Replay one
// with `make fuzz-faults SEED=<its seed> N=1`.
func TestOwnershipInvariantsUnderFaults(t *testing.T) {
	if *faultSeqs == 0 || *faultRate == 0 {
		t.Skip("-fault-sequences or -faults is 0")
	}
	runSequences(t, *faultSeed, *faultSeqs, *faultRate)
}

func runSequences(t *testing.T, seed int64, n int, faults float64) {
	e := controlPlane(t)
	replay := "make fuzz SEED=<its seed> N=1"
	if faults > 0 {
		replay = "make fuzz-faults SEED=<its seed> N=1"
	}
	t.Logf("seed %d, %d sequences of %d to %d random steps, %d at once, %.0f%% of fieldops' writes failing during steps (replay a sequence: %s)",
		seed, n, MinSteps, max(*maxSteps, MinSteps), *workers, 100*faults, replay)
	seqs := make([]Sequence, n)
	for i := range seqs {
		seqs[i] = GenerateWith(seed+int64(i), *maxSteps, Options{Restore: true, Expire: true, Selector: true})
		seqs[i].Faults = faults
	}
	ctx := context.Background()
	start := time.Now()
	results := e.RunAll(ctx, seqs, *workers)
	var failed []Result
	steps := 0
	for _, r := range results {
		steps += len(r.Notes)
		if r.Failed >= 0 {
			failed = append(failed, r)
		}
	}
	t.Logf("%d sequences, %d steps in %s; %d broke an invariant; %s", len(results), steps, time.Since(start).Round(time.Second), len(failed), &e.plans)
	if faults == 0 && n >= 50 && (e.plans.applies.Load() == 0 || e.plans.deletions.Load() == 0 || e.plans.selector.Load() == 0) {
		t.Errorf("invariant (10) checked nothing of a kind: %s", &e.plans)
	}
	if len(failed) == 0 {
		return
	}

	// Shrink the shortest failure of each set of invariants broken.
	sort.SliceStable(failed, func(i, j int) bool { return failed[i].Failed < failed[j].Failed })
	shrunk := map[string]bool{}
	for i, r := range failed {
		sig := fmt.Sprint(r.Invariants())
		if shrunk[sig] || len(shrunk) >= *shrinks {
			continue
		}
		shrunk[sig] = true
		failed[i] = e.Shrink(ctx, r, *budget, *workers)
	}
	var summary []string
	for _, r := range failed {
		summary = append(summary, fmt.Sprintf("seed %d: %v", r.Seq.Seed, r.Invariants()))
	}
	t.Errorf("%d of %d sequences (seed %d) broke an invariant: %s", len(failed), len(results), seed, strings.Join(summary, "; "))
	for _, r := range failed {
		t.Errorf("%s", r.Report())
	}
}
