/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
)

// NeedsUpgrade reports whether live has an Update entry (main resource) of
// one of the managers in from: fields written before Server-Side Apply that
// UpgradeManagers must move before the first apply under to.
func NeedsUpgrade(live *unstructured.Unstructured, from []string) bool {
	names := sets.New(from...)
	for _, e := range live.GetManagedFields() {
		if e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == "" && names.Has(e.Manager) {
			return true
		}
	}
	return false
}

// UpgradeManagers moves the fields of every Update entry (main resource) of
// the managers in from into the Apply entry of to, creating it from the
// newest such entry if needed, and removes those Update entries. Values are
// untouched. The managed fields are computed with client-go's csaupgrade
// (UpgradeManagedFields: the computation behind the patch `kubectl apply
// --server-side` sends) from a fresh read (APIReader) and written with
// Commit: one JSON patch of the managed fields guarded by the object's
// UID and resourceVersion, checked against the prediction. A concurrent
// write refuses it (ErrStale); the object is then read again and the
// upgrade computed anew, a few times at most.
//
// Migrate this way, never by force-applying under a new name: a field the
// old manager owned and the new intent leaves out would lose its only owner
// and, for Update entries merged later, its value (the Service selector
// lost in Argo CD's field-manager proposal). See the SSA docs, "Upgrading
// from client-side apply to server-side apply".
//
// obj needs apiVersion, kind, name and namespace. It reports whether it
// patched; the caller should re-read before deciding on the next apply. A
// missing object is no error.
func (a *Applier) UpgradeManagers(ctx context.Context, obj *unstructured.Unstructured, from []string, to string) (bool, error) {
	var patched bool
	var err error
	for attempt := 1; ; attempt++ {
		patched, err = a.upgradeOnce(ctx, obj, sets.New(from...), to)
		if !errors.Is(err, ErrStale) || attempt == commitAttempts {
			break
		}
	}
	if err != nil {
		return patched, fmt.Errorf("upgrade field managers of %s to %q: %w", describe(obj), to, err)
	}
	return patched, nil
}

// upgradeOnce is one read, csaupgrade's computation and Commit.
func (a *Applier) upgradeOnce(ctx context.Context, obj *unstructured.Unstructured, from sets.Set[string], to string) (bool, error) {
	live, err := a.GetFresh(ctx, obj)
	if err != nil || live == nil {
		return false, err
	}
	before, err := NewState(live, a.sameFieldPaths(ctx, live, live.GetAPIVersion()))
	if err != nil {
		return false, err
	}
	next := live.DeepCopy()
	if err := csaupgrade.UpgradeManagedFields(next, from, to); err != nil {
		return false, err
	}
	after, err := NewState(next, before.SamePaths)
	if err != nil {
		return false, err
	}
	if Diff(before, after) == "" {
		return false, nil
	}
	if _, err := a.Commit(ctx, before, after, to); err != nil {
		// A divergence is reported after the write.
		return errors.As(err, new(*DivergenceError)), err
	}
	return true, nil
}

// ClientSideApplyManagers are the field managers of objects written by
// client-side `kubectl apply`: kubectl-client-side-apply (its creates and
// patches) and before-first-apply (the apiserver's name for fields set
// before managed fields were tracked). `kubectl apply --server-side`
// migrates these same two (k8s.io/kubectl's apply command, through
// csaupgrade).
var ClientSideApplyManagers = []string{"kubectl-client-side-apply", "before-first-apply"}

// LastAppliedAnnotation is client-side apply's record of its last intent
// (kubectl.kubernetes.io/last-applied-configuration).
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// FirstApplyOverClientSideApply reports whether an apply as manager would
// be manager's first on live (no managed fields entry of manager) and live
// was last written by client-side apply (it has LastAppliedAnnotation):
// the case where the apply should first take over client-side apply's
// fields with UpgradeManagers, or fields its intent drops would stay
// forever, owned by kubectl-client-side-apply (kubernetes#99003).
func FirstApplyOverClientSideApply(live *unstructured.Unstructured, manager string) bool {
	if live == nil {
		return false
	}
	_, ok := live.GetAnnotations()[LastAppliedAnnotation]
	return ok && !HasManager(live, manager)
}
