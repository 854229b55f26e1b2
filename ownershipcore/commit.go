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
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// ErrStale is returned (wrapped) by Commit, and by a forced apply's
// request, when the object moved on from the state the write was computed
// from (its resourceVersion changed) or was deleted or replaced (its UID):
// nothing was written. The operations
// are idempotent: read the object again and compute anew.
var ErrStale = errors.New("the object changed since it was read")

// DivergenceError is returned by Commit, and by Apply, when the
// apiserver's answer differs from the model's prediction beyond what the
// model leaves to the apiserver (Model.Compare). The write happened: the
// caller has the answer. Its text names fields, never a value.
type DivergenceError struct {
	// Object names the object written.
	Object string
	// Operation names the request: "JSON patch" (Commit), "apply" or
	// "forced apply" (Apply), with " (dry run)" for a dry run.
	Operation string
	// Manager is the field manager that wrote.
	Manager string
	// Diff says how the answer differs (see Diff).
	Diff string
	// Redefaulted says that the answer differs only in fields the write
	// removed that the apiserver's defaulting set again and recorded as
	// Manager's (Model.Redefaulted): the model runs no defaulting.
	Redefaulted bool
}

func (e *DivergenceError) Error() string {
	return fmt.Sprintf("the apiserver's answer to the %s by %q for %s differs from the prediction: %s", e.Operation, e.Manager, e.Object, e.Diff)
}

// MessageDivergence is the message of the log line a divergence is
// reported with (through the context's logger, log.FromContext), with the
// keys "operation", "manager", "object", "difference" (fields, never
// values) and "redefaulted" (DivergenceError.Redefaulted): the answer to a
// write differs from the model's prediction.
const MessageDivergence = "The apiserver's answer differs from the model's prediction"

// divergence returns a *DivergenceError for the difference between
// predicted and got, the answer to a write on before (nil when they agree)
// and logs it.
func (m Model) divergence(ctx context.Context, d *DivergenceError, before, predicted, got State) error {
	if d.Diff == "" {
		return nil
	}
	d.Redefaulted = m.Redefaulted(before, predicted, got, d.Manager)
	log.FromContext(ctx).Info(MessageDivergence, "operation", d.Operation, "manager", d.Manager, "object", d.Object,
		"difference", d.Diff, "redefaulted", d.Redefaulted)
	return d
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
	d := &DivergenceError{Object: describe(live), Operation: "JSON patch", Manager: manager, Diff: m.Compare(before, after, got)}
	return got, m.divergence(ctx, d, before, after, got)
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
