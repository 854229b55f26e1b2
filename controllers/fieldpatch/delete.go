/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/notes"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// reconcileDelete gives the target back as deletionPolicy says, then
// removes the finalizer; the target itself is never deleted:
//
//   - HandBack (default): each field the patch took goes back to the entry
//     of its previous owner (values stay); the fields the patch added are
//     removed (Relinquish).
//   - Relinquish: the fields the patch took stay, unowned (Release); the
//     fields it added are removed.
//   - Orphan: every field the patch wrote stays, unowned.
//
// The record of previous owners first follows the target (an owner that
// removed or let go of a field gets nothing back). Every step is guarded
// by the target's UID and resourceVersion and is idempotent, so an
// interrupted deletion finishes on retry without handing anything back
// twice; Relinquish checks its own result. A patch that never wrote (no
// target UID recorded, and no entry of its field manager on the target)
// or whose target is gone or invalid is let go at once.
func (r *Reconciler) reconcileDelete(ctx context.Context, obj v1alpha1.Patcher) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return ctrl.Result{}, nil
	}
	st := obj.PatchStatus()
	manager := st.FieldManager
	if manager == "" {
		manager = r.managerName(obj)
	}
	if err := r.giveBackOnDelete(ctx, obj, manager); err != nil {
		// Forbidden included: the finalizer stays until the account may
		// give the fields back; never a partial hand-back.
		return r.deleteFailed(obj, err)
	}
	r.contests.Forget(contestKey(obj, obj.PatchStatus().TargetUID))
	before := obj.DeepCopyObject().(client.Object)
	controllerutil.RemoveFinalizer(obj, Finalizer)
	if err := r.Client.Patch(ctx, obj, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		r.writes().Unsure(obj, err)
		return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	// A copy still holding the finalizer is older than this write: a
	// reconcile of it (our hand-back's echo on the target) waits for the
	// cache instead of giving back and removing the finalizer again.
	r.writes().WrittenAt(obj, before.GetResourceVersion(), obj.GetResourceVersion())
	return ctrl.Result{}, nil
}

// giveBackOnDelete gives the target back if the patch wrote to it (see
// writtenTo); a target that is gone or invalid is let go.
func (r *Reconciler) giveBackOnDelete(ctx context.Context, obj v1alpha1.Patcher, manager string) error {
	ref, err := r.resolveTarget(obj)
	if err != nil {
		return nil
	}
	applier, account, err := r.applierFor(obj)
	if err != nil {
		return err
	}
	uid, err := r.writtenTo(ctx, applier, obj.PatchStatus(), ref, manager)
	if err != nil || uid == "" {
		return tenant.Explain(account, err)
	}
	ref.SetUID(uid)
	if err := r.giveBack(ctx, applier, obj, ref, manager); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsBadRequest(err) {
		return tenant.Explain(account, err)
	}
	return nil
}

// writtenTo is the UID of the target the patch wrote to: the recorded one,
// or, with no record, the target's when it holds an Apply entry of
// manager (read from the cache, then fresh): the status write that
// records the target after a first apply can be lost (a crash between the
// two writes, or a deletion racing it), and the fields must not be left
// behind with an entry no one will ever remove. "" when the patch never
// wrote.
func (r *Reconciler) writtenTo(ctx context.Context, applier *ownershipcore.Applier, st *v1alpha1.FieldPatchStatus, ref *unstructured.Unstructured, manager string) (types.UID, error) {
	if st.TargetUID != "" {
		return types.UID(st.TargetUID), nil
	}
	for _, get := range []func(context.Context, *unstructured.Unstructured) (*unstructured.Unstructured, error){applier.Get, applier.GetFresh} {
		live, err := get(ctx, ref)
		if apierrors.IsForbidden(err) {
			// An account that may not read its target never applied to
			// it (every apply reads the target first): nothing to give.
			return "", nil
		}
		if err != nil || live == nil {
			return "", client.IgnoreNotFound(err)
		}
		if ownershipcore.HasManager(live, manager) {
			return live.GetUID(), nil
		}
	}
	return "", nil
}

// giveBack runs the deletion policy on the target ref (which carries the
// recorded UID), in as few requests as it can (issue 11): the target is
// read from the target cache (a copy without our entry is read again
// fresh); the hand-back or release patch is guarded by that copy's UID and
// resourceVersion, and so is the relinquish's empty apply, which starts
// from the patch's answer, or from that copy when nothing was patched (a
// stale copy costs a refused write and a fresh read); it checks its
// result on the empty apply's answer. One event reports what happened.
func (r *Reconciler) giveBack(ctx context.Context, applier *ownershipcore.Applier, obj v1alpha1.Patcher, ref *unstructured.Unstructured, manager string) error {
	st, policy := obj.PatchStatus(), obj.PatchSpec().DeletionPolicy
	live, err := applier.Get(ctx, ref)
	if err != nil {
		return err
	}
	if live == nil || live.GetUID() != ref.GetUID() || !ownershipcore.HasManager(live, manager) {
		// Gone, replaced, or no entry of ours: make sure on a fresh read
		// (the cache may lag behind our last write).
		if live, err = applier.GetFresh(ctx, ref); err != nil || live == nil {
			return err
		}
		if live.GetUID() != ref.GetUID() {
			return nil // replaced: the object we wrote to is gone
		}
	}
	owners, present, err := r.observeTarget(live)
	if err != nil {
		return err
	}
	ours := owners.Applied(manager)
	if ours == nil {
		return nil
	}
	ledger, err := patchintent.ReadLedger(st, st.TargetUID)
	if err != nil {
		return err
	}
	ledger.Follow(owners, present, manager)
	kind := ref.GetKind()
	var done []string
	reason := ReasonRelinquished
	step := func(moved *fieldset.Set, metricStep, format string) {
		if n := len(patchintent.Leaves(moved)); n > 0 {
			metrics.HandBacksTotal.WithLabelValues(r.controllerName(), kind, metricStep).Inc()
			done = append(done, fmt.Sprintf(format, n, kind, objectName(ref)))
		}
	}
	if policy != v1alpha1.DeletionPolicyOrphan {
		// Fields taken and fields added go in one request when they can
		// (issue 11); otherwise in two steps below.
		gb, err := applier.GiveBackFrom(ctx, ref, live, manager, r.givePlan(policy, ledger, manager))
		switch {
		case err == nil:
			if policy == v1alpha1.DeletionPolicyRelinquish {
				step(gb.Moved, metrics.StepRelinquish, "left %d fields the patch took on %s %s in place without an owner")
			} else {
				reason = ReasonHandedBack
				step(gb.Moved, metrics.StepHandBack, "handed %d fields of %s %s back to their previous owners")
			}
			if n := len(patchintent.Leaves(gb.Removed)); n > 0 {
				metrics.HandBacksTotal.WithLabelValues(r.controllerName(), kind, metrics.StepRelinquish).Inc()
				done = append(done, fmt.Sprintf("relinquished the fields of field manager %q on %s %s: the %d fields the patch added were removed", manager, kind, objectName(ref), n))
			}
			r.reportGiveBack(obj, reason, done)
			return nil
		case !errors.Is(err, ownershipcore.ErrNoOneStep):
			return err
		default:
			log.FromContext(ctx).V(1).Info("giving back in two steps", "target", objectName(ref), "why", ownershipcore.SafeMessage(err))
		}
	}
	var after *unstructured.Unstructured
	switch policy {
	case v1alpha1.DeletionPolicyOrphan:
		released, _, err := applier.ReleaseFrom(ctx, ref, live, manager, ours.Fields)
		if err != nil {
			return err
		}
		step(released, metrics.StepRelinquish, "left %d fields of %s %s in place without an owner (Orphan)")
		r.reportGiveBack(obj, reason, done)
		return nil
	case v1alpha1.DeletionPolicyRelinquish:
		var released *fieldset.Set
		if released, after, err = applier.ReleaseFrom(ctx, ref, live, manager, ledger.Taken()); err != nil {
			return err
		}
		step(released, metrics.StepRelinquish, "left %d fields the patch took on %s %s in place without an owner")
	default:
		var moved *fieldset.Set
		if moved, after, err = applier.HandBackFrom(ctx, ref, live, manager, ledger.Previous(nil)); err != nil {
			return err
		}
		if !moved.Empty() {
			reason = ReasonHandedBack
		}
		step(moved, metrics.StepHandBack, "handed %d fields of %s %s back to their previous owners")
	}
	if after == nil {
		// Nothing was patched: the relinquish starts from the copy read
		// here (its empty apply is guarded by that copy's resourceVersion).
		after = live
	}
	res, err := applier.RelinquishFrom(ctx, ref, after, manager)
	if err != nil {
		return err
	}
	if res.Action != ownershipcore.ActionUnchanged {
		metrics.HandBacksTotal.WithLabelValues(r.controllerName(), kind, metrics.StepRelinquish).Inc()
		msg := fmt.Sprintf("relinquished the fields of field manager %q on %s %s: the fields the patch added were removed", manager, kind, objectName(ref))
		if n := len(patchintent.Leaves(res.Kept)); n > 0 {
			msg = fmt.Sprintf("released the fields of field manager %q on %s %s: %d fields the patch added could not be removed (the apiserver refused the object without them) and stay without an owner", manager, kind, objectName(ref), n)
		}
		if n := len(patchintent.Leaves(res.Removed)); n > 0 {
			msg += fmt.Sprintf("; %d of them the apiserver kept after the empty apply were removed with a guarded patch", n)
		}
		done = append(done, msg)
	}
	r.reportGiveBack(obj, reason, done)
	return nil
}

// givePlan is the plan of managed fields of a deletion policy that gives
// fields back before relinquishing the rest: HandBack moves the fields the
// patch took to their previous owners, Relinquish releases them.
func (r *Reconciler) givePlan(policy v1alpha1.DeletionPolicy, ledger *ownershipcore.Ledger, manager string) func(ownershipcore.ManagedFields) (ownershipcore.ManagedFields, *fieldset.Set) {
	if policy == v1alpha1.DeletionPolicyRelinquish {
		taken := ledger.Taken()
		return func(current ownershipcore.ManagedFields) (ownershipcore.ManagedFields, *fieldset.Set) {
			return ownershipcore.ReleasePlan(current, manager, taken)
		}
	}
	previous := ledger.Previous(nil)
	return func(current ownershipcore.ManagedFields) (ownershipcore.ManagedFields, *fieldset.Set) {
		return ownershipcore.HandBackPlan(current, manager, previous)
	}
}

// reportGiveBack emits one event for a deletion's steps: HandedBack when
// fields went back to their previous owners, else Relinquished.
func (r *Reconciler) reportGiveBack(obj v1alpha1.Patcher, reason string, done []string) {
	if len(done) > 0 {
		r.event(obj, corev1.EventTypeNormal, reason, "%s", strings.Join(done, "; "))
	}
}

func (r *Reconciler) deleteFailed(obj v1alpha1.Patcher, err error) (ctrl.Result, error) {
	msg := ownershipcore.SafeMessage(err)
	if apierrors.IsForbidden(err) {
		setWaiting(obj.PatchStatus(), obj.GetGeneration(), ReasonForbidden, notes.Condition("deletion waits: "+msg))
		r.event(obj, corev1.EventTypeWarning, ReasonForbidden, "deletion waits: %s", msg)
		return ctrl.Result{RequeueAfter: transientRetry}, nil
	}
	setWaiting(obj.PatchStatus(), obj.GetGeneration(), ReasonDeleteFailed, notes.Condition(msg))
	r.event(obj, corev1.EventTypeWarning, ReasonDeleteFailed, "%s", msg)
	return ctrl.Result{}, errors.New(msg)
}
