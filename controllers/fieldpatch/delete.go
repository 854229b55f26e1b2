/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/notes"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
	"github.com/fieldops/fieldops/ownershipcore/redact"
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
//   - Restore: as HandBack, but each taken field the patch still owns
//     alone first gets back the value it held before the patch's first
//     write (savePreviousValues); one another manager wrote since keeps
//     its value and owner (ChangedSince: a Warning event names it).
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
	giveBack := r.giveBackOnDelete
	if obj.PatchSpec().TargetSelector != nil {
		giveBack = r.sel.giveBackSelector
	}
	if err := giveBack(ctx, obj, manager); err != nil {
		// Forbidden included: the finalizer stays until the account may
		// give the fields back; never a partial hand-back.
		return r.deleteFailed(obj, err)
	}
	r.contests.Forget(contestKey(obj, obj.PatchStatus().TargetUID))
	from, err := skeleton.RemoveFinalizer(ctx, r.Client, r.records.reader(), obj, Finalizer)
	if err != nil {
		r.writes().Unsure(obj, err)
		return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	// A copy still holding the finalizer is older than this write: a
	// reconcile of it (our hand-back's echo on the target) waits for the
	// cache instead of giving back and removing the finalizer again.
	r.writes().WrittenAt(obj, from, obj.GetResourceVersion())
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
	if err := r.exec.giveBack(ctx, applier, r.patchUnit(obj), ref, manager, nil); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsBadRequest(err) {
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

// targetReadError is giveBack's error reading the target (its text and
// causes unchanged, through Unwrap), so that a caller can tell a refused
// read of the target from a refused write to it.
type targetReadError struct{ error }

func (e targetReadError) Unwrap() error { return e.error }

// describeChanged prints fields by manager: `.data.x (ops), .spec.y (kubectl-edit)`.
func describeChanged(changed map[string]*fieldset.Set) string {
	var parts []string
	for manager, fields := range changed {
		for _, p := range patchintent.Leaves(fields) {
			parts = append(parts, fmt.Sprintf("%s (%s)", p, ownershipcore.DescribeManager(manager)))
		}
	}
	slices.Sort(parts)
	return strings.Join(firstN(parts, 10), ", ")
}

func (r *Reconciler) deleteFailed(obj v1alpha1.Patcher, err error) (ctrl.Result, error) {
	msg := redact.Message(err)
	if apierrors.IsForbidden(err) {
		setWaiting(obj.PatchStatus(), obj.GetGeneration(), ReasonForbidden, notes.Condition("deletion waits: "+msg))
		r.event(obj, corev1.EventTypeWarning, ReasonForbidden, "deletion waits: %s", msg)
		return ctrl.Result{RequeueAfter: transientRetry}, nil
	}
	setWaiting(obj.PatchStatus(), obj.GetGeneration(), ReasonDeleteFailed, notes.Condition(msg))
	r.event(obj, corev1.EventTypeWarning, ReasonDeleteFailed, "%s", msg)
	return ctrl.Result{}, errors.New(msg)
}
