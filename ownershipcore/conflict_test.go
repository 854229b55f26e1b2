/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestConflictsFromIsOrdered: the apiserver lists the causes of a 409 in
// map order. conflictsFrom must read the same conflicts the same way
// whatever their order, including one manager that owns a field both by
// Apply and by Update (test/invariants seed 7055 -steps 12: a FieldPatch
// under conflictPolicy Fail rewrote its Conflict message on every
// reconcile, as the two entries of "ops" swapped places).
func TestConflictsFromIsOrdered(t *testing.T) {
	args := `.spec.template.spec.containers[name="app"].args`
	causes := []metav1.StatusCause{
		{Type: metav1.CauseTypeFieldManagerConflict, Field: args, Message: `conflict with "ops"`},
		{Type: metav1.CauseTypeFieldManagerConflict, Field: args, Message: `conflict with "ops" using apps/v1`},
		{Type: metav1.CauseTypeFieldManagerConflict, Field: args, Message: `conflict with "helm"`},
		{Type: metav1.CauseTypeFieldManagerConflict, Field: ".spec.replicas", Message: `conflict with "hpa" using apps/v1`},
	}
	want := []string{
		`.spec.replicas "hpa" Update`,
		args + ` "helm" Apply`,
		args + ` "ops" Apply`,
		args + ` "ops" Update`,
	}
	// Every rotation and its reverse.
	for start := range causes {
		for _, reverse := range []bool{false, true} {
			order := make([]metav1.StatusCause, len(causes))
			for i := range causes {
				j := (start + i) % len(causes)
				if reverse {
					j = (start + len(causes) - i) % len(causes)
				}
				order[i] = causes[j]
			}
			err := apierrors.NewApplyConflict(order, "Apply failed")
			got, ok := conflictsFrom(err, nil)
			if !ok || len(got) != len(want) {
				t.Fatalf("start %d reverse %v: got %v, %v", start, reverse, got, ok)
			}
			for i, c := range got {
				if s := fmt.Sprintf("%s %q %s", c.Path.String(), c.Manager, c.Operation); s != want[i] {
					t.Errorf("start %d reverse %v: conflict %d is %s, want %s", start, reverse, i, s, want[i])
				}
			}
		}
	}
	if _, ok := conflictsFrom(apierrors.NewNotFound(schema.GroupResource{Resource: "deployments"}, "x"), nil); ok {
		t.Error("a NotFound error read as conflicts")
	}
}
