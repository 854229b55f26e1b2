/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/targetcache"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/ownershipcore"
)

// giveBackTarget runs the deletion policy on one target of a selector
// patch (live: as the watch holds it, or nil to read it) with its record:
// a target that stopped matching, or every target at the patch's
// deletion.
func (sr *selectorReconciler) giveBackTarget(ctx context.Context, obj v1alpha1.Patcher, manager string, applier *ownershipcore.Applier, gvk schema.GroupVersionKind, e *targetEntry, live *unstructured.Unstructured, events *eventLog) error {
	ref := &unstructured.Unstructured{}
	ref.SetGroupVersionKind(gvk)
	ref.SetNamespace(e.rec.Namespace)
	ref.SetName(e.rec.Name)
	ref.SetUID(types.UID(e.rec.UID))
	target := live
	if target == nil {
		target = ref
	}
	u := targetUnit(obj, target, e, "", manager, time.Now(), events)
	u.st.TargetUID, u.target.uid = e.rec.UID, types.UID(e.rec.UID)
	err := sr.exec.giveBack(ctx, applier, u, ref, manager, live)
	var read targetReadError
	if errors.As(err, &read) && apierrors.IsForbidden(err) && e.rec.Fields == 0 && e.emptyLedger() {
		// A target recorded with no field and no previous owner that the
		// account may not read (a target it was never allowed to write
		// to, recorded ahead of a write that was refused): nothing of
		// the patch's to give back, and no retry that could succeed. A
		// refused write is an error: the patch's fields may be there.
		return nil
	}
	return err
}

// giveBackSelector gives every target of a deleted selector patch its
// fields back (giveBackTarget), decoding each from the patch's selector
// watch when it holds it (synced), else reading it through the patch's
// account (a target relabelled out, or before the watch synced). Targets
// given back leave status.targets.records, so that a retry after a
// failure gives back only the rest.
func (sr *selectorReconciler) giveBackSelector(ctx context.Context, obj v1alpha1.Patcher, manager string) error {
	st := obj.PatchStatus()
	entries := readTargets(st.Targets)
	if len(entries) == 0 {
		return nil
	}
	ts := obj.PatchSpec().TargetSelector
	gv, err := schema.ParseGroupVersion(ts.APIVersion)
	if err != nil {
		return nil
	}
	gvk := gv.WithKind(ts.Kind)
	applier, account, err := sr.applierFor(obj)
	if err != nil {
		return err
	}
	held := sr.syncedSelectorWatch(client.ObjectKeyFromObject(obj))
	events := &eventLog{}
	var mu sync.Mutex
	var errs []error
	var done []types.UID
	var wg sync.WaitGroup
	sem := make(chan struct{}, selectorWorkers)
	for _, e := range entries {
		wg.Add(1)
		sem <- struct{}{}
		go func(e *targetEntry) {
			defer func() { <-sem; wg.Done() }()
			uid := types.UID(e.rec.UID)
			live, err := heldObject(held, uid)
			if err == nil {
				err = sr.giveBackTarget(ctx, obj, manager, applier, gvk, e, live, events)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && !isGoneErr(err) {
				errs = append(errs, fmt.Errorf("%s: %w", objectName(e.refObject()), tenant.Explain(account, err)))
				return
			}
			done = append(done, uid)
		}(e)
	}
	wg.Wait()
	for _, uid := range done {
		delete(entries, uid)
	}
	events.emit(sr.patchUnit(obj))
	if st.Targets != nil {
		st.Targets.Records, st.Targets.Ledgers = writeTargets(entries)
	}
	return errors.Join(errs...)
}

// syncedSelectorWatch returns the selector watch of the patch key once it
// has synced; nil before, or without a watch.
func (sr *selectorReconciler) syncedSelectorWatch(key types.NamespacedName) *targetcache.SelectorWatch {
	w := sr.watches.get(key)
	if w == nil {
		return nil
	}
	if ok, _ := w.synced(); !ok {
		return nil
	}
	return w.held
}

// heldObject decodes the object with uid from held (nil: no watch); nil
// when held does not hold it, for the caller to read it live.
func heldObject(held *targetcache.SelectorWatch, uid types.UID) (*unstructured.Unstructured, error) {
	if held == nil {
		return nil, nil
	}
	h, ok := held.Get(uid)
	if !ok {
		return nil, nil
	}
	return h.Object()
}

// isGoneErr reports a target that is gone or no longer what the record
// names: nothing to give back.
func isGoneErr(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsBadRequest(err) || errors.Is(err, ownershipcore.ErrTargetGone)
}

// refObject is an empty object naming e's target (for messages).
func (e *targetEntry) refObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetNamespace(e.rec.Namespace)
	u.SetName(e.rec.Name)
	return u
}
