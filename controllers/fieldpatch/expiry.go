/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
)

// ExpiryWarning is how long before a patch expires the Expiring event is
// recorded (at once when the patch lives less than that).
const ExpiryWarning = 5 * time.Minute

// Events of an expiring patch.
const (
	ReasonExpiring = "Expiring"
	ReasonExpired  = "Expired"
)

// expiresAt is when obj deletes itself: spec.expiresAt, or its creation
// plus spec.expiresAfter; nil when it does not expire.
func expiresAt(obj v1alpha1.Patcher) *metav1.Time {
	spec := obj.PatchSpec()
	switch {
	case spec.ExpiresAt != nil:
		return spec.ExpiresAt.DeepCopy()
	case spec.ExpiresAfter != nil:
		return &metav1.Time{Time: obj.GetCreationTimestamp().Add(spec.ExpiresAfter.Duration)}
	}
	return nil
}

// phaseExpiry shows when the patch expires (status.expiresAt) and ends it
// when that time has come: the patch is deleted, and its deletionPolicy
// runs as for a deletion by hand (reconcileDelete). Before that, the
// Expiring event is recorded ExpiryWarning ahead, and a wake-up is armed
// for the next of the two times (expiryTimers). The time is computed from
// the stored spec and creation time on every reconcile, so it holds
// across restarts and leader changes: the new leader's first reconcile of
// every patch arms it again, or ends a patch whose time has passed.
func (r *Reconciler) phaseExpiry(ctx context.Context, p *pass) (skeleton.Step, error) {
	st, at := p.obj.PatchStatus(), expiresAt(p.obj)
	st.ExpiresAt = at
	key := client.ObjectKeyFromObject(p.obj)
	if at == nil {
		r.timers.stop(key)
		return skeleton.Next(), nil
	}
	left := time.Until(at.Time)
	if left <= 0 {
		return r.expire(ctx, p.obj, at)
	}
	warnIn := left - ExpiryWarning
	if warnIn <= 0 {
		if r.timers.warn(key, p.obj.GetUID(), at.Time) {
			r.event(p.obj, corev1.EventTypeNormal, ReasonExpiring, "the patch expires at %s (in %s); then its deletionPolicy %s runs", at.UTC().Format(time.RFC3339), left.Round(time.Second), policyOrDefault(p.obj.PatchSpec().DeletionPolicy))
		}
		r.timers.arm(ctx, key, left, r.wake)
	} else {
		r.timers.arm(ctx, key, warnIn, r.wake)
	}
	return skeleton.Next(), nil
}

// expire deletes obj (its finalizer keeps it until the deletion policy has
// run), guarded by its UID: a patch recreated under the same name is
// another patch.
func (r *Reconciler) expire(ctx context.Context, obj v1alpha1.Patcher, at *metav1.Time) (skeleton.Step, error) {
	uid := obj.GetUID()
	r.event(obj, corev1.EventTypeNormal, ReasonExpired, "the patch expired at %s; deleting it: its deletionPolicy %s runs", at.UTC().Format(time.RFC3339), policyOrDefault(obj.PatchSpec().DeletionPolicy))
	if err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return skeleton.Stop(ctrl.Result{}), fmt.Errorf("delete the expired patch: %w", err)
	}
	r.timers.stop(client.ObjectKeyFromObject(obj))
	return skeleton.Finish(ctrl.Result{}), nil
}

// expiryTimers wake the reconcile of a patch when its expiry (or the
// warning before it) is due, whatever the reconcile's own result was (a
// terminal error asks for no requeue). They are wake-ups only: the time
// itself is stored in the patch.
type expiryTimers struct {
	mu     sync.Mutex
	timers map[types.NamespacedName]*time.Timer
	// warned are the patches whose Expiring event was recorded, with the
	// expiry it was for.
	warned map[types.NamespacedName]warning
}

type warning struct {
	uid types.UID
	at  time.Time
}

// arm replaces key's wake-up with one after d, which sends key's event to
// wake (sendWake) unless ctx is done first. ctx is the reconcile's, which
// controller-runtime derives from the controller's own context (this
// controller sets no ReconciliationTimeout): it is done when the manager
// stops, and with it the source that reads wake, so a wake-up due after
// that returns instead of blocking its goroutine for ever.
func (t *expiryTimers) arm(ctx context.Context, key types.NamespacedName, d time.Duration, wake chan<- event.GenericEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timers == nil {
		t.timers = map[types.NamespacedName]*time.Timer{}
	}
	if old := t.timers[key]; old != nil {
		old.Stop()
	}
	t.timers[key] = time.AfterFunc(d, func() { sendWake(ctx, wake, key) })
}

// sendWake sends the event that reconciles key (a FieldPatch named key:
// the handler enqueues by namespace and name only, so it serves
// ClusterFieldPatches too) to wake, blocking until it is read or ctx is
// done; it reports whether it was sent.
func sendWake(ctx context.Context, wake chan<- event.GenericEvent, key types.NamespacedName) bool {
	obj := &v1alpha1.FieldPatch{}
	obj.SetNamespace(key.Namespace)
	obj.SetName(key.Name)
	select {
	case wake <- event.GenericEvent{Object: obj}:
		return true
	case <-ctx.Done():
		return false
	}
}

// warn reports whether the Expiring event for (uid, at) is still to be
// recorded, and notes it as recorded.
func (t *expiryTimers) warn(key types.NamespacedName, uid types.UID, at time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.warned == nil {
		t.warned = map[types.NamespacedName]warning{}
	}
	w := warning{uid: uid, at: at}
	if t.warned[key] == w {
		return false
	}
	t.warned[key] = w
	return true
}

// stop forgets key's wake-up and warning.
func (t *expiryTimers) stop(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.timers[key]; old != nil {
		old.Stop()
	}
	delete(t.timers, key)
	delete(t.warned, key)
}
