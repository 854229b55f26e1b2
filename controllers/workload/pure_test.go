/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload

import (
	"reflect"
	"testing"

	"gomodules.xyz/jsonpatch/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

func TestFilterLegacyOps(t *testing.T) {
	for _, c := range []struct {
		name string
		op   jsonpatch.Operation
		keep bool
	}{
		{"label removed", jsonpatch.NewOperation("remove", "/metadata/labels/team", nil), true},
		{"whole annotations removed", jsonpatch.NewOperation("remove", "/metadata/annotations", nil), true},
		{"annotation changed", jsonpatch.NewOperation("replace", "/metadata/annotations/a", "b"), true},
		{"server metadata", jsonpatch.NewOperation("remove", "/metadata/uid", nil), false},
		{"metadata name", jsonpatch.NewOperation("replace", "/metadata/name", "x"), false},
		{"defaulted field", jsonpatch.NewOperation("remove", "/spec/revisionHistoryLimit", nil), false},
		{"spec change", jsonpatch.NewOperation("replace", "/spec/replicas", 3), true},
		{"spec addition", jsonpatch.NewOperation("add", "/spec/minReadySeconds", 5), true},
		{"labels-like prefix", jsonpatch.NewOperation("remove", "/metadata/labelsx", nil), false},
	} {
		got := filterLegacyOps([]jsonpatch.Operation{c.op})
		if (len(got) == 1) != c.keep {
			t.Errorf("%s: kept %v, want %v", c.name, len(got) == 1, c.keep)
		}
	}
}

func TestApplyOrder(t *testing.T) {
	mk := func(i int, apiVersion, kind string, namespaced bool) *object {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		return &object{Index: i, Intent: u, Namespaced: namespaced}
	}
	objs := []*object{
		mk(0, "apps/v1", "Deployment", true),
		{Index: 1}, // unparsable
		mk(2, "rbac.authorization.k8s.io/v1", "ClusterRole", false),
		mk(3, "v1", "ConfigMap", true),
		mk(4, "apiextensions.k8s.io/v1", "CustomResourceDefinition", false),
		mk(5, "v1", "Namespace", false),
	}
	var got []int
	for _, o := range applyOrder(objs) {
		got = append(got, o.Index)
	}
	if want := []int{5, 4, 2, 0, 3, 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("apply order %v, want %v", got, want)
	}
}

func TestOtherOwners(t *testing.T) {
	entry := func(manager string, op metav1.ManagedFieldsOperationType, sub, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: sub, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	u := &unstructured.Unstructured{}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{
		entry("us", metav1.ManagedFieldsOperationApply, "", `{"f:data":{"f:a":{}}}`),
		entry("us-legacy", metav1.ManagedFieldsOperationUpdate, "", `{"f:data":{"f:b":{}}}`),
		entry("kyverno", metav1.ManagedFieldsOperationUpdate, "", `{"f:metadata":{"f:annotations":{"f:x":{}}}}`),
		entry("kubelet", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{"f:phase":{}}}`),
		entry("other-team", metav1.ManagedFieldsOperationApply, "", `{"f:data":{"f:c":{}}}`),
	})
	got, err := otherOwners(u, sets.New("us", "us-legacy"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []string{"other-team"}) {
		t.Fatalf("other owners %v, want only other-team", got)
	}
}

// The prune decision, as the core runs it on each state it reads: delete
// only the object the workload applied (same UID), with prune on, when no
// other manager co-owns its content.
func TestPruneDecision(t *testing.T) {
	entry := func(manager, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	live := func(uid string, entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetUID(types.UID(uid))
		u.SetManagedFields(entries)
		return u
	}
	ours := entry("us", `{"f:data":{"f:a":{}}}`)
	off := false
	for _, c := range []struct {
		name  string
		prune *bool
		live  *unstructured.Unstructured
		want  bool
	}{
		{"ours alone", nil, live("uid-1", ours), true},
		{"prune off", &off, live("uid-1", ours), false},
		{"co-owned", nil, live("uid-1", ours, entry("other", `{"f:data":{"f:b":{}}}`)), false},
		{"annotated by another", nil, live("uid-1", ours, entry("webhook", `{"f:metadata":{"f:annotations":{"f:x":{}}}}`)), true},
		{"replaced", nil, live("uid-2", ours), false},
	} {
		mw := &v1alpha1.ManagedWorkload{}
		mw.Spec.Prune = c.prune
		got, err := pruneDecision(mw, v1alpha1.InventoryEntry{UID: "uid-1"}, "us")(c.live)
		if err != nil || got != c.want {
			t.Errorf("%s: delete %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}
