/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

// The selector run's namespaces, label and patch: one FieldPatch with
// spec.targetSelector over the N Deployments of its namespace, adding the
// env var of the per-object intents (one value for all).
const (
	selectorNS       = "bench-selector"
	selectorWarmupNS = "bench-selector-warmup"
	selectorLabel    = "bench.fieldops.dev/proxy"
	selectorPatch    = "bench-selector"
	selectorValue    = "selector"
	// driftManager is the field manager that changes the env var on
	// driftTargets Deployments after the converge.
	driftManager = "drifter"
	driftValue   = "drift"
	driftTargets = 100
)

// selectorResult is the selector run: one FieldPatch over N Deployments.
type selectorResult struct {
	// converge: from the FieldPatch's create until status.targets counts
	// N applied and it is Ready (every Deployment is then checked to
	// carry the env var).
	wall     time.Duration
	requests requestCounts
	mgrCPU   float64   // seconds
	cpCPU    float64   // kube-apiserver + etcd, seconds
	peakRSS  int64     // KiB, VmHWM (warm-up and converge)
	before   rssSample // just before the converge (the manager warm, idle)
	peak     rssSample
	after    rssSample
	heap     heapStats // the Go heap after the converge
	applied  int       // status.targets.applied after the converge
	// quiet: the requests of the manager during quietFor after the
	// converge settled.
	quietFor time.Duration
	quiet    requestCounts
	// drift: driftN Deployments changed by driftManager, until all carry
	// the patch's value again (a newer generation than the drift's).
	driftN        int
	driftWall     time.Duration
	driftRequests requestCounts
	// hand-back: delete the FieldPatch, until it is gone.
	handBack handBack
}

// selectorFieldPatch is the selector run's one FieldPatch: the env var on
// every Deployment of ns labelled selectorLabel=yes.
func selectorFieldPatch(ns string) *v1alpha1.FieldPatch {
	fp := &v1alpha1.FieldPatch{
		ObjectMeta: metav1.ObjectMeta{Name: selectorPatch, Namespace: ns},
		Spec: v1alpha1.FieldPatchSpec{
			TargetSelector: &v1alpha1.TargetSelector{APIVersion: "apps/v1", Kind: "Deployment",
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{selectorLabel: "yes"}}},
		},
	}
	fp.Spec.Patch.Raw = fmt.Appendf(nil, `{"spec":{"template":{"spec":{"containers":[{"name":%q,"env":[{"name":%q,"value":%q}]}]}}}}`, container, envName, selectorValue)
	return fp
}

// createLabelledDeployments creates namespace ns and n Deployments in it
// as createDeployments does, each also labelled selectorLabel=yes by
// "helm" (in the same apply).
func (b *bench) createLabelledDeployments(ctx context.Context, ns string, n int) error {
	if err := b.createNamespace(ctx, ns); err != nil {
		return err
	}
	return parallel(n, 8, func(i int) error {
		d := deployment(ns, fmt.Sprintf("bench-%d", i))
		labels := d.GetLabels()
		labels[selectorLabel] = "yes"
		d.SetLabels(labels)
		return b.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(d), client.FieldOwner(helmManager), client.ForceOwnership)
	})
}

// envValue is the value of the env var on d's container and whether it is
// there.
func envValue(d *appsv1.Deployment) (string, bool) {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != container {
			continue
		}
		for _, e := range c.Env {
			if e.Name == envName {
				return e.Value, true
			}
		}
	}
	return "", false
}

// deployState is what the selector run follows of one Deployment.
type deployState struct {
	generation int64
	value      string
	has        bool
}

// objWatch follows the objects of one list type in one namespace with a
// list and a watch, keeping a summary of each by name; wait checks a
// condition over the summaries every 50 ms.
type objWatch[S any] struct {
	c       client.WithWatch
	ns      string
	newList func() client.ObjectList
	sum     func(client.Object) S
	mu      sync.Mutex
	synced  bool
	objs    map[string]S
	errored error
}

func newObjWatch[S any](c client.WithWatch, ns string, newList func() client.ObjectList, sum func(client.Object) S) *objWatch[S] {
	return &objWatch[S]{c: c, ns: ns, newList: newList, sum: sum, objs: map[string]S{}}
}

// run lists and watches until ctx ends, re-listing when the watch closes.
func (w *objWatch[S]) run(ctx context.Context) {
	for ctx.Err() == nil {
		l := w.newList()
		if err := w.c.List(ctx, l, client.InNamespace(w.ns)); err != nil {
			w.fail(err)
			return
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			w.fail(err)
			return
		}
		rv := l.(metav1.ListInterface).GetResourceVersion()
		ws, err := w.c.Watch(ctx, w.newList(), client.InNamespace(w.ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
		if err != nil {
			w.fail(err)
			return
		}
		w.mu.Lock()
		w.objs = map[string]S{}
		for _, it := range items {
			o := it.(client.Object)
			w.objs[o.GetName()] = w.sum(o)
		}
		w.synced = true
		w.mu.Unlock()
		for ev := range ws.ResultChan() {
			o, ok := ev.Object.(client.Object)
			if !ok || ev.Type == watch.Error || ev.Type == watch.Bookmark {
				continue
			}
			w.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(w.objs, o.GetName())
			} else {
				w.objs[o.GetName()] = w.sum(o)
			}
			w.mu.Unlock()
		}
		ws.Stop()
	}
}

func (w *objWatch[S]) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.errored == nil && !errors.Is(err, context.Canceled) {
		w.errored = err
	}
}

// wait returns the time at which cond first held over the summaries by
// name, checked every 50 ms once the list is in.
func (w *objWatch[S]) wait(ctx context.Context, cond func(map[string]S) bool) (time.Time, error) {
	return pollUntil(ctx, func() (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.errored == nil && w.synced && cond(w.objs), w.errored
	})
}

// snapshot returns a copy of the summaries.
func (w *objWatch[S]) snapshot() map[string]S {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.objs)
}

func watchDeployments(c client.WithWatch, ns string) *objWatch[deployState] {
	return newObjWatch(c, ns, func() client.ObjectList { return &appsv1.DeploymentList{} }, func(o client.Object) deployState {
		d := o.(*appsv1.Deployment)
		v, has := envValue(d)
		return deployState{generation: d.Generation, value: v, has: has}
	})
}

// patchState is what the selector run follows of its FieldPatch.
type patchState struct {
	ready   bool
	applied int
}

func watchPatches(c client.WithWatch, ns string) *objWatch[patchState] {
	return newObjWatch(c, ns, func() client.ObjectList { return &v1alpha1.FieldPatchList{} }, func(o client.Object) patchState {
		fp := o.(*v1alpha1.FieldPatch)
		s := patchState{ready: meta.IsStatusConditionTrue(fp.Status.Conditions, "Ready")}
		if fp.Status.Targets != nil {
			s.applied = int(fp.Status.Targets.Applied)
		}
		return s
	})
}

// carrying counts the Deployments whose env var has value v.
func carrying(ds map[string]deployState, v string) int {
	n := 0
	for _, d := range ds {
		if d.has && d.value == v {
			n++
		}
	}
	return n
}

// runSelector is the selector run: N new Deployments owned by "helm" and
// labelled selectorLabel=yes, a new manager process warmed up by a
// selector patch over one Deployment elsewhere, then
//   - converge: create one FieldPatch with spec.targetSelector, until its
//     status.targets.applied is N and it is Ready (from a watch); every
//     Deployment is then read and must carry the env var;
//   - quiet: the manager's requests during o.selectorQuiet after that;
//   - drift: driftManager applies another value of the env var (force) on
//     min(100, N) Deployments, until each carries the patch's value again
//     in a newer generation, and the requests that took;
//   - hand-back: delete the FieldPatch, until it is gone.
//
// The per-object run's Deployments are deleted first, so that the
// apiserver holds the same number of Deployments as during that run.
func (b *bench) runSelector(ctx context.Context) (*selectorResult, error) {
	n := b.o.n
	if err := b.deleteEach(ctx, n, func(i int) client.Object {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: fieldopsNS, Name: fmt.Sprintf("bench-%d", i)}}
	}); err != nil {
		return nil, err
	}
	if err := b.createLabelledDeployments(ctx, selectorNS, n); err != nil {
		return nil, err
	}
	if err := b.createLabelledDeployments(ctx, selectorWarmupNS, 1); err != nil {
		return nil, err
	}
	m, err := b.startManagerWith(ctx, "manager-selector.log")
	if err != nil {
		return nil, err
	}
	defer m.stop()
	before, err := b.warmUpSelector(ctx, m)
	if err != nil {
		return nil, err
	}
	r := &selectorResult{quietFor: b.o.selectorQuiet}
	fps := watchPatches(b.c, selectorNS)
	go fps.run(ctx)
	if _, err := fps.wait(ctx, func(map[string]patchState) bool { return true }); err != nil {
		return nil, err
	}
	var profile sync.WaitGroup
	defer profile.Wait()
	ds, after, err := b.convergeSelector(ctx, m, fps, &profile, before, r)
	if err != nil {
		return nil, err
	}
	if _, err = b.quietSelector(ctx, m, after, r); err != nil {
		return nil, err
	}
	if after, err = b.driftSelector(ctx, m, ds, r); err != nil {
		return nil, err
	}
	if err := b.handBackSelector(ctx, m, fps, ds, after, r); err != nil {
		return nil, err
	}
	return r, nil
}

// warmUpSelector creates a selector patch over one Deployment elsewhere,
// as the per-object run's one FieldPatch, and returns the manager's
// request counts once it is applied and the manager settled.
func (b *bench) warmUpSelector(ctx context.Context, m *manager) (requestCounts, error) {
	warm := watchPatches(b.c, selectorWarmupNS)
	go warm.run(ctx)
	if err := b.c.Create(ctx, selectorFieldPatch(selectorWarmupNS)); err != nil {
		return nil, err
	}
	if _, err := warm.wait(ctx, func(s map[string]patchState) bool { return s[selectorPatch].ready && s[selectorPatch].applied == 1 }); err != nil {
		return nil, fmt.Errorf("warm-up selector patch: %w", err)
	}
	return settle(m.metricsURL, 2*time.Second, 20*time.Second)
}

// convergeSelector creates the selector patch and measures into r until
// it is Ready with N targets applied (fps follows it) and every
// Deployment carries its value; it returns the watch of the Deployments
// and the manager's request counts once settled. With -pprof-dir it
// starts CPU profiles of the manager and the apiserver in profile.
func (b *bench) convergeSelector(ctx context.Context, m *manager, fps *objWatch[patchState], profile *sync.WaitGroup, before requestCounts, r *selectorResult) (*objWatch[deployState], requestCounts, error) {
	pid := m.cmd.Process.Pid
	cpu0, cp0, err := b.cpuNow(pid)
	if err != nil {
		return nil, nil, err
	}
	b.profileConverge(profile, m, "fieldops-selector-converge-cpu.pb.gz", "apiserver-selector-converge-cpu.pb.gz")
	if r.before, err = readRSS(pid); err != nil {
		return nil, nil, err
	}
	peak := watchRSS(pid, rssInterval)
	ds, err := b.selectorApplied(ctx, fps, r)
	if err != nil {
		peak.stop()
		return nil, nil, err
	}
	after, err := settle(m.metricsURL, 2*time.Second, 30*time.Second)
	r.peak = peak.stop()
	if err != nil {
		return nil, nil, err
	}
	u, err := b.endOf(pid, cpu0, cp0)
	if err != nil {
		return nil, nil, err
	}
	r.mgrCPU, r.cpCPU, r.peakRSS, r.after = u.mgrCPU, u.cpCPU, u.peakRSS, u.after
	if r.heap, err = scrapeHeap(m.metricsURL); err != nil {
		return nil, nil, err
	}
	if m.pprofURL != "" {
		if err := save(http.DefaultClient, m.pprofURL+"heap", filepath.Join(b.o.pprofDir, "fieldops-selector-converged-heap.pb.gz")); err != nil {
			fmt.Fprintln(os.Stderr, "benchscale: heap profile:", err)
		}
	}
	r.requests = after.minus(before)
	var fp v1alpha1.FieldPatch
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: selectorNS, Name: selectorPatch}, &fp); err != nil {
		return nil, nil, err
	}
	if fp.Status.Targets != nil {
		r.applied = int(fp.Status.Targets.Applied)
	}
	return ds, after, nil
}

// selectorApplied creates the selector patch, waits until it reports N
// targets applied and Ready (r.wall), then starts watching the
// Deployments and checks that every one carries its value.
func (b *bench) selectorApplied(ctx context.Context, fps *objWatch[patchState], r *selectorResult) (*objWatch[deployState], error) {
	n := b.o.n
	start := time.Now()
	if err := b.c.Create(ctx, selectorFieldPatch(selectorNS)); err != nil {
		return nil, err
	}
	patched, err := fps.wait(ctx, func(s map[string]patchState) bool { return s[selectorPatch].ready && s[selectorPatch].applied == n })
	if err != nil {
		return nil, err
	}
	r.wall = patched.Sub(start)
	// The patch reports a target applied once its apply has returned, as
	// ApplyAll returns once its applies have: the Deployments are read
	// (and watched, for the drift below) from here on, so that the
	// bench's own decoding of N Deployment events is not in the
	// converge, as it is not in Flux's.
	ds := watchDeployments(b.c, selectorNS)
	go ds.run(ctx)
	if _, err := ds.wait(ctx, func(map[string]deployState) bool { return true }); err != nil {
		return nil, err
	}
	if c := carrying(ds.snapshot(), selectorValue); c != n {
		return nil, fmt.Errorf("the selector patch reports %d targets applied, but %d of the %d Deployments carry its value", n, c, n)
	}
	return ds, nil
}

// quietSelector counts the manager's requests during r.quietFor after the
// converge (counts after), when nothing changes, and returns the counts
// at its end (after when there is no quiet period).
func (b *bench) quietSelector(ctx context.Context, m *manager, after requestCounts, r *selectorResult) (requestCounts, error) {
	if r.quietFor <= 0 {
		return after, nil
	}
	before := after
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(r.quietFor):
	}
	after, err := scrapeRequests(m.metricsURL)
	if err != nil {
		return nil, err
	}
	r.quiet = after.minus(before)
	return after, nil
}

// driftSelector has another field manager set another value on the first
// driftTargets Deployments and measures until each is repaired: it
// carries the patch's value in a later generation than the drift's. It
// returns the manager's request counts once settled.
func (b *bench) driftSelector(ctx context.Context, m *manager, ds *objWatch[deployState], r *selectorResult) (requestCounts, error) {
	r.driftN = min(driftTargets, b.o.n)
	before, err := scrapeRequests(m.metricsURL)
	if err != nil {
		return nil, err
	}
	// The drift makes the next generation of each; the repair the one
	// after.
	converged := ds.snapshot()
	driftGen := make([]int64, r.driftN)
	for i := range driftGen {
		driftGen[i] = converged[fmt.Sprintf("bench-%d", i)].generation + 1
	}
	start := time.Now()
	if err := parallel(r.driftN, 8, func(i int) error {
		u := driftApply(selectorNS, fmt.Sprintf("bench-%d", i))
		return b.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(driftManager), client.ForceOwnership)
	}); err != nil {
		return nil, err
	}
	done, err := ds.wait(ctx, func(s map[string]deployState) bool { return repaired(s, driftGen) })
	if err != nil {
		return nil, err
	}
	r.driftWall = done.Sub(start)
	after, err := settle(m.metricsURL, 2*time.Second, 30*time.Second)
	if err != nil {
		return nil, err
	}
	r.driftRequests = after.minus(before)
	return after, nil
}

// repaired reports whether Deployment bench-i carries the patch's value
// in a generation after driftGen[i], for every i.
func repaired(s map[string]deployState, driftGen []int64) bool {
	for i, g := range driftGen {
		d := s[fmt.Sprintf("bench-%d", i)]
		if d.generation <= g || !d.has || d.value != selectorValue {
			return false
		}
	}
	return true
}

// handBackSelector deletes the selector patch and measures into
// r.handBack until it is gone (fps follows it), from the manager's
// request counts before, and how many Deployments keep the env var.
func (b *bench) handBackSelector(ctx context.Context, m *manager, fps *objWatch[patchState], ds *objWatch[deployState], before requestCounts, r *selectorResult) error {
	pid := m.cmd.Process.Pid
	cpu0, cp0, err := b.cpuNow(pid)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := b.c.Delete(ctx, selectorFieldPatch(selectorNS)); err != nil {
		return err
	}
	done, err := fps.wait(ctx, func(s map[string]patchState) bool { _, ok := s[selectorPatch]; return !ok })
	if err != nil {
		return err
	}
	h := &r.handBack
	h.wall = done.Sub(start)
	after, err := settle(m.metricsURL, 2*time.Second, 30*time.Second)
	if err != nil {
		return err
	}
	cpu1, cp1, err := b.cpuNow(pid)
	if err != nil {
		return err
	}
	h.requests, h.mgrCPU, h.cpCPU = after.minus(before), cpu1-cpu0, cp1-cp0
	if b.o.shards > 0 {
		// The sharded run's apiserver holds no Deployment of this one.
		defer func() {
			_ = b.deleteEach(ctx, b.o.n, func(i int) client.Object {
				return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: selectorNS, Name: fmt.Sprintf("bench-%d", i)}}
			})
		}()
	}
	// The env var a Deployment keeps after the hand-back: the patch's
	// value (the drifter's was taken back by the repair, so no other
	// manager holds it).
	h.left = carrying(ds.snapshot(), selectorValue)
	if h.left != 0 {
		// The watch may lag the hand-back's last write: read once.
		h.left, err = b.countApplied(ctx, selectorNS)
	}
	return err
}

// driftApply is the drifter's apply configuration of Deployment ns/name:
// the env var with another value.
func driftApply(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": container, "env": []any{map[string]any{"name": envName, "value": driftValue}}},
		}}}},
	}}
}

// ignoreNotFound is client.IgnoreNotFound for the deletes of a run whose
// objects an earlier run may have deleted.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// writes is a count's write requests: every method but GET (list,
// watch, read).
func writes(r requestCounts) float64 {
	w := r.total()
	return w - r["GET"]
}

// printSelector writes the selector run beside Flux's ApplyAll and the
// per-object run of the same invocation, the goals of the selector run
// and the row for docs/performance.md's table.
func (r *result) printSelector(w io.Writer) {
	s := r.selector
	if s == nil {
		return
	}
	n := r.o.n
	fx, fo := r.flux, r.fieldops
	fmt.Fprintf(w, "\nselector: one FieldPatch with spec.targetSelector (apps/v1 Deployment, %s=yes) over the N Deployments of %s, a new manager process\n\n", selectorLabel, selectorNS)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tFlux ssa ApplyAll\tfieldops, N FieldPatches\tfieldops, one selector patch\tselector/Flux")
	fmt.Fprintf(tw, "converge wall\t%s\t%s\t%s\t%s\n", secs(fx.wall), secs(fo.wall), secs(s.wall), ratio(s.wall.Seconds(), fx.wall.Seconds()))
	fmt.Fprintf(tw, "  per target\t%s\t%s\t%s\t\n", msPer(fx.wall, n), msPer(fo.wall, n), msPer(s.wall, n))
	fxTotal, fxBy := perObject(fx.requests, n)
	foTotal, foBy := perObject(fo.requests, n)
	sTotal, sBy := perObject(s.requests, n)
	fmt.Fprintf(tw, "requests per target\t%s\t%s\t%s\t%s\n", fxTotal, foTotal, sTotal, ratio(s.requests.total(), fx.requests.total()))
	fmt.Fprintf(tw, "  by method\t%s\t%s\t%s\t\n", fxBy, foBy, sBy)
	fmt.Fprintf(tw, "reconciles\t–\t%.0f\t%.0f\t\n", fo.requests[reconciles], s.requests[reconciles])
	fmt.Fprintf(tw, "manager CPU\t%.2f s\t%.2f s\t%.2f s\t%s\n", fx.mgrCPU, fo.mgrCPU, s.mgrCPU, ratio(s.mgrCPU, fx.mgrCPU))
	fmt.Fprintf(tw, "apiserver+etcd CPU\t%.2f s\t%.2f s\t%.2f s\t%s\n", fx.cpCPU, fo.cpCPU, s.cpCPU, ratio(s.cpCPU, fx.cpCPU))
	fmt.Fprintf(tw, "peak RSS (VmHWM)\t%.0f MiB\t%.0f MiB\t%.0f MiB\t%s\n", mib(fx.peakRSS), mib(fo.peakRSS), mib(s.peakRSS), ratio(float64(s.peakRSS), float64(fx.peakRSS)))
	fmt.Fprintf(tw, "  sampled peak, anon + file\t%s\t%s\t%s\t\n", split(fx.peak), split(fo.peak), split(s.peak))
	fmt.Fprintf(tw, "peak anonymous (RssAnon)\t%.1f MiB\t%.1f MiB\t%.1f MiB\t%s\n", mib(fx.peak.maxAnon), mib(fo.peak.maxAnon), mib(s.peak.maxAnon), ratio(float64(s.peak.maxAnon), float64(fx.peak.maxAnon)))
	fmt.Fprintf(tw, "capacity at a %d MiB limit, %d%% headroom\t–\t%s FieldPatches\t%s targets\t\n", limitMiB, headroomPercent, capacity(fo.before, fo.peak, n), capacity(s.before, s.peak, n))
	fmt.Fprintf(tw, "RSS before, anon + file\t%s\t%s\t%s\t\n", split(fx.before), split(fo.before), split(s.before))
	fmt.Fprintf(tw, "RSS after, anon + file\t%s\t%s\t%s\t\n", split(fx.after), split(fo.after), split(s.after))
	fmt.Fprintf(tw, "Go heap after, alloc / in use\t–\t%.1f / %.1f MiB\t%.1f / %.1f MiB\t\n", fo.heap.alloc/(1<<20), fo.heap.inuse/(1<<20), s.heap.alloc/(1<<20), s.heap.inuse/(1<<20))
	fmt.Fprintf(tw, "applied\t%d/%d\t%d/%d\t%d/%d\t\n", fx.applied, n, fo.applied, n, s.applied, n)
	_ = tw.Flush()
	qTotal, qBy := perObject(s.quiet, 1)
	dTotal, dBy := perObject(s.driftRequests, s.driftN)
	hTotal, hBy := perObject(s.handBack.requests, n)
	fmt.Fprintf(w, "\nquiet %s after the converge: %s requests (%s), %.0f reconciles\n", secs(s.quietFor), qTotal, qBy, s.quiet[reconciles])
	fmt.Fprintf(w, "drift of %d targets (field manager %q, force): repaired in %s, %s requests per drifted target (%s), %.2f writes per drifted target, %.0f reconciles\n",
		s.driftN, driftManager, secs(s.driftWall), dTotal, dBy, writes(s.driftRequests)/float64(max(s.driftN, 1)), s.driftRequests[reconciles])
	fmt.Fprintf(w, "hand-back (delete the FieldPatch): %s until gone, %s requests per target (%s), %.0f reconciles, manager CPU %.2f s, apiserver+etcd CPU %.2f s; %d/%d Deployments keep the env var\n",
		secs(s.handBack.wall), hTotal, hBy, s.handBack.requests[reconciles], s.handBack.mgrCPU, s.handBack.cpCPU, s.handBack.left, n)

	printSelectorGoals(w, s, fx, n)

	fmt.Fprintf(w, "\n| N | converge: Flux ssa ApplyAll / fieldops | requests per object | manager CPU | apiserver+etcd CPU | peak anonymous memory Flux / fieldops (file-backed beside) | hand-back of all N |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(w, "| %d, one selector patch | %.1f s / %.1f s (%s) | %s / %s | %s | %s | %.0f / %.0f MiB (file %.0f / %.0f MiB) | %s, %s req/object |\n",
		n, fx.wall.Seconds(), s.wall.Seconds(), ratio(s.wall.Seconds(), fx.wall.Seconds()), fxTotal, sTotal,
		ratio(s.mgrCPU, fx.mgrCPU), ratio(s.cpCPU, fx.cpCPU), mib(fx.peak.maxAnon), mib(s.peak.maxAnon), mib(fx.peak.file), mib(s.peak.file), secs(s.handBack.wall), hTotal)
}

// printSelectorGoals writes whether the selector run s met the goals of
// one patch over many targets, beside Flux's side fx, for N targets.
func printSelectorGoals(w io.Writer, s *selectorResult, fx sideResult, n int) {
	perTarget := func(c requestCounts) float64 { return c.total() / float64(n) }
	goal := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	fmt.Fprintf(w, "\ngoals (issue: one patch, many targets):\n")
	fmt.Fprintf(w, "  converge ≤ 0.5× Flux ApplyAll: %s (%s)\n", ratio(s.wall.Seconds(), fx.wall.Seconds()), goal(s.wall.Seconds() <= fx.wall.Seconds()/2))
	fmt.Fprintf(w, "  converge ≤ 1.2 requests per target: %.2f (%s)\n", perTarget(s.requests), goal(perTarget(s.requests) <= 1.2))
	fmt.Fprintf(w, "  hand-back ≤ 1.2 requests per target: %.2f (%s)\n", perTarget(s.handBack.requests), goal(perTarget(s.handBack.requests) <= 1.2))
	fmt.Fprintf(w, "  0 requests in the quiet period (%s; the goal says a minute): %.0f (%s)\n", secs(s.quietFor), s.quiet.total(), goal(s.quiet.total() == 0))
	// rest_client_requests_total does not tell a target's write from the
	// patch's status write: both are PATCH. As for the converge, the
	// amortized status writes and events are allowed up to 1.2 per target.
	fmt.Fprintf(w, "  drift repaired at one write each: %.2f writes per drifted target, status writes (%.0f reconciles) and events included (%s at ≤ 1.2)\n",
		writes(s.driftRequests)/float64(max(s.driftN, 1)), s.driftRequests[reconciles], goal(writes(s.driftRequests) <= float64(s.driftN)*1.2))
	// Memory goals are about anonymous memory (the heap, stacks): the
	// binary's file-backed pages are reported beside (a larger binary is
	// not a larger working set).
	fmt.Fprintf(w, "  capacity (targets of one selector patch within %d MiB, %d%% headroom): %s; peak anonymous %.1f MiB, file-backed %.1f MiB, VmHWM %.0f MiB\n",
		limitMiB, headroomPercent, capacity(s.before, s.peak, n), mib(s.peak.maxAnon), mib(s.peak.file), mib(s.peakRSS))
	// Both from /proc over the same converge: each target costs the
	// apiserver (and etcd) one apply.
	mgr, cp := 1000*s.mgrCPU/float64(n), 1000*s.cpCPU/float64(n)
	fmt.Fprintf(w, "  manager CPU per target ≤ apiserver+etcd CPU per apply: %.2f ms / %.2f ms = %s (%s)\n", mgr, cp, ratio(mgr, cp), goal(mgr <= cp))
}
