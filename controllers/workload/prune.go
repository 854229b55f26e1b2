/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/conditions"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/controllers/internal/watch"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
)

// Outcomes of removing an object from a workload.
const (
	removeDeleted      = "Deleted"
	removeRelinquished = "Relinquished"
	removeGone         = "Gone"
)

// prunes reports whether the workload deletes objects it alone owns.
func prunes(mw *v1alpha1.ManagedWorkload) bool {
	return mw.Spec.Prune == nil || *mw.Spec.Prune
}

// ourManagers are the workload's manager and its legacy ones.
func ourManagers(mw *v1alpha1.ManagedWorkload, manager string) sets.Set[string] {
	return sets.New(append([]string{manager}, mw.Spec.LegacyFieldManagers...)...)
}

// otherOwners returns the field managers, other than ours, that co-own
// live's content (ownershipcore.CoOwners): metadata-only managers and
// status writers do not keep an object alive.
func otherOwners(live *unstructured.Unstructured, ours sets.Set[string]) ([]string, error) {
	return ownershipcore.CoOwners(live, ours)
}

// pruneDecision is the decision to delete an object of the inventory entry
// e: prune is on, the object is the one the workload applied (same UID)
// and no other manager co-owns its content. The core runs it on every
// state it reads (ownershipcore.Applier.Delete).
func pruneDecision(mw *v1alpha1.ManagedWorkload, e v1alpha1.InventoryEntry, manager string) ownershipcore.DeleteDecision {
	ours := ourManagers(mw, manager)
	return func(live *unstructured.Unstructured) (bool, error) {
		others, err := otherOwners(live, ours)
		return prunes(mw) && len(others) == 0 && live.GetUID() == e.UID, err
	}
}

// pruner takes a workload off the objects that left it (its spec, or
// the workload itself when it is deleted): an object it alone owns is
// deleted (pruneDecision), the others relinquished. It holds only what
// that needs: the account's Applier comes with each call.
type pruner struct{ events recorder }

// prune removes the objects of the last inventory that left the spec and
// returns entries for those whose removal failed (retried later).
func (pr pruner) prune(ctx context.Context, p *pass) []v1alpha1.InventoryEntry {
	keep := sets.New(indexKeys(p.mw)...)
	var gone []v1alpha1.InventoryEntry
	for _, e := range p.mw.Status.Inventory {
		if e.UID != "" && !keep.Has(entryKey(e)) {
			gone = append(gone, e)
		}
	}
	var pending []v1alpha1.InventoryEntry
	for _, e := range removeOrder(gone) {
		if _, err := pr.removeObject(ctx, p.applier, p.mw, e, p.manager); err != nil {
			e.Index, e.Action, e.Reason, e.Message = -1, ActionFailed, ReasonPruneFailed, err.Error()
			pr.events.event(p.mw, nil, corev1.EventTypeWarning, ReasonPruneFailed, "%v", err)
			pending = append(pending, e)
			p.after(transientRetry)
		}
	}
	return pending
}

// removeObject takes the workload off one object: deleted when
// pruneDecision says so for the object as it is when the deletion is
// sent (the core's delete is guarded by its UID and resourceVersion and
// decides again when the object moved on); otherwise relinquished (only
// this workload's fields leave it). An object already gone is fine.
func (pr pruner) removeObject(ctx context.Context, applier *ownershipcore.Applier, mw *v1alpha1.ManagedWorkload, e v1alpha1.InventoryEntry, manager string) (string, error) {
	ref := entryRef(e)
	live := ref.DeepCopy()
	if err := applier.Client.Get(ctx, client.ObjectKeyFromObject(ref), live); err != nil {
		if apierrors.IsNotFound(err) {
			return removeGone, nil
		}
		return "", err
	}
	name := fmt.Sprintf("%s %s", e.Kind, refName(e.Namespace, e.Name))
	del, err := applier.Delete(ctx, ref, live, pruneDecision(mw, e, manager), ownershipcore.DeleteOptions{PropagationPolicy: metav1.DeletePropagationBackground})
	switch {
	case err != nil:
		return "", fmt.Errorf("delete %s: %w", name, err)
	case del.Action == ownershipcore.ActionDeleted:
		pr.events.event(mw, ref, corev1.EventTypeNormal, ReasonPruned, "deleted %s", name)
		return removeDeleted, nil
	case del.Object == nil:
		return removeGone, nil
	}
	return pr.relinquishObject(ctx, applier, mw, e, del.Object, manager)
}

// relinquishObject relinquishes the workload's fields of the object of e,
// which it does not delete (live: the state that decision was made on).
func (pr pruner) relinquishObject(ctx context.Context, applier *ownershipcore.Applier, mw *v1alpha1.ManagedWorkload, e v1alpha1.InventoryEntry, live *unstructured.Unstructured, manager string) (string, error) {
	ref := entryRef(e)
	others, err := otherOwners(live, ourManagers(mw, manager))
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s %s", e.Kind, refName(e.Namespace, e.Name))
	res, err := applier.Relinquish(ctx, ref, manager)
	if err != nil {
		return "", err
	}
	metrics.HandBacksTotal.WithLabelValues(metrics.ControllerWorkload, e.Kind, metrics.StepRelinquish).Inc()
	why := "prune is off"
	switch {
	case len(others) > 0:
		why = fmt.Sprintf("co-owned by %s", strings.Join(others, ", "))
	case live.GetUID() != e.UID:
		why = "it was replaced by an object this workload did not create"
	}
	if kept := ownershipcore.FormatSet(res.Kept); len(kept) > 0 {
		pr.events.event(mw, ref, corev1.EventTypeNormal, ReasonRelinquished, "relinquished %s (%s): %d of this workload's fields could not be removed (the apiserver refused the object without them) and stay without an owner", name, why, len(kept))
		return removeRelinquished, nil
	}
	pr.events.event(mw, ref, corev1.EventTypeNormal, ReasonRelinquished, "relinquished %s (%s): only this workload's fields were removed", name, why)
	return removeRelinquished, nil
}

// entryRef is the object e names (apiVersion, kind, namespace, name).
func entryRef(e v1alpha1.InventoryEntry) *unstructured.Unstructured {
	ref := &unstructured.Unstructured{}
	ref.SetAPIVersion(e.APIVersion)
	ref.SetKind(e.Kind)
	ref.SetNamespace(e.Namespace)
	ref.SetName(e.Name)
	return ref
}

// removeOrder sorts entries for removal: namespaced objects first,
// namespaces last (the reverse of the apply order).
func removeOrder(entries []v1alpha1.InventoryEntry) []v1alpha1.InventoryEntry {
	out := append([]v1alpha1.InventoryEntry(nil), entries...)
	sort.SliceStable(out, func(i, j int) bool {
		return rank(out[i].APIVersion, out[i].Kind, out[i].Namespace != "") > rank(out[j].APIVersion, out[j].Kind, out[j].Namespace != "")
	})
	return out
}

func entryKey(e v1alpha1.InventoryEntry) string {
	gv, err := schema.ParseGroupVersion(e.APIVersion)
	if err != nil || e.Name == "" {
		return ""
	}
	return watch.Key(gv.WithKind(e.Kind).GroupKind(), e.Namespace, e.Name)
}

// reconcileDelete removes every object of the inventory (removeObject),
// then the finalizer. Each step is idempotent, so an interrupted deletion
// finishes on retry.
func (r *Reconciler) reconcileDelete(ctx context.Context, mw *v1alpha1.ManagedWorkload) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(mw, Finalizer) {
		return ctrl.Result{}, nil
	}
	manager := mw.Status.FieldManager
	if manager == "" {
		manager = ManagerName(mw.Namespace, mw.Name)
	}
	applier, _, err := r.applierFor(mw)
	if err != nil {
		applier = r.Applier // an invalid account: the manager cleans up
	}
	var errs []error
	for _, e := range removeOrder(mw.Status.Inventory) {
		if e.UID == "" {
			continue // never applied
		}
		if _, err := r.pruner.removeObject(ctx, applier, mw, e, manager); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		conditions.SetWaiting(&mw.Status.Conditions, mw.Generation, ReasonDeleteFailed, err.Error())
		r.events.event(mw, nil, corev1.EventTypeWarning, ReasonDeleteFailed, "%v", err)
		if slices.ContainsFunc(errs, apierrors.IsForbidden) {
			// RBAC changes by hand: no backoff to wait out.
			return ctrl.Result{RequeueAfter: transientRetry}, nil
		}
		// A failed request (a timeout, a lost answer, a conflict) is
		// retried with the controller's backoff, as a FieldPatch's
		// deletion is: from milliseconds, not a fixed 10 s.
		return ctrl.Result{}, err
	}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	from, err := skeleton.RemoveFinalizer(ctx, r.Client, reader, mw, Finalizer)
	if err != nil {
		r.skeleton().Writes.Unsure(mw, err)
		return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	// A copy still holding the finalizer is older than this write.
	r.skeleton().Writes.WrittenAt(mw, from, mw.ResourceVersion)
	r.contests.ForgetPrefix(string(mw.UID) + "/") // its contests end with it
	return ctrl.Result{}, nil
}
