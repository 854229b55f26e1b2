/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A target a ManagedWorkload applies fields to is not refused: the
// FieldPatch applies its own field beside the workload's, repairs drift on
// it, and at deletion the workload's fields are as the workload left them
// (the issue "A ManagedWorkload silently switches a FieldPatch off").
func TestTargetSharedWithAWorkload(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "fp-shared-mw")
	workload := "fieldops-workload/" + ns + "/shop"
	cm := applyAs(t, workload, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: shared, namespace: %s}, data: {a: "1"}}`, ns))
	fp := fieldPatch(t, fmt.Sprintf(`
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: beside, namespace: %s}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: shared}
  patch: {data: {b: "2"}}
`, ns))
	waitReason(t, fp, "Applied")
	want := map[string][]string{".data.a": {workload + "/Apply"}, ".data.b": {"fieldops-fieldpatch/" + ns + "/beside/Apply"}}
	if got := owners(t, live(t, cm)); !reflect.DeepEqual(got, want) {
		t.Fatalf("owners = %v, want %v", got, want)
	}
	// Drift on the patch's own field is repaired.
	applyAs(t, "kubectl-edit", fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: shared, namespace: %s}, data: {b: "drifted"}}`, ns))
	eventually(t, "drift on .data.b repaired", func() (bool, string) {
		data, _, _ := unstructured.NestedStringMap(live(t, cm).Object, "data")
		return data["b"] == "2", fmt.Sprint(data)
	})
	deleteAndWait(t, fp)
	data, _, _ := unstructured.NestedStringMap(live(t, cm).Object, "data")
	if data["a"] != "1" {
		t.Fatalf("data = %v, want the workload's a=1 kept", data)
	}
	if got := owners(t, live(t, cm))[".data.a"]; !reflect.DeepEqual(got, []string{workload + "/Apply"}) {
		t.Fatalf(".data.a owners = %v, want the workload's", got)
	}
}

// Patch a takes .data.k from helm, patch b takes it from a (recording a as
// its previous owner); a is deleted, then b. The field never goes to a's
// field manager, whose object is gone (an entry nobody would relinquish):
// it goes down the chain a recorded (Ledger.HandBackTo), or, without it,
// stays with b's value and no owner, for helm's next apply to take back
// without a conflict.
func TestDeletedPatchIsNoPreviousOwner(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "fp-departed")
	cm := applyAs(t, "helm", fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: chain, namespace: %s}, data: {k: "helm", other: "o"}}`, ns))
	patch := func(name, value string) string {
		return fmt.Sprintf(`
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: %s, namespace: %s}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: chain}
  patch: {data: {k: %q}}
`, name, ns, value)
	}
	a := fieldPatch(t, patch("a", "from-a"))
	waitReason(t, a, "Applied")
	b := fieldPatch(t, patch("b", "from-b"))
	waitReason(t, b, "Applied")
	deleteAndWait(t, a)
	deleteAndWait(t, b)
	l := live(t, cm)
	data, _, _ := unstructured.NestedStringMap(l.Object, "data")
	if data["k"] != "from-b" || data["other"] != "o" {
		t.Fatalf("data = %v, want k=from-b (values stay) and other=o", data)
	}
	got := owners(t, l)
	for p, ms := range got {
		for _, m := range ms {
			if strings.HasPrefix(m, "fieldops-") {
				t.Errorf("%s is still owned by %s", p, m)
			}
		}
	}
	if !reflect.DeepEqual(got[".data.other"], []string{"helm/Apply"}) {
		t.Errorf(".data.other owners = %v, want helm's", got[".data.other"])
	}
	// helm's next apply takes .data.k back without a conflict.
	again := obj(t, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: chain, namespace: %s}, data: {k: "helm", other: "o"}}`, ns))
	if err := k8s.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(again), client.FieldOwner("helm")); err != nil {
		t.Fatalf("helm's apply without force: %v", err)
	}
}
