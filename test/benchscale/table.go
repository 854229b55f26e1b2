/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// perObject formats requests per object: the total and each method.
func perObject(r requestCounts, n int) (total string, byMethod string) {
	methods := make([]string, 0, len(r))
	for m := range r {
		if m != reconciles {
			methods = append(methods, m)
		}
	}
	slices.Sort(methods)
	parts := make([]string, 0, len(methods))
	for _, m := range methods {
		parts = append(parts, fmt.Sprintf("%s %.2f", m, r[m]/float64(n)))
	}
	return fmt.Sprintf("%.2f", r.total()/float64(n)), strings.Join(parts, ", ")
}

func ratio(fieldops, flux float64) string {
	if flux == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", fieldops/flux)
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// msPer is d per object, in milliseconds: what compares converges of
// different N.
func msPer(d time.Duration, n int) string {
	return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000/float64(n))
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// print writes the side-by-side table, the hand-back line and the row of
// issue 11's table (for docs/performance.md).
func (r *result) print(w io.Writer) {
	n := r.o.n
	fx, fo, h := r.flux, r.fieldops, r.handBack
	fmt.Fprintf(w, "\nbench-scale: N=%d Deployments owned by %q, one env var added to each; %d CPUs; workers %d per manager\n",
		n, helmManager, runtime.NumCPU(), r.o.concurrency)
	if r.o.managerGOGC != "" {
		fmt.Fprintf(w, "fieldops manager run with GOGC=%s\n", r.o.managerGOGC)
	}
	if r.o.tenant {
		fmt.Fprintf(w, "fieldops as the default install: each FieldPatch acts as its namespace's %s (targets read through an impersonating client)\n", tenantAccount)
	}
	fmt.Fprintf(w, "Flux: fluxcd/pkg/ssa ResourceManager.ApplyAll (actions %v, %d dry-run requests); fieldops: manager binary, N FieldPatches. Logs: %s\n\n", fx.flux.Actions, fx.flux.DryRun, r.logDir)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tFlux ssa ApplyAll\tfieldops\tfieldops/Flux")
	fmt.Fprintf(tw, "converge wall\t%s\t%s\t%s\n", secs(fx.wall), secs(fo.wall), ratio(fo.wall.Seconds(), fx.wall.Seconds()))
	fmt.Fprintf(tw, "  per object\t%s\t%s\t\n", msPer(fx.wall, n), msPer(fo.wall, n))
	fxTotal, fxBy := perObject(fx.requests, n)
	foTotal, foBy := perObject(fo.requests, n)
	fmt.Fprintf(tw, "requests per object\t%s\t%s\t%s\n", fxTotal, foTotal, ratio(fo.requests.total(), fx.requests.total()))
	fmt.Fprintf(tw, "  by method\t%s\t%s\t\n", fxBy, foBy)
	fmt.Fprintf(tw, "reconciles per object\t–\t%.2f\t\n", fo.requests[reconciles]/float64(n))
	fmt.Fprintf(tw, "manager CPU\t%.2f s\t%.2f s\t%s\n", fx.mgrCPU, fo.mgrCPU, ratio(fo.mgrCPU, fx.mgrCPU))
	fmt.Fprintf(tw, "apiserver+etcd CPU\t%.2f s\t%.2f s\t%s\n", fx.cpCPU, fo.cpCPU, ratio(fo.cpCPU, fx.cpCPU))
	fmt.Fprintf(tw, "peak RSS (VmHWM)\t%.0f MiB\t%.0f MiB\t%s\n", mib(fx.peakRSS), mib(fo.peakRSS), ratio(float64(fo.peakRSS), float64(fx.peakRSS)))
	fmt.Fprintf(tw, "  sampled peak, anon + file\t%s\t%s\t\n", split(fx.peak), split(fo.peak))
	fmt.Fprintf(tw, "RSS after, anon + file\t%s\t%s\t%s (anon)\n", split(fx.after), split(fo.after), ratio(float64(fo.after.anon), float64(fx.after.anon)))
	fmt.Fprintf(tw, "  anon growth per object\t%s\t%s\t\n", growth(fx, n), growth(fo, n))
	fmt.Fprintf(tw, "capacity at a %d MiB limit, %d%% headroom\t–\t%s FieldPatches\t\n", limitMiB, headroomPercent, capacity(fo.before, fo.peak, n))
	fmt.Fprintf(tw, "Go heap after, alloc / in use\t–\t%.1f / %.1f MiB\t\n", fo.heap.alloc/(1<<20), fo.heap.inuse/(1<<20))
	fmt.Fprintf(tw, "  free resident, stacks, next GC\t–\t%.1f, %.1f, %.1f MiB\t\n", (fo.heap.idle-fo.heap.released)/(1<<20), fo.heap.stacks/(1<<20), fo.heap.nextGC/(1<<20))
	fmt.Fprintf(tw, "applied\t%d/%d\t%d/%d\t\n", fx.applied, n, fo.applied, n)
	_ = tw.Flush()
	hTotal, hBy := perObject(h.requests, n)
	fmt.Fprintf(w, "\nhand-back (fieldops, delete all N FieldPatches): %s until all gone, %s requests per object (%s), %.2f reconciles per object, manager CPU %.2f s, apiserver+etcd CPU %.2f s; %d/%d Deployments keep the env var\n",
		secs(h.wall), hTotal, hBy, h.requests[reconciles]/float64(n), h.mgrCPU, h.cpCPU, h.left, n)
	fmt.Fprintf(w, "\n| N | converge: Flux ssa ApplyAll / fieldops | requests per object | manager CPU | apiserver+etcd CPU | peak RSS Flux / fieldops | hand-back of all N |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(w, "| %d | %.1f s / %.1f s (%s) | %s / %s | %s | %s | %.0f / %.0f MiB | %s, %s req/object |\n",
		n, fx.wall.Seconds(), fo.wall.Seconds(), ratio(fo.wall.Seconds(), fx.wall.Seconds()), fxTotal, foTotal,
		ratio(fo.mgrCPU, fx.mgrCPU), ratio(fo.cpCPU, fx.cpCPU), mib(fx.peakRSS), mib(fo.peakRSS), secs(h.wall), hTotal)
	fmt.Fprintf(w, "\n| N | RssAnon after: Flux / fieldops | anon growth per object: Flux / fieldops | peak RSS, anon + file: Flux / fieldops | RssFile after: Flux / fieldops | fieldops Go heap after, alloc / in use |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|\n")
	fmt.Fprintf(w, "| %d | %.1f / %.1f MiB (%s) | %s / %s | %s / %s | %.1f / %.1f MiB | %.1f / %.1f MiB |\n",
		n, mib(fx.after.anon), mib(fo.after.anon), ratio(float64(fo.after.anon), float64(fx.after.anon)), growth(fx, n), growth(fo, n),
		split(fx.peak), split(fo.peak), mib(fx.after.file), mib(fo.after.file), fo.heap.alloc/(1<<20), fo.heap.inuse/(1<<20))
}

// split formats a sample as anonymous + file-backed MiB.
func split(s rssSample) string { return fmt.Sprintf("%.1f + %.1f MiB", mib(s.anon), mib(s.file)) }

// The chart's default memory limit, and the headroom kept below it, of
// the capacity figure (issue 41: memory is judged as capacity).
const (
	limitMiB        = 512
	headroomPercent = 20
)

// capacity is how many objects one manager holds within the chart's
// default limit less the headroom, at this run's growth: its anonymous
// memory before the converge and its file-backed pages at the peak (the
// binary's: the memory cgroup counts them too), plus, per object, the
// growth to the converge's sampled peak (the peak, not the settled
// memory, meets the limit). "–" when the run shows no growth.
func capacity(before, peak rssSample, n int) string {
	perObject := float64(peak.maxAnon-before.anon) / float64(n)
	budget := float64(limitMiB*1024)*(100-headroomPercent)/100 - float64(before.anon) - float64(peak.file)
	if perObject <= 0 || budget <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f (%.1f KiB each to the peak)", budget/perObject, perObject)
}

// growth is a side's anonymous memory after its converge less before it,
// per object, in KiB.
func growth(r sideResult, n int) string {
	return fmt.Sprintf("%.1f KiB", float64(r.after.anon-r.before.anon)/float64(n))
}
