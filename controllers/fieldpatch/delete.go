package fieldpatch

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/notes"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
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
// target UID recorded: the record precedes the first write) or whose
// target is gone or invalid is let go at once.
func (r *Reconciler) reconcileDelete(ctx context.Context, obj v1alpha1.Patcher) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return ctrl.Result{}, nil
	}
	st := obj.PatchStatus()
	manager := st.FieldManager
	if manager == "" {
		manager = r.managerName(obj)
	}
	if ref, err := r.resolveTarget(obj); err == nil && st.TargetUID != "" {
		ref.SetUID(types.UID(st.TargetUID))
		applier, account, err := r.applierFor(obj)
		if err != nil {
			return r.deleteFailed(obj, err)
		}
		if err := r.giveBack(ctx, applier, obj, ref, manager); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsBadRequest(err) {
			// Forbidden included: the finalizer stays until the account
			// may give the fields back; never a partial hand-back.
			return r.deleteFailed(obj, tenant.Explain(account, err))
		}
	}
	r.contests.Forget(string(obj.GetUID()))
	before := obj.DeepCopyObject().(client.Object)
	controllerutil.RemoveFinalizer(obj, Finalizer)
	if err := r.Client.Patch(ctx, obj, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	return ctrl.Result{}, nil
}

// giveBack runs the deletion policy on the target ref (which carries the
// recorded UID).
func (r *Reconciler) giveBack(ctx context.Context, applier *ownershipcore.Applier, obj v1alpha1.Patcher, ref *unstructured.Unstructured, manager string) error {
	st, policy := obj.PatchStatus(), obj.PatchSpec().DeletionPolicy
	live := ref.DeepCopy()
	if err := applier.APIReader.Get(ctx, client.ObjectKeyFromObject(ref), live); err != nil {
		return err
	}
	if live.GetUID() != ref.GetUID() {
		return nil // replaced: the object we wrote to is gone
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
	switch policy {
	case v1alpha1.DeletionPolicyOrphan:
		released, err := applier.Release(ctx, ref, manager, ours.Fields)
		if err != nil {
			return err
		}
		r.gaveBack(obj, kind, ref, metrics.StepRelinquish, ReasonRelinquished, "left %d fields of %s %s in place without an owner (Orphan)", released)
		return nil
	case v1alpha1.DeletionPolicyRelinquish:
		released, err := applier.Release(ctx, ref, manager, ledger.Taken())
		if err != nil {
			return err
		}
		r.gaveBack(obj, kind, ref, metrics.StepRelinquish, ReasonRelinquished, "left %d fields the patch took on %s %s in place without an owner", released)
	default:
		moved, err := applier.HandBack(ctx, ref, manager, ledger.Previous(nil))
		if err != nil {
			return err
		}
		r.gaveBack(obj, kind, ref, metrics.StepHandBack, ReasonHandedBack, "handed %d fields of %s %s back to their previous owners", moved)
	}
	res, err := applier.Relinquish(ctx, ref, manager)
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
		r.event(obj, corev1.EventTypeNormal, ReasonRelinquished, "%s", msg)
	}
	return nil
}

// gaveBack counts and reports a hand-back or release step that changed
// something.
func (r *Reconciler) gaveBack(obj v1alpha1.Patcher, kind string, ref *unstructured.Unstructured, step, reason, format string, fields *fieldpath.Set) {
	n := len(patchintent.Leaves(fields))
	if n == 0 {
		return
	}
	metrics.HandBacksTotal.WithLabelValues(r.controllerName(), kind, step).Inc()
	r.event(obj, corev1.EventTypeNormal, reason, format, n, kind, objectName(ref))
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
