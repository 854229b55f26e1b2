/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package strategy names what plugins and built-ins implement for the
// ownership core: a ConflictStrategy decides each SSA conflict (force,
// yield, fail), an IgnorablePaths names fields to leave alone. It is a
// leaf (field sets, unstructured objects, nothing of the core), so a
// plugin links only what it needs.
package strategy

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// Conflict is one field of the intent that another field manager owns with
// a different value (SSA docs, "Conflicts"). It implements error.
type Conflict struct {
	// Manager is the field manager that owns Path now.
	Manager string
	// Operation is that manager's operation, Apply or Update.
	Operation metav1.ManagedFieldsOperationType
	// Path is the contested field.
	Path fieldpath.Path
}

func (c Conflict) Error() string {
	return fmt.Sprintf("conflict with %q (%s): %s", c.Manager, c.Operation, fieldset.FormatPath(c.Path))
}

// Decision is a ConflictStrategy's answer for one conflict.
type Decision string

const (
	// DecisionForce takes the field: it changes value and owner.
	DecisionForce Decision = "Force"
	// DecisionYield leaves the field to its owner; it is dropped from the intent.
	DecisionYield Decision = "Yield"
	// DecisionFail aborts the apply; nothing is written.
	DecisionFail Decision = "Fail"
)

// Resolution is a decision and a message saying why, for status and events.
type Resolution struct {
	Decision Decision
	Message  string
}

// ConflictStrategy decides, per conflict, whether to force, yield or fail.
// It returns one Resolution per conflict, in order; an error or a slice of
// another length fails the apply. Built-ins: Static; plugins implement it
// too.
type ConflictStrategy interface {
	Resolve(ctx context.Context, obj *unstructured.Unstructured, manager string, conflicts []Conflict) ([]Resolution, error)
}

// Static answers every conflict with the same decision: Static(DecisionForce)
// is `kubectl apply --server-side --force-conflicts`.
type Static Decision

var _ ConflictStrategy = Static(DecisionForce)

// Resolve implements ConflictStrategy.
func (s Static) Resolve(_ context.Context, _ *unstructured.Unstructured, _ string, conflicts []Conflict) ([]Resolution, error) {
	out := make([]Resolution, len(conflicts))
	for i := range out {
		out[i] = Resolution{Decision: Decision(s), Message: "policy " + string(s)}
	}
	return out, nil
}

// IgnorablePaths names fields of an object that fieldops must neither set
// nor repair (a service mesh's sidecar annotations, a policy engine's
// annotations): they are removed from the intent (ApplyOptions.Ignore) and
// from the legacy diff. Built-in: StaticPaths; plugins implement it too.
// An error leaves the caller with its own paths only.
type IgnorablePaths interface {
	Paths(ctx context.Context, obj *unstructured.Unstructured) (*fieldpath.Set, error)
}

// StaticPaths ignores the same paths on every object (spec.ignorePaths).
type StaticPaths struct {
	Set *fieldpath.Set
}

var _ IgnorablePaths = StaticPaths{}

// Paths implements IgnorablePaths.
func (s StaticPaths) Paths(context.Context, *unstructured.Unstructured) (*fieldpath.Set, error) {
	if s.Set == nil {
		return fieldpath.NewSet(), nil
	}
	return s.Set, nil
}
