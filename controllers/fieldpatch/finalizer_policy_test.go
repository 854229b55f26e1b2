/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/controllers/fieldpatch"
	"github.com/fieldops/fieldops/controllers/workload"
	"github.com/fieldops/fieldops/internal/localcp"
)

// Issue 11: with the MutatingAdmissionPolicy config/default ships
// (config/admission/finalizers.yaml, its binding restricted here to this
// test's namespace), a FieldPatch has its finalizer from creation and
// converges with no write of the FieldPatch itself: one apply, one status
// write, one event. Deleted before any reconcile or after, it is let go.
func TestFinalizerFromAdmissionPolicy(t *testing.T) {
	if localcp.HandBackFinalizer != fieldpatch.Finalizer {
		t.Fatalf("the policy adds %q, the controller's finalizer is %q", localcp.HandBackFinalizer, fieldpatch.Finalizer)
	}
	ns := kit.Namespace(t, "finalizer-policy", "fieldops.dev/test", "finalizer-policy")
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"fieldops.dev/test": "finalizer-policy"}}
	if err := localcp.InstallFinalizerPolicy(context.Background(), k8s, ns, sel); err != nil {
		t.Fatal(err)
	}
	// What the policy adds, by dry-run creation: our finalizer, once,
	// after the others.
	for _, tc := range []struct {
		kind       string
		finalizers []string
		want       []string
	}{
		{"FieldPatch", nil, []string{fieldpatch.Finalizer}},
		{"FieldPatch", []string{"example.com/keep"}, []string{"example.com/keep", fieldpatch.Finalizer}},
		{"FieldPatch", []string{fieldpatch.Finalizer, "example.com/keep"}, []string{fieldpatch.Finalizer, "example.com/keep"}},
		{"ManagedWorkload", nil, []string{workload.Finalizer}},
		{"ManagedWorkload", []string{"example.com/keep"}, []string{"example.com/keep", workload.Finalizer}},
	} {
		spec := map[string]interface{}{"target": map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "name": "cfg"}, "patch": map[string]interface{}{"data": map[string]interface{}{"k": "1"}}}
		if tc.kind == "ManagedWorkload" {
			spec = map[string]interface{}{"resources": []interface{}{map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "cfg"}}}}
		}
		u := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "fieldops.dev/v1alpha1", "kind": tc.kind,
			"metadata": map[string]interface{}{"generateName": "dry-", "namespace": ns},
			"spec":     spec,
		}}
		if tc.finalizers != nil {
			u.SetFinalizers(tc.finalizers)
		}
		if err := k8s.Create(context.Background(), u, client.DryRunAll); err != nil {
			t.Fatalf("dry-run create of a %s with finalizers %v: %v", tc.kind, tc.finalizers, err)
		}
		if got := u.GetFinalizers(); !slices.Equal(got, tc.want) {
			t.Errorf("a %s created with finalizers %v has %v, want %v", tc.kind, tc.finalizers, got, tc.want)
		}
	}

	applyAs(t, "helm", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: %s}, data: {owned: helm}}", ns))
	fpPath, target := "/namespaces/"+ns+"/fieldpatches/p", "/namespaces/"+ns+"/configmaps/cfg"
	writes, statusWrites, targetWrites := requests.Writes(fpPath), requests.Writes(fpPath+"/status"), requests.Writes(target)
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: p, namespace: `+ns+`}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: cfg}
  patch: {data: {added: "1"}}
`)
	if !slices.Contains(fp.Finalizers, fieldpatch.Finalizer) {
		t.Fatalf("created with finalizers %v, want %s from the policy", fp.Finalizers, fieldpatch.Finalizer)
	}
	waitReason(t, fp, "Applied")
	hasEvent(t, ns, "p", "Applied", "ConfigMap")
	if n := requests.Writes(fpPath) - writes; n != 0 {
		t.Errorf("%d writes of the FieldPatch, want none (the finalizer came with it)", n)
	}
	if n := requests.Writes(fpPath+"/status") - statusWrites; n != 1 {
		t.Errorf("%d status writes, want 1", n)
	}
	if n := requests.Writes(target) - targetWrites; n != 1 {
		t.Errorf("%d writes of the target, want 1 apply", n)
	}
	deleteAndWait(t, fp)
	o := owners(t, live(t, obj(t, fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: %s}}", ns))))
	if fmt.Sprint(o) != "map[.data.owned:[helm/Apply]]" {
		t.Errorf("owners after deletion %v, want helm's field only", o)
	}

	// Created and deleted at once: whether a reconcile came between or
	// not, it goes (nothing recorded: nothing to give back).
	quick := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: quick, namespace: `+ns+`}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: cfg}
  patch: {data: {quick: "1"}}
`)
	deleteAndWait(t, quick)
	after := live(t, obj(t, fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: %s}}", ns)))
	if o := owners(t, after); fmt.Sprint(o) != "map[.data.owned:[helm/Apply]]" {
		t.Errorf("owners after the quick deletion %v, want helm's field only", o)
	}
	if _, ok := after.Object["data"].(map[string]interface{})["quick"]; ok {
		t.Error("data.quick is left after its FieldPatch was deleted")
	}
}

// The status write that records the target after a first apply can be
// lost (a crash between the two writes, or a deletion racing it): a
// FieldPatch deleted without a record of its target still gives back
// what its field manager holds there. The lost record is simulated on a
// suspended FieldPatch (no reconcile records it again).
func TestDeletionWithoutRecordGivesBack(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "lost-record")
	applyAs(t, "helm", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: %s}, data: {owned: helm}}", ns))
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: p, namespace: `+ns+`}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: cfg}
  patch: {data: {added: "1"}}
`)
	waitReason(t, fp, "Applied")
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		kit.Get(t, fp)
		fp.Spec.Suspend = true
		return k8s.Update(context.Background(), fp)
	}); err != nil {
		t.Fatal(err)
	}
	waitReason(t, fp, fieldpatch.ReasonSuspended)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		kit.Get(t, fp)
		fp.Status.TargetUID, fp.Status.RecordedFields, fp.Status.PreviousOwners = "", nil, nil
		return k8s.Status().Update(context.Background(), fp)
	}); err != nil {
		t.Fatal(err)
	}
	deleteAndWait(t, fp)
	after := live(t, obj(t, fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: %s}}", ns)))
	if o := owners(t, after); fmt.Sprint(o) != "map[.data.owned:[helm/Apply]]" {
		t.Errorf("owners after deletion %v, want helm's field only", o)
	}
	if _, ok := after.Object["data"].(map[string]interface{})["added"]; ok {
		t.Error("data.added is left after its FieldPatch was deleted")
	}
}
