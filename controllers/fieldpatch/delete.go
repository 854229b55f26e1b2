package fieldpatch

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
)

// reconcileDelete gives the target back: HandBack (unless the policy is
// Relinquish) moves each field to its previous owner, Relinquish removes
// the fields the patch added; the target itself is never deleted. Both
// steps are idempotent, so an interrupted deletion finishes on retry
// without handing anything back twice.
func (r *Reconciler) reconcileDelete(ctx context.Context, obj v1alpha1.Patcher) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return ctrl.Result{}, nil
	}
	st, spec := obj.PatchStatus(), obj.PatchSpec()
	manager := st.FieldManager
	if manager == "" {
		manager = r.managerName(obj)
	}
	// A target that cannot be resolved was never patched.
	if ref, err := r.resolveTarget(obj); err == nil {
		if spec.DeletionPolicy != v1alpha1.DeletionPolicyRelinquish && len(st.PreviousOwners) > 0 {
			previous, err := decodeOwners(st.PreviousOwners)
			if err != nil {
				return r.deleteFailed(obj, err)
			}
			moved, err := r.Applier.HandBack(ctx, ref, manager, previous)
			if err != nil && !apierrors.IsNotFound(err) {
				return r.deleteFailed(obj, err)
			}
			if err == nil && !moved.Empty() {
				metrics.HandBacksTotal.WithLabelValues(r.controllerName(), ref.GetKind(), metrics.StepHandBack).Inc()
				r.event(obj, corev1.EventTypeNormal, ReasonHandedBack, "handed %d fields of %s %s back to their previous owners", len(intentLeaves(moved)), ref.GetKind(), objectName(ref))
			}
		}
		res, err := r.Applier.Relinquish(ctx, ref, manager)
		if err != nil && !apierrors.IsNotFound(err) {
			return r.deleteFailed(obj, err)
		}
		if err == nil && res.Object != nil && res.Action != ownershipcore.ActionUnchanged {
			metrics.HandBacksTotal.WithLabelValues(r.controllerName(), ref.GetKind(), metrics.StepRelinquish).Inc()
			r.event(obj, corev1.EventTypeNormal, ReasonRelinquished, "relinquished the fields of field manager %q on %s %s", manager, ref.GetKind(), objectName(ref))
		}
	}
	r.contests.forget(obj.GetUID())
	before := obj.DeepCopyObject().(client.Object)
	controllerutil.RemoveFinalizer(obj, Finalizer)
	if err := r.Client.Patch(ctx, obj, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) deleteFailed(obj v1alpha1.Patcher, err error) (ctrl.Result, error) {
	setWaiting(obj.PatchStatus(), obj.GetGeneration(), ReasonDeleteFailed, err.Error())
	r.event(obj, corev1.EventTypeWarning, ReasonDeleteFailed, "%s", err.Error())
	return ctrl.Result{}, err
}
