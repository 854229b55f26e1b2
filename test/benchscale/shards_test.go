/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// TestShardedFieldPatch: FieldPatch i carries the label that the
// selector of shard i mod s matches, and no other shard's selector does,
// in both layouts.
func TestShardedFieldPatch(t *testing.T) {
	for _, tc := range []struct{ i, s, want int }{
		{0, 4, 0}, {1, 4, 1}, {3, 4, 3}, {4, 4, 0}, {9999, 4, 3}, {7, 1, 0}, {5, 2, 1},
	} {
		for _, layout := range []string{layoutMod, layoutNamespace} {
			fp := shardedFieldPatch(layout, tc.i, tc.s)
			for shard := range tc.s {
				sel, err := labels.Parse(shardSelector(shard))
				if err != nil {
					t.Fatal(err)
				}
				if got := sel.Matches(labels.Set(fp.Labels)); got != (shard == tc.want) {
					t.Errorf("%s layout, FieldPatch %d of %d shards, labels %v: selector %q matches %v, want %v", layout, tc.i, tc.s, fp.Labels, sel, got, shard == tc.want)
				}
			}
		}
	}
}

// TestPlacement: each layout puts FieldPatch i and its Deployment
// (bench-<index> in one namespace) where no other FieldPatch is, the
// indexes of each namespace run from 0 to its size - 1 (what
// createDeployments creates), and the namespace layout gives each shard a
// namespace of its own.
func TestPlacement(t *testing.T) {
	const n, s = 10, 4
	for _, layout := range []string{layoutMod, layoutNamespace} {
		sizes := namespaceSizes(layout, n, s)
		seen := map[string]bool{}
		shardOfNS := map[string]int{}
		for i := range n {
			fp := shardedFieldPatch(layout, i, s)
			key := fp.Namespace + "/" + fp.Name
			if seen[key] {
				t.Errorf("%s layout: FieldPatch %d at %s, taken", layout, i, key)
			}
			seen[key] = true
			if fp.Spec.Target.Name != fp.Name {
				t.Errorf("%s layout: FieldPatch %s targets %s", layout, key, fp.Spec.Target.Name)
			}
			ns, index := placement(layout, i, s)
			if index < 0 || index >= sizes[ns] {
				t.Errorf("%s layout: FieldPatch %d at index %d of %s, which holds %d", layout, i, index, ns, sizes[ns])
			}
			if layout == layoutNamespace {
				if other, ok := shardOfNS[ns]; ok && other != shardOf(i, s) {
					t.Errorf("namespace layout: %s holds shards %d and %d", ns, other, shardOf(i, s))
				}
				shardOfNS[ns] = shardOf(i, s)
			}
		}
		total := 0
		for _, size := range sizes {
			total += size
		}
		if total != n {
			t.Errorf("%s layout: namespace sizes %v add up to %d, want %d", layout, sizes, total, n)
		}
		if want := map[string]int{layoutMod: 1, layoutNamespace: s}[layout]; len(sizes) != want {
			t.Errorf("%s layout: %d namespaces %v, want %d", layout, len(sizes), sizes, want)
		}
	}
}

// TestSmokeShards runs the whole benchmark with N=6 and 2 shards (each
// shard's FieldPatches and targets in a namespace of their own): each
// shard's manager caches exactly its share of the FieldPatches (3, and its
// warm-up one), reconciles them, elects on a Lease of its own (its log's
// "shard" line), and every Deployment gets the env var. Timings are
// printed, never asserted. Skipped unless FIELDOPS_BENCHSCALE_SMOKE is set.
func TestSmokeShards(t *testing.T) {
	dir, managerBin, fluxBin := smokeBinaries(t, "set FIELDOPS_BENCHSCALE_SMOKE=1 to run (or: make bench-scale N=50 SHARDS=2)")
	const n, shards = 6, 2
	r, err := run(options{n: n, concurrency: 2, shards: shards, shardLayout: layoutNamespace, managerBin: managerBin,
		fluxBin: fluxBin, logDir: dir, timeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	r.print(&out)
	r.printShards(&out)
	t.Log(out.String())
	sh := r.sharded
	if sh == nil || len(sh.shards) != shards {
		t.Fatalf("sharded result %+v, want %d shards", sh, shards)
	}
	if sh.applied != n {
		t.Errorf("sharded run applied %d, want %d", sh.applied, n)
	}
	leases := map[string]string{}
	for i, x := range sh.shards {
		if x.fieldPatches != n/shards+1 {
			t.Errorf("shard %s caches %v FieldPatches, want %d (its share and its warm-up one)", x.selector, x.fieldPatches, n/shards+1)
		}
		if x.requests[reconciles] < n/shards {
			t.Errorf("shard %s: %v reconciles, want at least %d", x.selector, x.requests[reconciles], n/shards)
		}
		if x.peakRSS == 0 || x.rssAnon == 0 {
			t.Errorf("shard %s: no RSS read: %+v", x.selector, x)
		}
		lease := shardLease(t, filepath.Join(dir, "manager-"+shardKey(i)+".log"))
		if other, ok := leases[lease]; ok {
			t.Errorf("shards %s and %s share the Lease %s", other, x.selector, lease)
		}
		leases[lease] = x.selector
	}
	if sh.afterCreates <= 0 || sh.afterCreates > sh.wall {
		t.Errorf("manager side %s not within the converge %s", sh.afterCreates, sh.wall)
	}
}

// shardLease is the leaderElectionLease of the manager's "shard" log line.
func shardLease(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		var line struct {
			Msg   string `json:"msg"`
			Lease string `json:"leaderElectionLease"`
		}
		if json.Unmarshal(s.Bytes(), &line) == nil && line.Msg == "shard" && line.Lease != "" {
			return line.Lease
		}
	}
	t.Fatalf("%s: no \"shard\" line with a leaderElectionLease", path)
	return ""
}
