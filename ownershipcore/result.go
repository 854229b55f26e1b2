/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Result is what Apply did and why.
type Result struct {
	Action Action
	// Object is the object after the apply: the server's answer, or the
	// live object when nothing was written. Nil if it does not exist.
	Object *unstructured.Unstructured
	// Forced are the conflicts taken with force (fields taken from others).
	Forced []Conflict
	// Yielded are the conflicts left to their owners.
	Yielded []Conflict
	// Failed are the conflicts that failed the apply.
	Failed []Conflict
	// Messages are the strategy's messages, one per resolved conflict.
	Messages []string
	// Predicted: a dry run answered by the model alone (ModelOnly, or a
	// write before the apply that a dry run cannot stage).
	Predicted bool
	// DroppedFirst: before the apply, a write of its own (a JSON patch of
	// managed fields) released what the intent drops that another manager
	// holds (see Apply); ApplyUnsent: the apply then changed nothing and
	// was not sent (Action is Configured all the same: the drop wrote).
	DroppedFirst, ApplyUnsent bool
	// Removed are the fields a relinquish (LetGo) removed with their
	// values: those manager owned alone. Nil for an apply.
	Removed *fieldpath.Set
	// Kept are fields a relinquish could not remove (the object would be
	// invalid without them, or the result cannot be predicted): they stay
	// with their values and no owner (Outcome.Why says why). Nil
	// otherwise.
	Kept *fieldpath.Set
}

// Wrote reports whether the apply wrote the object (created or
// configured it).
func (r Result) Wrote() bool {
	return r.Action == ActionCreated || r.Action == ActionConfigured
}

// clone is r with its own slices of conflicts and messages: appending to
// them leaves r as it was.
func (r Result) clone() Result {
	r.Forced, r.Yielded, r.Failed = slices.Clone(r.Forced), slices.Clone(r.Yielded), slices.Clone(r.Failed)
	r.Messages = slices.Clone(r.Messages)
	return r
}
