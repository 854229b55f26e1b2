/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package skeleton

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Writes are the resourceVersions of objects this process has written
// over: a cached copy at one of them predates our own write (the cache
// has not seen it yet), and a reconcile deciding on it would redo that
// write. The zero value is ready to use.
type Writes struct {
	m      sync.Map // types.NamespacedName → *ownWrites
	unsure sync.Map // types.NamespacedName → struct{}
}

// ownWrites are the resourceVersions of one object this process has
// written over: every version before one of its writes, and every version
// its writes produced but the last.
type ownWrites struct {
	stale  []string
	latest string
}

// maxStale bounds the versions kept per object.
const maxStale = 8

// Wrote records that obj, at resourceVersion before, was just written by
// this process, obj holding the apiserver's answer. A write that changed
// nothing (same resourceVersion) leaves no record: no cache can be behind
// it, and a record would make every later reconcile wait forever.
func (w *Writes) Wrote(obj client.Object, before string) {
	if obj.GetResourceVersion() == before {
		return
	}
	w.WrittenAt(obj, before, obj.GetResourceVersion())
}

// WrittenAt records a write of obj from resourceVersion before to after.
func (w *Writes) WrittenAt(obj client.Object, before, after string) {
	key := client.ObjectKeyFromObject(obj)
	var o ownWrites
	if v, ok := w.m.Load(key); ok {
		o = *v.(*ownWrites)
	}
	stale := append([]string{}, o.stale...)
	stale = append(stale, before)
	if o.latest != "" && o.latest != after {
		stale = append(stale, o.latest)
	}
	if len(stale) > maxStale {
		stale = stale[len(stale)-maxStale:]
	}
	w.m.Store(key, &ownWrites{stale: stale, latest: after})
}

// Behind reports whether the cached obj predates one of our own writes of
// it; once the cache has caught up, the record is dropped.
//
// A copy older than our last write is behind, whoever wrote it: resource
// versions are compared as the apiserver orders them
// (resourceversion.CompareResourceVersion, KEP-5504). A version another
// writer made between our read and our write (a deletion during a
// reconcile) predates our write too: deciding on it would miss what we
// wrote (a FieldPatch's record of its target, so the deletion would let
// go without giving anything back). The exact versions our writes
// replaced are behind too, even when a write's answer carries the same
// version (removing the last finalizer of a deleted object answers with
// the version it had), and are all there is for versions that are not
// comparable integers.
func (w *Writes) Behind(obj client.Object) bool {
	key := client.ObjectKeyFromObject(obj)
	v, ok := w.m.Load(key)
	if !ok {
		return false
	}
	o := v.(*ownWrites)
	for _, rv := range o.stale {
		if rv == obj.GetResourceVersion() {
			return true
		}
	}
	if c, err := resourceversion.CompareResourceVersion(obj.GetResourceVersion(), o.latest); err == nil && c < 0 {
		return true
	}
	// Only the record just read: a write recorded since (by a reconcile,
	// while a watch event calls Behind) stays.
	w.m.CompareAndDelete(key, v)
	return false
}

// Unsure records that a write of obj failed with err in a way that may
// hide it: the apiserver may have made it all the same (its answer lost, a
// timeout or a server error after the write), so a cached copy may predate
// it with nothing to tell. Deciding on such a copy could write back what
// the lost write replaced (a FieldPatch's record of previous owners). The next reconcile reads
// the object fresh once (Reconciler.get) and waits for the cache to reach
// that version. An answer that refuses the write (a 4xx status: a
// conflict, an invalid object, a forbidden request) says it did not
// happen, and costs no read.
func (w *Writes) Unsure(obj client.Object, err error) {
	if mayHaveWritten(err) {
		w.markUnsure(client.ObjectKeyFromObject(obj))
	}
}

// markUnsure marks key for a fresh read at the next reconcile.
func (w *Writes) markUnsure(key client.ObjectKey) { w.unsure.Store(key, struct{}{}) }

// mayHaveWritten reports whether a write that returned err may have been
// made by the apiserver: any error but an API status below 500.
func mayHaveWritten(err error) bool {
	var status apierrors.APIStatus
	if err == nil {
		return false
	}
	if errors.As(err, &status) {
		return status.Status().Code >= 500 || status.Status().Code == 0
	}
	return true
}

// takeUnsure reports whether a write of key failed since the last fresh
// read, and clears the mark.
func (w *Writes) takeUnsure(key client.ObjectKey) bool {
	_, ok := w.unsure.LoadAndDelete(key)
	return ok
}

// Forget drops the record of an object that is gone.
func (w *Writes) Forget(key client.ObjectKey) {
	w.m.Delete(key)
	w.unsure.Delete(key)
}

// RemoveFinalizer removes finalizer, and only it, from obj on the
// apiserver: a merge patch locked on obj's resourceVersion. A merge
// patch replaces the whole list, so one made from a stale copy would put
// back a finalizer the apiserver has removed since (the garbage
// collector's foregroundDeletion, at the end of a foreground deletion),
// which the apiserver refuses on an object being deleted; locked, such a
// patch is a Conflict instead, and obj is read again from reader and the
// removal sent once more from that copy, if it is the same object (UID)
// and being deleted: a new object of the name keeps its finalizer until
// its own deletion. obj is left as the apiserver answered (after a failed
// second attempt, as read: the caller's changes to it are gone, which a
// retried deletion makes again). It returns the resourceVersion the
// removal was sent from. An object that is gone, replaced, or no longer
// holds finalizer, is no error.
func RemoveFinalizer(ctx context.Context, c client.Client, reader client.Reader, obj client.Object, finalizer string) (from string, err error) {
	uid := obj.GetUID()
	for attempt := 0; ; attempt++ {
		before, ok := obj.DeepCopyObject().(client.Object)
		if !ok {
			return "", fmt.Errorf("copy %T", obj)
		}
		from = before.GetResourceVersion()
		if !controllerutil.RemoveFinalizer(obj, finalizer) {
			return from, nil
		}
		err := c.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		if !apierrors.IsConflict(err) || attempt == 1 {
			return from, client.IgnoreNotFound(err)
		}
		if err := reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return from, client.IgnoreNotFound(err)
		}
		if obj.GetUID() != uid || obj.GetDeletionTimestamp().IsZero() {
			return from, nil
		}
	}
}
