/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package targetcache_test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/targetcache"
)

// What one watched target costs the manager: N FieldPatches on N
// ConfigMaps (FIELDOPS_TARGETCACHE_SCALE=N; skipped without it). It logs
// the heap and goroutines per target, with the FieldPatches and after
// their deletion.
func TestScalePerTarget(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("FIELDOPS_TARGETCACHE_SCALE"))
	if n <= 0 {
		t.Skip("set FIELDOPS_TARGETCACHE_SCALE=N to measure N targets")
	}
	ns := kit.Namespace(t, "scale")
	for i := 0; i < n; i++ {
		configMap(t, ns, fmt.Sprintf("cm-%04d", i))
	}
	base, g0 := heapInuse(), runtime.NumGoroutine()
	start := time.Now()
	for i := 0; i < n; i++ {
		fieldPatch(t, labelPatch(fmt.Sprintf("fp-%04d", i), ns, "ConfigMap", fmt.Sprintf("cm-%04d", i), "patched"))
	}
	waitLong(t, func() bool { return targets.Stats().Objects == n })
	converged := time.Since(start)
	with, g1 := heapInuse(), runtime.NumGoroutine()
	for i := 0; i < n; i++ {
		fp := labelPatchObject(ns, fmt.Sprintf("fp-%04d", i))
		if err := k8s.Delete(t.Context(), fp); err != nil {
			t.Fatal(err)
		}
	}
	waitLong(t, func() bool { return targets.Stats() == targetcache.Stats{} })
	after, g2 := heapInuse(), runtime.NumGoroutine()
	// The watches alone, in a cache of their own (no FieldPatches).
	c := newCache(t, restConfig, k8s)
	defer c.Stop()
	ref := targetcache.Ref{Sink: &sink{}}
	wbase, wstack, wg0 := heapInuse(), stackInuse(), runtime.NumGoroutine()
	for i := 0; i < n; i++ {
		if err := c.Acquire(ref, targetcache.Target{GVK: configMapGVK, Namespace: ns, Name: fmt.Sprintf("cm-%04d", i)}, false); err != nil {
			t.Fatal(err)
		}
	}
	waitLongFor(t, func() bool { return c.Stats().Objects == n }, func() any { return c.Stats() })
	wwith, wstackWith, wg1 := heapInuse(), stackInuse(), runtime.NumGoroutine()
	t.Logf("%d watches alone: heap %.1f KiB, stacks %.1f KiB, goroutines %.1f per watch",
		n, float64(int64(wwith)-int64(wbase))/1024/float64(n), float64(int64(wstackWith)-int64(wstack))/1024/float64(n), float64(wg1-wg0)/float64(n))
	t.Logf("%d targets watched in %v: heap %+.1f MiB (%.1f KiB per target), goroutines %+d (%.1f per target); after deletion heap %+.1f MiB, goroutines %+d",
		n, converged.Round(time.Millisecond), float64(int64(with)-int64(base))/mib, float64(int64(with)-int64(base))/1024/float64(n), g1-g0, float64(g1-g0)/float64(n),
		float64(int64(after)-int64(base))/mib, g2-g0)
}

func labelPatchObject(ns, name string) *v1alpha1.FieldPatch {
	fp := &v1alpha1.FieldPatch{}
	fp.Namespace, fp.Name = ns, name
	return fp
}

// waitLong waits up to 10 minutes for cond (converging many FieldPatches
// takes longer than testkit.Eventually waits).
func waitLong(t *testing.T, cond func() bool) {
	t.Helper()
	waitLongFor(t, cond, func() any { return targets.Stats() })
}

func waitLongFor(t *testing.T, cond func() bool, state func() any) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Minute); !cond(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %+v", state())
		}
	}
}

func stackInuse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.StackInuse
}
