/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/cmd/manager/app"
	"github.com/fieldops/fieldops/controllers/fieldpatch"
)

// The FieldPatches of the sharding test, each on ConfigMap cm-<i>.
const (
	shardOwn      = 0 // labelled a: shard a's
	mainOwn       = 1 // unlabelled: the main instance's
	shardNobody   = 2 // labelled c: no manager runs shard c
	shardMoved    = 3 // the main instance's, relabelled to a once Ready
	shardContest  = 4 // the main instance's, on the field fp-4-a (shard a) takes
	shardObjects  = 5
	shardA        = "a"
	shardContestA = "fp-4-a"
)

// Two manager processes on one control plane, as two Deployments of a
// sharded install: shard a (--watch-label-selector=
// sharding.fieldops.dev/key=a) and the main instance
// ('!sharding.fieldops.dev/key'), each electing its leader on a Lease of
// its own. Each converges its own FieldPatches only; a FieldPatch of one
// shard taking a field a FieldPatch of the other holds is a contest that
// names it; relabelling a Ready FieldPatch from the main instance to
// shard a hands it over with its record (no write to the target), and
// its deletion then hands back exactly.
func TestShards(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, dir := failoverCluster(t, ctx)

	before := make([][]metav1.ManagedFieldsEntry, shardObjects)
	for i := range shardObjects {
		ac := corev1ac.ConfigMap(cmName(i), failoverNS).WithData(map[string]string{"key": "helm", "other": "helm"})
		if err := c.Apply(ctx, ac, client.FieldOwner(helmManager)); err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: cmName(i)}, cm); err != nil {
			t.Fatal(err)
		}
		before[i] = cm.ManagedFields
	}
	shardPatch := func(i int, shard string) *v1alpha1.FieldPatch {
		fp := fieldPatch(i)
		if shard != "" {
			fp.Labels = map[string]string{v1alpha1.ShardLabel: shard}
		}
		return fp
	}
	create := func(fp *v1alpha1.FieldPatch) {
		t.Helper()
		if err := c.Create(ctx, fp); err != nil {
			t.Fatal(err)
		}
	}

	// Shard a alone first. The patch of shard c and the unlabelled one are
	// created before shard a's own: its informer delivers them first, so
	// had its selector let them in, they would have been reconciled
	// (finalizer, status) by the time its own patch is Ready.
	create(shardPatch(shardNobody, "c"))
	create(shardPatch(mainOwn, ""))
	create(shardPatch(shardOwn, shardA))
	a := startManager(t, ctx, dir, "shard-a", "--watch-label-selector="+v1alpha1.ShardLabel+"="+shardA)
	a.waitLog(t, ctx, leaderStarted)
	waitPatch(t, ctx, c, fpName(shardOwn), "Ready", isReady)
	untouched(t, ctx, c, fpName(mainOwn), "shard a")
	untouched(t, ctx, c, fpName(shardNobody), "shard a")

	// The main instance, on its own Lease.
	mainInst := startManager(t, ctx, dir, "main", "--watch-label-selector="+v1alpha1.UnshardedSelector)
	mainInst.waitLog(t, ctx, leaderStarted)
	leases := map[string]string{}
	for name, sel := range map[string]string{"main": v1alpha1.UnshardedSelector, "shard a": v1alpha1.ShardLabel + "=" + shardA} {
		s, err := labels.Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		var lease coordinationv1.Lease
		if err := c.Get(ctx, client.ObjectKey{Namespace: leaseNS, Name: app.LeaderElectionID(s)}, &lease); err != nil {
			t.Fatalf("the Lease of %s: %v", name, err)
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			t.Fatalf("the Lease %s of %s has no holder", lease.Name, name)
		}
		leases[lease.Name] = *lease.Spec.HolderIdentity
	}
	if len(leases) != 2 || leases[leaseName] == "" {
		t.Fatalf("Leases %v: want fieldops.dev (the main instance's) and one of shard a's", leases)
	}
	waitPatch(t, ctx, c, fpName(mainOwn), "Ready", isReady)
	untouched(t, ctx, c, fpName(shardNobody), "the main instance")
	for _, i := range []int{shardOwn, mainOwn} {
		fp, cm := getPatch(t, ctx, c, fpName(i)), &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: cmName(i)}, cm); err != nil {
			t.Fatal(err)
		}
		checkRecord(t, fp, cm)
	}

	// A contest across shards: shard a's patch takes data.key of cm-4 from
	// the main instance's, which finds it in the target's managed fields
	// and names it.
	create(shardPatch(shardContest, ""))
	main4 := waitPatch(t, ctx, c, fpName(shardContest), "Ready", isReady)
	rival := fieldPatch(shardContest)
	rival.Name, rival.Labels = shardContestA, map[string]string{v1alpha1.ShardLabel: shardA}
	rival.Spec.Patch.Raw = []byte(`{"data":{"key":"shard-a"}}`)
	create(rival)
	rival = waitPatch(t, ctx, c, shardContestA, "Ready", isReady)
	contested := waitPatch(t, ctx, c, fpName(shardContest), "Contested", func(fp *v1alpha1.FieldPatch) bool {
		r := meta.FindStatusCondition(fp.Status.Conditions, "Ready")
		return r != nil && r.Reason == fieldpatch.ReasonContested
	})
	if msg := meta.FindStatusCondition(contested.Status.Conditions, "Ready").Message; !strings.Contains(msg, "FieldPatch "+failoverNS+"/"+shardContestA) {
		t.Errorf("the Contested message %q does not name FieldPatch %s/%s", msg, failoverNS, shardContestA)
	}
	if contested.Status.ContestedBy != rival.Status.FieldManager {
		t.Errorf("status.contestedBy %q, want shard a's field manager %q", contested.Status.ContestedBy, rival.Status.FieldManager)
	}
	// Shard a's record names the main instance's patch, and helm through
	// it (the chain a hand-back follows).
	direct, chained := false, false
	for _, po := range rival.Status.PreviousOwners {
		direct = direct || (po.Manager == main4.Status.FieldManager && po.Via == "")
		chained = chained || (po.Manager == helmManager && po.Via == main4.Status.FieldManager)
	}
	if !direct || !chained {
		t.Errorf("shard a's patch records previous owners %+v, want the main instance's patch %q, and helm through it", rival.Status.PreviousOwners, main4.Status.FieldManager)
	}

	// Relabel a Ready patch of the main instance to shard a.
	create(shardPatch(shardMoved, ""))
	moved := waitPatch(t, ctx, c, fpName(shardMoved), "Ready", isReady)
	cmw := newWriteCounter(t, ctx, c, cmName(shardMoved))
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: cmName(shardMoved)}, cm); err != nil {
		t.Fatal(err)
	}
	applied := cm.ResourceVersion
	relabel := client.MergeFrom(moved.DeepCopy())
	moved.Labels = map[string]string{v1alpha1.ShardLabel: shardA}
	if err := c.Patch(ctx, moved, relabel); err != nil {
		t.Fatal(err)
	}
	// Then a change of the spec that changes nothing in the target: only
	// the manager that holds the patch now moves status.observedGeneration.
	// The main instance saw the relabel before this change (one watch
	// stream, in order) and has let the patch go.
	respec := client.MergeFrom(moved.DeepCopy())
	moved.Spec.ContestTimeout = &metav1.Duration{Duration: 7 * time.Minute}
	if err := c.Patch(ctx, moved, respec); err != nil {
		t.Fatal(err)
	}
	gen := moved.Generation
	taken := waitPatch(t, ctx, c, fpName(shardMoved), "observed by shard a", func(fp *v1alpha1.FieldPatch) bool {
		return fp.Status.ObservedGeneration == gen && isReady(fp)
	})
	if !reflect.DeepEqual(taken.Status.PreviousOwners, moved.Status.PreviousOwners) || taken.Status.FieldManager != moved.Status.FieldManager {
		t.Errorf("after the move to shard a: field manager %q, previous owners %+v; want them as before, %q and %+v",
			taken.Status.FieldManager, taken.Status.PreviousOwners, moved.Status.FieldManager, moved.Status.PreviousOwners)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: cmName(shardMoved)}, cm); err != nil {
		t.Fatal(err)
	}
	if cm.ResourceVersion != applied {
		t.Errorf("%s was written after the move (resourceVersion %s, %s before): the new shard applied again", cm.Name, cm.ResourceVersion, applied)
	}
	checkRecord(t, taken, cm)

	// Deleting it: shard a hands data.key back to helm, in one write.
	if err := c.Delete(ctx, taken); err != nil {
		t.Fatal(err)
	}
	waitPatch(t, ctx, c, fpName(shardMoved), "deleted", nil)
	if err := c.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: cmName(shardMoved)}, cm); err != nil {
		t.Fatal(err)
	}
	if got, want := entries(cm.ManagedFields), entries(before[shardMoved]); !reflect.DeepEqual(got, want) {
		t.Errorf("%s after its FieldPatch was deleted by shard a: managed fields\n%s\nwant them as before the patch\n%s", cm.Name, got, want)
	}
	if got := cmw.writesUpTo(t, ctx, cm.ResourceVersion); got != 1 {
		t.Errorf("%s written %d times from the move to the end of the hand-back, want 1 (the hand-back)", cm.Name, got)
	}
	untouched(t, ctx, c, fpName(shardNobody), "either manager")
}

func isReady(fp *v1alpha1.FieldPatch) bool {
	r := meta.FindStatusCondition(fp.Status.Conditions, "Ready")
	return r != nil && r.Status == metav1.ConditionTrue && fp.Status.ObservedGeneration == fp.Generation
}

func getPatch(t *testing.T, ctx context.Context, c client.Client, name string) *v1alpha1.FieldPatch {
	t.Helper()
	fp := &v1alpha1.FieldPatch{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: name}, fp); err != nil {
		t.Fatal(err)
	}
	return fp
}

// untouched fails unless FieldPatch name has no finalizer and no status:
// no manager reconciled it.
func untouched(t *testing.T, ctx context.Context, c client.Client, name, by string) {
	t.Helper()
	fp := getPatch(t, ctx, c, name)
	if len(fp.Finalizers) > 0 || !reflect.DeepEqual(fp.Status, v1alpha1.FieldPatchStatus{}) {
		t.Errorf("%s (labels %v) was reconciled by %s: finalizers %v, status %+v", name, fp.Labels, by, fp.Finalizers, fp.Status)
	}
}

// waitPatch lists, then watches from that list on, FieldPatch name until
// ok holds of it (what says what is awaited) and returns it; with a nil
// ok, until it is gone.
func waitPatch(t *testing.T, ctx context.Context, c client.WithWatch, name, what string, ok func(*v1alpha1.FieldPatch) bool) *v1alpha1.FieldPatch {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	sel := client.MatchingFields{"metadata.name": name}
	var list v1alpha1.FieldPatchList
	if err := c.List(ctx, &list, client.InNamespace(failoverNS), sel); err != nil {
		t.Fatal(err)
	}
	switch {
	case len(list.Items) == 0 && ok == nil:
		return nil
	case len(list.Items) == 1 && ok != nil && ok(&list.Items[0]):
		return &list.Items[0]
	}
	w, err := c.Watch(ctx, &v1alpha1.FieldPatchList{}, client.InNamespace(failoverNS), sel,
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var last *v1alpha1.FieldPatch
	for ev := range w.ResultChan() {
		fp, isPatch := ev.Object.(*v1alpha1.FieldPatch)
		if !isPatch {
			t.Fatalf("FieldPatch %s watch: %v", name, ev.Object)
		}
		last = fp
		if ok == nil && ev.Type == watch.Deleted {
			return fp
		}
		if ok != nil && ev.Type != watch.Deleted && ok(fp) {
			return fp
		}
	}
	if last != nil {
		t.Fatalf("FieldPatch %s not %s (%v): status %+v", name, what, ctx.Err(), last.Status)
	}
	t.Fatalf("FieldPatch %s not %s: %v", name, what, ctx.Err())
	return nil
}

// writeCounter counts the writes of one ConfigMap, from a watch.
type writeCounter struct {
	mu      sync.Mutex
	changed *sync.Cond
	rvs     []string
	ended   bool
}

func newWriteCounter(t *testing.T, ctx context.Context, c client.WithWatch, name string) *writeCounter {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: name}, cm); err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(failoverNS),
		client.MatchingFields{"metadata.name": name}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: cm.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	wc := &writeCounter{}
	wc.changed = sync.NewCond(&wc.mu)
	t.Cleanup(w.Stop)
	go func() {
		defer func() {
			wc.mu.Lock()
			wc.ended = true
			wc.changed.Broadcast()
			wc.mu.Unlock()
		}()
		for ev := range w.ResultChan() {
			if o, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type == watch.Modified {
				wc.mu.Lock()
				wc.rvs = append(wc.rvs, o.ResourceVersion)
				wc.changed.Broadcast()
				wc.mu.Unlock()
			}
		}
	}()
	return wc
}

// writesUpTo waits until the watch has seen the write that left
// resourceVersion rv and returns the number of writes seen until then.
func (wc *writeCounter) writesUpTo(t *testing.T, ctx context.Context, rv string) int {
	t.Helper()
	stop := context.AfterFunc(ctx, func() {
		wc.mu.Lock()
		wc.ended = true
		wc.changed.Broadcast()
		wc.mu.Unlock()
	})
	defer stop()
	wc.mu.Lock()
	defer wc.mu.Unlock()
	for {
		for i, seen := range wc.rvs {
			if seen == rv {
				return i + 1
			}
		}
		if wc.ended {
			t.Fatalf("the ConfigMap watch ended before the write of resourceVersion %s (seen: %v)", rv, wc.rvs)
		}
		wc.changed.Wait()
	}
}

// A --watch-label-selector that does not parse stops the manager before it
// connects anywhere, naming the flag.
func TestWatchLabelSelectorFlagRefused(t *testing.T) {
	code, stderr := runManagerBinary(t, "--watch-label-selector=sharding.fieldops.dev/key=a=b")
	if code != 1 || !strings.Contains(stderr, `fieldops: --watch-label-selector "sharding.fieldops.dev/key=a=b" is not a label selector`) {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and the flag named", code, stderr)
	}
}
