/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ActionDeleted: Delete deleted the object (or marked it for deletion:
// its finalizers keep it until they are removed).
const ActionDeleted Action = "Deleted"

// DeleteDecision decides, from one state of the object (as read from the
// apiserver, managed fields included), whether to delete it. It must be a
// pure function of that state: Delete runs it again on every fresh read.
type DeleteDecision func(live *unstructured.Unstructured) (bool, error)

// DeleteOptions configure one Delete.
type DeleteOptions struct {
	// PropagationPolicy is the request's propagationPolicy (garbage
	// collection of the object's dependents); empty: the apiserver's
	// default for the kind.
	PropagationPolicy metav1.DeletionPropagation
}

// beforeDelete, when set, is called with the state a deletion was decided
// on, between the decision and the request. Tests only (export_test.go):
// it lets another writer act in that window.
var beforeDelete func(ctx context.Context, live *unstructured.Unstructured)

// Delete deletes the object obj names (apiVersion, kind, namespace, name)
// when decide says so for its live state (live: the caller's read in the
// same decision; nil: read through APIReader), in one request guarded by
// the UID and resourceVersion of that state (metav1.Preconditions: the
// apiserver refuses the deletion with a 409 Conflict when the stored
// object is another one or has changed since; API conventions,
// "Concurrency Control and Consistency"). A write by another field
// manager in between is never deleted with the object: on a conflict (or
// a 404: deleted in between) the object is read again and decide runs on
// the fresh state, a few times at most (as Apply does).
//
// It returns Action Deleted with the state deleted (Result.Object);
// Action Unchanged with the state decide kept, or with a nil Object when
// the object does not exist. The apiserver's error otherwise, and after
// the last attempt ErrStale (wrapped).
func (a *Applier) Delete(ctx context.Context, obj, live *unstructured.Unstructured, decide DeleteDecision, opts DeleteOptions) (Result, error) {
	for attempt := 1; ; attempt++ {
		if live == nil {
			fresh, err := a.GetFresh(ctx, obj)
			if err != nil || fresh == nil {
				return Result{Action: ActionUnchanged}, err
			}
			live = fresh
		}
		del, err := decide(live)
		if err != nil || !del {
			return Result{Action: ActionUnchanged, Object: live}, err
		}
		if beforeDelete != nil {
			beforeDelete(ctx, live)
		}
		err = a.deleteOnce(ctx, live, opts)
		if err == nil {
			return Result{Action: ActionDeleted, Object: live}, nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return Result{}, fmt.Errorf("delete %s: %w", describe(live), err)
		}
		if attempt == commitAttempts {
			return Result{}, fmt.Errorf("delete %s: %w: %v", describe(live), ErrStale, err)
		}
		live = nil // read fresh and decide again
	}
}

// deleteOnce sends the deletion of live guarded by its UID and
// resourceVersion.
func (a *Applier) deleteOnce(ctx context.Context, live *unstructured.Unstructured, opts DeleteOptions) error {
	uid, rv := live.GetUID(), live.GetResourceVersion()
	del := []client.DeleteOption{client.Preconditions{UID: &uid, ResourceVersion: &rv}}
	if opts.PropagationPolicy != "" {
		del = append(del, client.PropagationPolicy(opts.PropagationPolicy))
	}
	return a.Client.Delete(ctx, live.DeepCopy(), del...)
}
