/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

// The sharded run's namespaces: its own, so that its Deployments and
// FieldPatches are new to every shard, as the one-manager run's are.
const (
	shardsNS       = "bench-shards"
	shardsWarmupNS = "bench-shards-warmup"
)

// shardKey is the value of v1alpha1.ShardLabel of shard i.
func shardKey(i int) string { return fmt.Sprintf("shard-%d", i) }

// shardSelector is the --watch-label-selector of shard i.
func shardSelector(i int) string { return v1alpha1.ShardLabel + "=" + shardKey(i) }

// shardOf is the shard of FieldPatch i among s shards.
func shardOf(i, s int) int { return i % s }

// Layouts of the sharded run (-shard-layout): where FieldPatch i and its
// Deployment go.
const (
	// layoutMod puts all N in one namespace, FieldPatch i on shard
	// i mod S: every shard's targets share one namespace.
	layoutMod = "mod"
	// layoutNamespace puts FieldPatch i and its Deployment in the
	// namespace of shard i mod S, bench-shards-<i mod S>: each shard's
	// targets have a namespace of their own.
	layoutNamespace = "namespace"
)

// placement is where FieldPatch i of the sharded run and its Deployment
// go under layout: the namespace, and the index of both names
// (bench-<index>), counting from 0 in each namespace.
func placement(layout string, i, s int) (ns string, index int) {
	if layout == layoutNamespace {
		return fmt.Sprintf("%s-%d", shardsNS, shardOf(i, s)), i / s
	}
	return shardsNS, i
}

// namespaceSizes is how many of the N FieldPatches (and Deployments) each
// namespace of the sharded run holds, by namespace.
func namespaceSizes(layout string, n, s int) map[string]int {
	sizes := map[string]int{}
	for i := range n {
		ns, _ := placement(layout, i, s)
		sizes[ns]++
	}
	return sizes
}

// shardedFieldPatch is FieldPatch i of the sharded run, placed by layout
// and labelled for shard i mod s.
func shardedFieldPatch(layout string, i, s int) *v1alpha1.FieldPatch {
	ns, index := placement(layout, i, s)
	return onShard(fieldPatch(ns, index), shardOf(i, s))
}

// onShard labels fp for shard i.
func onShard(fp *v1alpha1.FieldPatch, i int) *v1alpha1.FieldPatch {
	fp.Labels = map[string]string{v1alpha1.ShardLabel: shardKey(i)}
	return fp
}

// shardResult is one shard's converge: its manager process alone.
type shardResult struct {
	selector string
	requests requestCounts // by method, and its reconciles
	cpu      float64       // seconds
	peakRSS  int64         // KiB, VmHWM
	rssAnon  int64         // KiB, at the end of the converge
	rssFile  int64         // KiB, at the end of the converge
	// fieldPatches is the shard's fieldops_objects{kind="FieldPatch"}
	// after the converge: the FieldPatches in its cache (its warm-up one
	// included).
	fieldPatches float64
}

// shardedResult is the sharded run: the same N FieldPatches as the
// one-manager run, over len(shards) manager processes on the same
// apiserver.
type shardedResult struct {
	layout       string
	wall         time.Duration // from the first create until all Ready
	afterCreates time.Duration // from the last create until all Ready
	requests     requestCounts // all shards, by method
	cpCPU        float64       // kube-apiserver + etcd, seconds
	applied      int
	shards       []shardResult
}

// runSharded starts o.shards managers, shard i with
// --watch-label-selector=sharding.fieldops.dev/key=shard-<i>, warms each
// up with one FieldPatch of its shard, then creates N FieldPatches on N new
// Deployments, FieldPatch i labelled shard-<i mod shards> and placed by
// -shard-layout, and measures as runFieldops does (without the hand-back). The managers run without
// --leader-elect, as the one-manager run: one replica per shard, no Lease.
func (b *bench) runSharded(ctx context.Context) (*shardedResult, error) {
	s, layout := b.o.shards, b.o.shardLayout
	if layout != layoutMod && layout != layoutNamespace {
		return nil, fmt.Errorf("-shard-layout %q: want %s or %s", layout, layoutMod, layoutNamespace)
	}
	sizes := namespaceSizes(layout, b.o.n, s)
	if err := b.prepareSharded(ctx, sizes); err != nil {
		return nil, err
	}
	ms := make([]*manager, s)
	defer func() {
		for _, m := range ms {
			if m != nil {
				m.stop()
			}
		}
	}()
	for i := range s {
		var err error
		if ms[i], err = b.startManagerWith(ctx, fmt.Sprintf("manager-%s.log", shardKey(i)), "--watch-label-selector="+shardSelector(i)); err != nil {
			return nil, fmt.Errorf("shard %d: %w", i, err)
		}
	}
	before, err := b.warmUpShards(ctx, ms)
	if err != nil {
		return nil, err
	}
	trackers := map[string]*tracker{}
	for ns := range sizes {
		t := newTracker(b.c, ns)
		go t.run(ctx)
		if _, err := t.wait(ctx, func(int, int) bool { return true }); err != nil {
			return nil, err
		}
		trackers[ns] = t
	}
	return b.convergeShards(ctx, ms, trackers, sizes, before)
}

// prepareSharded deletes the Deployments of the runs before (as between
// the Flux and fieldops sides, the apiserver and etcd of this run hold
// none of theirs; one delete each: a deletecollection of 10000 may
// outlast the request deadline; the selector run deleted them already,
// if it ran), then creates the Deployments of each namespace (sizes) and
// one per shard for the warm-up.
func (b *bench) prepareSharded(ctx context.Context, sizes map[string]int) error {
	if err := parallel(b.o.n, 8, func(i int) error {
		return ignoreNotFound(b.c.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: fieldopsNS, Name: fmt.Sprintf("bench-%d", i)}}))
	}); err != nil {
		return err
	}
	for ns, size := range sizes {
		if err := b.createDeployments(ctx, ns, size); err != nil {
			return err
		}
	}
	return b.createDeployments(ctx, shardsWarmupNS, b.o.shards)
}

// warmUpShards creates one FieldPatch per shard, which starts its
// Deployment watch, and returns each shard's request counts once all are
// Ready and the shards settled.
func (b *bench) warmUpShards(ctx context.Context, ms []*manager) ([]requestCounts, error) {
	s := len(ms)
	warm := newTracker(b.c, shardsWarmupNS)
	go warm.run(ctx)
	for i := range s {
		if err := b.c.Create(ctx, onShard(fieldPatch(shardsWarmupNS, i), i)); err != nil {
			return nil, err
		}
	}
	if _, err := warm.wait(ctx, func(ready, present int) bool { return ready == s }); err != nil {
		return nil, fmt.Errorf("warm-up FieldPatches: %w", err)
	}
	before := make([]requestCounts, s)
	for i, m := range ms {
		var err error
		if before[i], err = settle(m.metricsURL, 2*time.Second, 20*time.Second); err != nil {
			return nil, err
		}
	}
	return before, nil
}

// convergeShards creates the N FieldPatches, placed by -shard-layout,
// and measures until every namespace's (trackers, of sizes) are Ready:
// the wall times, each shard's use from its counts before, the control
// plane's CPU and the Deployments applied.
func (b *bench) convergeShards(ctx context.Context, ms []*manager, trackers map[string]*tracker, sizes map[string]int, before []requestCounts) (*shardedResult, error) {
	s := len(ms)
	cpu0 := make([]float64, s)
	for i, m := range ms {
		var err error
		if cpu0[i], err = cpuOf(m.cmd.Process.Pid); err != nil {
			return nil, err
		}
	}
	cp0, err := cpuOf(b.cpPIDs...)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := parallel(b.o.n, 8, func(i int) error { return b.c.Create(ctx, shardedFieldPatch(b.o.shardLayout, i, s)) }); err != nil {
		return nil, err
	}
	created := time.Now()
	done, err := allReady(ctx, trackers, sizes)
	if err != nil {
		return nil, err
	}
	r := &shardedResult{layout: b.o.shardLayout, wall: done.Sub(start), afterCreates: done.Sub(created), requests: requestCounts{}, shards: make([]shardResult, s)}
	for i, m := range ms {
		if r.shards[i], err = shardUse(m, i, before[i], cpu0[i]); err != nil {
			return nil, err
		}
		for k, v := range r.shards[i].requests {
			r.requests[k] += v
		}
	}
	cp1, err := cpuOf(b.cpPIDs...)
	if err != nil {
		return nil, err
	}
	r.cpCPU = cp1 - cp0
	for ns := range sizes {
		applied, err := b.countApplied(ctx, ns)
		if err != nil {
			return nil, err
		}
		r.applied += applied
	}
	return r, nil
}

// allReady returns when the last namespace is all Ready (trackers, of
// sizes); each wait returns when it sees its own condition hold, at the
// latest 50 ms after the last one.
func allReady(ctx context.Context, trackers map[string]*tracker, sizes map[string]int) (time.Time, error) {
	var done time.Time
	for ns, t := range trackers {
		size := sizes[ns]
		at, err := t.wait(ctx, func(ready, present int) bool { return ready == size })
		if err != nil {
			return done, err
		}
		if at.After(done) {
			done = at
		}
	}
	return done, nil
}

// shardUse is what shard i (manager m) used in the converge once
// settled: its requests since before, its CPU since cpu0, its memory and
// the FieldPatches in its cache.
func shardUse(m *manager, i int, before requestCounts, cpu0 float64) (shardResult, error) {
	sr := shardResult{selector: shardSelector(i)}
	after, err := settle(m.metricsURL, 2*time.Second, 30*time.Second)
	if err != nil {
		return sr, err
	}
	sr.requests = after.minus(before)
	pid := m.cmd.Process.Pid
	cpu1, err := cpuOf(pid)
	if err != nil {
		return sr, err
	}
	sr.cpu = cpu1 - cpu0
	if sr.peakRSS, err = peakRSSKiB(pid); err != nil {
		return sr, err
	}
	if sr.rssAnon, sr.rssFile, err = rssSplitKiB(pid); err != nil {
		return sr, err
	}
	sr.fieldPatches, err = scrapeObjects(m.metricsURL, "FieldPatch")
	return sr, err
}

// scrapeObjects sums fieldops_objects{kind=kind} (every ready, stalled
// and reason) from a Prometheus text endpoint: the objects of that kind
// in the manager's cache.
func scrapeObjects(url, kind string) (float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var sum float64
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "fieldops_objects{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok || !strings.Contains(","+labels+",", fmt.Sprintf(",kind=%q,", kind)) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return 0, fmt.Errorf("metrics line %q: %w", s.Text(), err)
		}
		sum += v
	}
	return sum, s.Err()
}

// printShards writes the manager side of the one-manager converge and,
// with -shards, the sharded run beside it: totals, the ratios to the
// one-manager run (same N, same apiserver), one line per shard, and the
// rows for docs/performance.md's table.
func (r *result) printShards(w io.Writer) {
	n := r.o.n
	fo := r.fieldops
	fmt.Fprintf(w, "\nfieldops, one manager: converge %s (%.2f ms per FieldPatch), of which %s after the last create (the manager side)\n",
		secs(fo.wall), perFieldPatchMS(fo.wall, n), secs(fo.afterCreates))
	sh := r.sharded
	if sh == nil {
		return
	}
	s := len(sh.shards)
	where := fmt.Sprintf("all in namespace %s", shardsNS)
	if sh.layout == layoutNamespace {
		where = fmt.Sprintf("with its Deployment in namespace %s-<i mod %d>", shardsNS, s)
	}
	fmt.Fprintf(w, "\nsharded: %d managers on the same apiserver, shard i with --watch-label-selector=%s=shard-<i>, FieldPatch i on shard i mod %d, %s (-shard-layout=%s); %d workers each\n\n",
		s, v1alpha1.ShardLabel, s, where, sh.layout, r.o.concurrency)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\tone manager\t%d shards\tshards/one\n", s)
	fmt.Fprintf(tw, "converge wall\t%s\t%s\t%s\n", secs(fo.wall), secs(sh.wall), ratio(sh.wall.Seconds(), fo.wall.Seconds()))
	fmt.Fprintf(tw, "  per FieldPatch\t%.2f ms\t%.2f ms\t\n", perFieldPatchMS(fo.wall, n), perFieldPatchMS(sh.wall, n))
	fmt.Fprintf(tw, "manager side (after the last create)\t%s\t%s\t%s\n", secs(fo.afterCreates), secs(sh.afterCreates), ratio(sh.afterCreates.Seconds(), fo.afterCreates.Seconds()))
	foTotal, foBy := perObject(fo.requests, n)
	shTotal, shBy := perObject(sh.requests, n)
	fmt.Fprintf(tw, "requests per object\t%s\t%s\t%s\n", foTotal, shTotal, ratio(sh.requests.total(), fo.requests.total()))
	fmt.Fprintf(tw, "  by method\t%s\t%s\t\n", foBy, shBy)
	fmt.Fprintf(tw, "reconciles per object\t%.2f\t%.2f\t\n", fo.requests[reconciles]/float64(n), sh.requests[reconciles]/float64(n))
	var cpu float64
	var peak, anon, file int64
	for _, x := range sh.shards {
		cpu += x.cpu
		peak, anon, file = peak+x.peakRSS, anon+x.rssAnon, file+x.rssFile
	}
	fmt.Fprintf(tw, "manager CPU (sum)\t%.2f s\t%.2f s\t%s\n", fo.mgrCPU, cpu, ratio(cpu, fo.mgrCPU))
	fmt.Fprintf(tw, "apiserver+etcd CPU\t%.2f s\t%.2f s\t%s\n", fo.cpCPU, sh.cpCPU, ratio(sh.cpCPU, fo.cpCPU))
	fmt.Fprintf(tw, "peak RSS (VmHWM, sum)\t%.0f MiB\t%.0f MiB\t%s\n", mib(fo.peakRSS), mib(peak), ratio(float64(peak), float64(fo.peakRSS)))
	fmt.Fprintf(tw, "  RSS after, anon + file (sum)\t%.0f + %.0f MiB\t%.0f + %.0f MiB\t\n", mib(fo.after.anon), mib(fo.after.file), mib(anon), mib(file))
	fmt.Fprintf(tw, "applied\t%d/%d\t%d/%d\t\n", fo.applied, n, sh.applied, n)
	_ = tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "shard\tFieldPatches cached\treconciles\trequests\tCPU\tpeak RSS\tRSS after, anon + file")
	for _, x := range sh.shards {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.2f s\t%.1f MiB\t%.1f + %.1f MiB\n",
			x.selector, x.fieldPatches, x.requests[reconciles], x.requests.total(), x.cpu, mib(x.peakRSS), mib(x.rssAnon), mib(x.rssFile))
	}
	_ = tw.Flush()

	fmt.Fprintf(w, "\n| N | converge (per FieldPatch) | manager side, after the creates | requests per object | manager CPU | apiserver+etcd CPU | peak RSS per manager | RSS anon / file per manager |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(w, "| %d, one manager | %.1f s (%.2f ms) | %.1f s | %s | %.2f s | %.2f s | %.0f MiB | %.1f / %.1f MiB |\n",
		n, fo.wall.Seconds(), perFieldPatchMS(fo.wall, n), fo.afterCreates.Seconds(), foTotal, fo.mgrCPU, fo.cpCPU, mib(fo.peakRSS), mib(fo.after.anon), mib(fo.after.file))
	fmt.Fprintf(w, "| %d, %d shards (%s) | %.1f s (%.2f ms) | %.1f s (%s) | %s | %.2f s (sum) | %.2f s | %.0f–%.0f MiB | %.1f–%.1f / %.1f–%.1f MiB |\n",
		n, s, sh.layout, sh.wall.Seconds(), perFieldPatchMS(sh.wall, n), sh.afterCreates.Seconds(), ratio(sh.afterCreates.Seconds(), fo.afterCreates.Seconds()),
		shTotal, cpu, sh.cpCPU, mib(minOf(sh.shards, func(x shardResult) int64 { return x.peakRSS })), mib(maxOf(sh.shards, func(x shardResult) int64 { return x.peakRSS })),
		mib(minOf(sh.shards, func(x shardResult) int64 { return x.rssAnon })), mib(maxOf(sh.shards, func(x shardResult) int64 { return x.rssAnon })),
		mib(minOf(sh.shards, func(x shardResult) int64 { return x.rssFile })), mib(maxOf(sh.shards, func(x shardResult) int64 { return x.rssFile })))
}

// perFieldPatchMS is d divided over n FieldPatches, in milliseconds.
func perFieldPatchMS(d time.Duration, n int) float64 {
	return d.Seconds() * 1000 / float64(n)
}

func minOf(xs []shardResult, f func(shardResult) int64) int64 {
	m := f(xs[0])
	for _, x := range xs[1:] {
		m = min(m, f(x))
	}
	return m
}

func maxOf(xs []shardResult, f func(shardResult) int64) int64 {
	m := f(xs[0])
	for _, x := range xs[1:] {
		m = max(m, f(x))
	}
	return m
}
