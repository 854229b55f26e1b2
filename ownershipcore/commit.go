/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrStale is returned (wrapped) by Commit, and by a forced apply's
// request, when the object moved on from the state the write was computed
// from (its resourceVersion changed) or was deleted or replaced (its UID):
// nothing was written. The operations
// are idempotent: read the object again and compute anew.
var ErrStale = errors.New("the object changed since it was read")

// DivergenceError is returned by Commit when the apiserver's answer
// differs from the model's prediction beyond what the model leaves to the
// apiserver (a removed field that defaulting brings back, with no owner).
// The write happened.
type DivergenceError struct {
	// Object names the object written.
	Object string
	// Diff says how the answer differs (see Diff).
	Diff string
}

func (e *DivergenceError) Error() string {
	return fmt.Sprintf("the apiserver's answer for %s differs from the prediction: %s", e.Object, e.Diff)
}

// Commit writes after in one request by manager: a JSON patch (RFC 6902)
// that sets the content and the managed fields together (SSA docs, "Using
// Update to change managed fields"), guarded by tests of before's UID and
// resourceVersion, for the operations that change ownership and remove
// values (HandBack, Release, Relinquish, Drop): the apiserver runs
// admission and validation on it as on any update. Before sending, the
// apiserver's own field manager must record the write as after (Predict),
// else nothing is sent and ErrUnpredictable is returned. The answer is
// compared with after (Diff): a divergence returns a *DivergenceError with
// the answer's state.
//
// It returns the answer's state; ErrStale when before is not the stored
// object; the apiserver's error otherwise (an Invalid one when the object
// would not validate without the removed values). Nothing is sent when
// after equals before.
func (a *Applier) Commit(ctx context.Context, before, after State, manager string) (State, error) {
	if Diff(before, after) == "" {
		return before, nil
	}
	m := a.Model()
	if err := m.Predict(before, after, manager); err != nil {
		return State{}, err
	}
	live, err := before.Encoded()
	if err != nil {
		return State{}, err
	}
	next, err := after.Encoded()
	if err != nil {
		return State{}, err
	}
	ops, err := transformOps(live, next)
	if err != nil {
		return State{}, err
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return State{}, err
	}
	answer := &unstructured.Unstructured{}
	answer.SetGroupVersionKind(live.GroupVersionKind())
	answer.SetNamespace(live.GetNamespace())
	answer.SetName(live.GetName())
	if err := a.Client.Patch(ctx, answer, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(manager)); err != nil {
		if apierrors.IsNotFound(err) || isTestFailed(err) || apierrors.IsConflict(err) {
			return State{}, fmt.Errorf("commit to %s: %w: %v", describe(live), ErrStale, err)
		}
		return State{}, fmt.Errorf("commit to %s: %w", describe(live), err)
	}
	got, err := NewState(answer, after.SamePaths)
	if err != nil {
		return State{}, err
	}
	if diff := Diff(after, m.defaulted(before, after, got)); diff != "" {
		return got, &DivergenceError{Object: describe(live), Diff: diff}
	}
	return got, nil
}

// isTestFailed reports the apiserver's answer to a JSON patch whose test
// operation failed: a 422 without causes (the apiserver answers a patch it
// cannot apply with a generic 422, k8s.io/apiserver's patch handler), where
// a refusal by validation names its fields in the status's causes.
func isTestFailed(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) {
		return false
	}
	details := status.Status().Details
	return details == nil || len(details.Causes) == 0
}

// defaulted is got without the fields after lacks that got holds with no
// owner: the apiserver's defaulting or a mutating admission plugin set
// them (a removed field with a default comes back), which the model leaves
// to it.
func (m Model) defaulted(before, after, got State) State {
	as, err1 := m.contentSet(after.Object)
	gs, err2 := m.contentSet(got.Object)
	if err1 != nil || err2 != nil {
		return got
	}
	extra := gs.Difference(as)
	if extra.Empty() || !extra.Intersection(got.Owners.Union()).Empty() {
		return got
	}
	content, err := m.removeValues(got.Object, extra, got.Owners.Union())
	if err != nil {
		return got
	}
	return State{Object: content, Owners: got.Owners, SamePaths: got.SamePaths}
}
