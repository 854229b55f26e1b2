/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/test/testkit"
)

// An expiring Restore patch outlives its manager: the leader that applied
// it and recorded its time (status.expiresAt) is killed (SIGKILL) before
// that time, the time passes while no manager runs (the test moves
// spec.expiresAt into the past, as a user's edit would), and the manager
// that takes the Lease over ends the patch as soon as it leads: the time
// is computed from the stored spec, not held in the dead leader's memory
// nor read from its stale status. The patch is gone, the ConfigMap holds
// its previous value and managed fields, and the Expired event comes
// within 5 s of the takeover.
//
// Every step waits on a signal (the leader's log, the patch's status, the
// process's exit, the Lease, the event), never on the machine's speed:
// the time is moved only once the leader is dead, and the next manager
// starts only after that.
func TestExpiryAcrossLeaderChange(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, dir := failoverCluster(t, ctx)
	if err := c.Apply(ctx, corev1ac.ConfigMap("pinned", failoverNS).WithData(map[string]string{"key": "helm", "other": "helm"}), client.FieldOwner(helmManager)); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: "pinned"}, cm); err != nil {
		t.Fatal(err)
	}
	before := entries(cm.ManagedFields)

	a := startManager(t, ctx, dir, "a")
	a.waitLog(t, ctx, leaderStarted)
	// Far enough ahead that no Expiring warning is due either
	// (fieldpatch.ExpiryWarning): the leader only records the time.
	ahead := metav1.NewTime(time.Now().Add(time.Hour).Truncate(time.Second))
	fp := &v1alpha1.FieldPatch{
		ObjectMeta: metav1.ObjectMeta{Name: "expiring", Namespace: failoverNS},
		Spec: v1alpha1.FieldPatchSpec{
			Target:         v1alpha1.TargetReference{APIVersion: "v1", Kind: "ConfigMap", Name: "pinned"},
			DeletionPolicy: v1alpha1.DeletionPolicyRestore,
			ExpiresAt:      &ahead,
		},
	}
	fp.Spec.Patch.Raw = []byte(`{"data":{"key":"pinned"}}`)
	if err := c.Create(ctx, fp); err != nil {
		t.Fatal(err)
	}
	testkit.Within(t, time.Minute, "the leader applied the patch and recorded its time", func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm)
		if err != nil || cm.Data["key"] != "pinned" {
			return false, fmt.Sprint(cm.Data, err)
		}
		err = c.Get(ctx, client.ObjectKeyFromObject(fp), fp)
		return err == nil && fp.Status.ExpiresAt.Equal(&ahead), fmt.Sprint(fp.Status.ExpiresAt, err)
	})
	killed := a.kill(t)

	// No manager runs: the time passes (spec.expiresAt is moved before
	// the kill), and only then does the next manager start.
	if err := c.Get(ctx, client.ObjectKeyFromObject(fp), fp); err != nil {
		t.Fatal(err)
	}
	fp.Spec.ExpiresAt = &metav1.Time{Time: killed.Add(-time.Second)}
	if err := c.Update(ctx, fp); err != nil {
		t.Fatal(err)
	}
	b := startManager(t, ctx, dir, "b")
	b.waitLog(t, ctx, leaderStarted)

	testkit.Within(t, time.Minute, "the new leader ended the expired patch", func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(fp), &v1alpha1.FieldPatch{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	if got, want := cm.Data, map[string]string{"key": "helm", "other": "helm"}; !reflect.DeepEqual(got, want) {
		t.Errorf("data after the expiry %v, want %v (restored)", got, want)
	}
	if got := entries(cm.ManagedFields); !reflect.DeepEqual(got, before) {
		t.Errorf("managed fields after the expiry %v, want %v as before the patch", got, before)
	}
	var lease coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: leaseNS, Name: leaseName}, &lease); err != nil {
		t.Fatal(err)
	}
	expired := waitExpired(t, ctx, c, "expiring")
	if late := expired.EventTime.Sub(lease.Spec.AcquireTime.Time); late > 5*time.Second {
		t.Errorf("the Expired event came %s after the new leader took the Lease, want within 5 s", late)
	}
}

// Expiry outlives a restart of the only manager (SIGTERM, then a new
// process): a patch whose expiry passed while no manager ran ends as soon
// as the new one leads, and a patch whose expiry is still ahead ends on
// time, from the time stored in the patch (the stopped manager's timer
// is gone). Each ConfigMap then holds its previous value and managed
// fields, and each Expired event comes within 5 s of the later of the
// patch's time and the new manager's start.
//
// Both times are set while no manager runs. The time ahead is a few times
// what the first manager took, on this machine and under this load, from
// its start to its writes; that the new manager did reconcile the patch
// before its time is checked on a signal, its Expiring event (the warning
// state is in memory: a new process records it again), so a run in which
// the time passed first fails instead of testing the other case twice.
func TestExpiryAcrossRestart(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, dir := failoverCluster(t, ctx)
	names := []string{"passed", "ahead"}
	before := map[string][]entry{}
	for _, n := range names {
		if err := c.Apply(ctx, corev1ac.ConfigMap(n, failoverNS).WithData(map[string]string{"key": "helm", "other": "helm"}), client.FieldOwner(helmManager)); err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: n}, cm); err != nil {
			t.Fatal(err)
		}
		before[n] = entries(cm.ManagedFields)
	}

	begun := time.Now()
	first := startManager(t, ctx, dir, "first")
	first.waitLog(t, ctx, leaderStarted)
	for _, n := range names {
		createRestorePatch(t, ctx, c, n)
	}
	for _, n := range names {
		testkit.Within(t, time.Minute, n+": the patch applied", func() (bool, string) {
			cm := &corev1.ConfigMap{}
			err := c.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: n}, cm)
			return err == nil && cm.Data["key"] == "pinned", fmt.Sprint(cm.Data, err)
		})
	}
	startup := time.Since(begun)
	first.terminate(t)
	stopped := time.Now()

	// While no manager runs, "passed" gets a time already past and
	// "ahead" one the next manager reaches first.
	setExpiry(t, ctx, c, "passed", stopped.Add(-time.Second))
	due := setExpiry(t, ctx, c, "ahead", time.Now().Add(3*startup+2*time.Second))
	t.Logf("the first manager's start to its writes: %s; the patch ahead expires %s after the stop", startup.Round(time.Millisecond), due.Sub(stopped).Round(time.Millisecond))

	second := startManager(t, ctx, dir, "second")
	second.waitLog(t, ctx, leaderStarted)
	var lease coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: leaseNS, Name: leaseName}, &lease); err != nil {
		t.Fatal(err)
	}
	leads := lease.Spec.AcquireTime.Time
	for _, n := range names {
		testkit.Within(t, time.Minute, n+": the new manager ended the patch", func() (bool, string) {
			err := c.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: n}, &v1alpha1.FieldPatch{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: n}, cm); err != nil {
			t.Fatal(err)
		}
		if got, want := cm.Data, map[string]string{"key": "helm", "other": "helm"}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: data after the expiry %v, want %v (restored)", n, got, want)
		}
		if got := entries(cm.ManagedFields); !reflect.DeepEqual(got, before[n]) {
			t.Errorf("%s: managed fields after the expiry %v, want %v as before the patch", n, got, before[n])
		}
	}
	if !warnedBetween(t, ctx, c, "ahead", stopped, due) {
		t.Errorf("ahead: no Expiring event of the new manager before the patch's time %s: it first reconciled the patch after that time (its start took more than 3 times the first manager's %s), so the case of a time still ahead was not tested", due, startup)
	}
	for n, at := range map[string]time.Time{"passed": leads, "ahead": due} {
		if at.Before(leads) {
			at = leads
		}
		expired := waitExpired(t, ctx, c, n)
		if late := expired.EventTime.Sub(at); late > 5*time.Second {
			t.Errorf("%s: the Expired event came %s after %s, want within 5 s", n, late, at)
		}
	}
}

// createRestorePatch creates the FieldPatch name, which takes data.key of
// the ConfigMap name with deletion policy Restore and no expiry.
func createRestorePatch(t *testing.T, ctx context.Context, c client.Client, name string) {
	t.Helper()
	fp := &v1alpha1.FieldPatch{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: failoverNS},
		Spec: v1alpha1.FieldPatchSpec{
			Target:         v1alpha1.TargetReference{APIVersion: "v1", Kind: "ConfigMap", Name: name},
			DeletionPolicy: v1alpha1.DeletionPolicyRestore,
		},
	}
	fp.Spec.Patch.Raw = []byte(`{"data":{"key":"pinned"}}`)
	if err := c.Create(ctx, fp); err != nil {
		t.Fatal(err)
	}
}

// setExpiry sets spec.expiresAt of the FieldPatch name to at and returns
// the time stored (to the second).
func setExpiry(t *testing.T, ctx context.Context, c client.Client, name string, at time.Time) time.Time {
	t.Helper()
	fp := &v1alpha1.FieldPatch{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: name}, fp); err != nil {
		t.Fatal(err)
	}
	fp.Spec.ExpiresAt = &metav1.Time{Time: at}
	if err := c.Update(ctx, fp); err != nil {
		t.Fatal(err)
	}
	return fp.Spec.ExpiresAt.Time
}

// warnedBetween reports whether an Expiring event about the FieldPatch
// name was recorded after from and before to.
func warnedBetween(t *testing.T, ctx context.Context, c client.Client, name string, from, to time.Time) bool {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(ctx, &list, client.InNamespace(failoverNS)); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == "Expiring" && e.EventTime.Time.After(from) && e.EventTime.Time.Before(to) {
			return true
		}
	}
	return false
}

// waitExpired waits for the Expired event of the FieldPatch name in the
// failover namespace and returns it. The manager's event broadcaster
// writes it, possibly after the patch is gone.
func waitExpired(t *testing.T, ctx context.Context, c client.Client, name string) eventsv1.Event {
	t.Helper()
	var expired eventsv1.Event
	testkit.Within(t, time.Minute, name+": the Expired event", func() (bool, string) {
		var list eventsv1.EventList
		if err := c.List(ctx, &list, client.InNamespace(failoverNS)); err != nil {
			return false, err.Error()
		}
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == "Expired" {
				expired = e
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events, none Expired", len(list.Items))
	})
	return expired
}
