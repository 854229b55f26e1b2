/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"fmt"
	"reflect"
	"testing"

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
