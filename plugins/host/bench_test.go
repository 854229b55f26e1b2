/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package host_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/fieldops/fieldops/ownershipcore"
)

// BenchmarkPluginCall measures a Resolve call to a running plugin process
// (yield-to-autoscalers, one conflict) and reports p50 and p99 latency.
func BenchmarkPluginCall(b *testing.B) {
	h := newHost(b, 0, "yield-to-autoscalers:ConflictStrategy")
	cs, err := h.ConflictStrategy("yield-to-autoscalers")
	if err != nil {
		b.Fatal(err)
	}
	p, _ := ownershipcore.ParsePath(".spec.replicas")
	cf := []ownershipcore.Conflict{{Manager: "hpa", Operation: "Update", Path: p}}
	obj := object("web", nil)
	if _, err := cs.Resolve(context.Background(), obj, "m", cf); err != nil { // start the process
		b.Fatal(err)
	}
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := cs.Resolve(context.Background(), obj, "m", cf); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	b.ReportMetric(float64(durations[len(durations)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(durations[len(durations)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkPluginRestart measures the cost of a plugin restart: the first
// call after the process died (start, checksum, handshake, AutoMTLS, call).
func BenchmarkPluginRestart(b *testing.B) {
	h := newHost(b, 5*time.Second, "misbehave:ConflictStrategy")
	cs, _ := h.ConflictStrategy("misbehave")
	p, _ := ownershipcore.ParsePath(".spec.replicas")
	cf := []ownershipcore.Conflict{{Manager: "hpa", Operation: "Update", Path: p}}
	obj := object("web", nil)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		_, _ = cs.Resolve(context.Background(), obj, "crash", cf) // the process dies
		b.StartTimer()
		start := time.Now()
		if _, err := cs.Resolve(context.Background(), obj, "fine", cf); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "restart-ms")
}
