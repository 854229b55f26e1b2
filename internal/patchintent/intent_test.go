/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchintent

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// A schema with every list and map kind the JSON patch evaluation and the
// validation ask about, in structured-merge-diff's own form.
const testSchemaYAML = `types:
- name: root
  map:
    fields:
    - {name: apiVersion, type: {scalar: string}}
    - {name: kind, type: {scalar: string}}
    - {name: metadata, type: {namedType: meta}}
    - {name: data, type: {map: {elementType: {scalar: string}}}}
    - {name: spec, type: {namedType: spec}}
    - {name: extra, type: {namedType: __untyped_deduced_}}
- name: meta
  map:
    fields:
    - {name: name, type: {scalar: string}}
    - {name: labels, type: {map: {elementType: {scalar: string}}}}
- name: spec
  map:
    fields:
    - {name: replicas, type: {scalar: numeric}}
    - name: env
      type: {list: {elementType: {namedType: envVar}, elementRelationship: associative, keys: [name]}}
    - name: finalizers
      type: {list: {elementType: {scalar: string}, elementRelationship: associative}}
    - name: tolerations
      type: {list: {elementType: {namedType: toleration}, elementRelationship: atomic}}
    - name: volumes
      type: {list: {elementType: {namedType: volume}, elementRelationship: associative, keys: [name]}}
- name: envVar
  map:
    fields:
    - {name: name, type: {scalar: string}}
    - {name: value, type: {scalar: string}}
- name: toleration
  map:
    fields:
    - {name: key, type: {scalar: string}}
- name: volume
  map:
    fields:
    - {name: name, type: {scalar: string}}
    - {name: emptyDir, type: {map: {fields: [{name: medium, type: {scalar: string}}]}}}
- name: __untyped_atomic_
  scalar: untyped
  list: {elementType: {namedType: __untyped_atomic_}, elementRelationship: atomic}
  map: {elementType: {namedType: __untyped_atomic_}, elementRelationship: atomic}
- name: __untyped_deduced_
  scalar: untyped
  list: {elementType: {namedType: __untyped_atomic_}, elementRelationship: atomic}
  map: {elementType: {namedType: __untyped_deduced_}, elementRelationship: separable}
`

const testLive = `
apiVersion: v1
kind: Thing
metadata: {name: t, labels: {a: b}}
data: {k: v}
spec:
  replicas: 1
  env: [{name: A, value: "1"}, {name: B, value: "2"}]
  finalizers: [x, z]
  tolerations: [{key: a}]
  volumes: [{name: cache, emptyDir: {}}]
extra: {free: {form: [1, 2]}}
`

func testTypedSchema(t *testing.T) (*typedSchema, map[string]interface{}) {
	t.Helper()
	parser, err := typed.NewParser(testSchemaYAML)
	if err != nil {
		t.Fatal(err)
	}
	doc := decodeJSON(t, toJSON(t, testLive)).(map[string]interface{})
	tv, err := parser.Type("root").FromUnstructured(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &typedSchema{info: ownershipcore.SchemaInfoOf(tv)}, doc
}

// typedSchema answers from the schema: structs, map-list keys, and the
// managedFields path a JSON pointer names (items of map lists by key, of
// sets by value, atomic lists whole).
func TestTypedSchema(t *testing.T) {
	s, doc := testTypedSchema(t)
	for _, tc := range []struct {
		pointer  string
		isStruct bool
		keys     []string
		field    string // "" when the pointer names no field of doc
	}{
		{pointer: "/spec", isStruct: true, field: ".spec"},
		{pointer: "/spec/replicas", field: ".spec.replicas"},
		{pointer: "/spec/env", keys: []string{"name"}, field: ".spec.env"},
		{pointer: "/spec/env/1", isStruct: true, field: `.spec.env[name="B"]`},
		{pointer: "/spec/env/1/value", field: `.spec.env[name="B"].value`},
		{pointer: "/spec/env/-", isStruct: true},
		{pointer: "/spec/env/7", isStruct: true}, // the schema is the same for every position
		{pointer: "/spec/finalizers/1", field: `.spec.finalizers[="z"]`},
		{pointer: "/spec/tolerations/0/key", field: ".spec.tolerations"},
		{pointer: "/spec/volumes/0/emptyDir", isStruct: true, field: `.spec.volumes[name="cache"].emptyDir`},
		{pointer: "/data", field: ".data"},
		{pointer: "/data/k", field: ".data.k"},
		{pointer: "/data/missing"},
		{pointer: "/metadata/labels", field: ".metadata.labels"},
		{pointer: "/extra/free", field: ".extra.free"},
		{pointer: "/extra/free/form/1", field: ".extra.free.form"},
		{pointer: "/nope"},
	} {
		t.Run(tc.pointer, func(t *testing.T) {
			path, err := parsePointer(tc.pointer)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.IsStruct(path); got != tc.isStruct {
				t.Errorf("IsStruct = %v", got)
			}
			if got := s.ListKeys(path); !reflect.DeepEqual(got, tc.keys) {
				t.Errorf("ListKeys = %v, want %v", got, tc.keys)
			}
			p, ok := s.fieldPath(doc, path)
			switch {
			case tc.field == "" && ok:
				t.Errorf("fieldPath = %s, want none", ownershipcore.FormatPath(p))
			case tc.field != "" && !ok:
				t.Errorf("fieldPath: none, want %s", tc.field)
			case tc.field != "" && ownershipcore.FormatPath(p) != tc.field:
				t.Errorf("fieldPath = %s, want %s", ownershipcore.FormatPath(p), tc.field)
			}
		})
	}
}

// owned: a path is the patch's own when its Apply entry exists and it or
// the recorded fields of this target hold the field, one below it, or the
// atomic field above it.
func TestTypedSchemaOwned(t *testing.T) {
	s, doc := testTypedSchema(t)
	live := &unstructured.Unstructured{Object: doc}
	live.SetUID("u1")
	entry := func(manager string, op metav1.ManagedFieldsOperationType, paths ...string) metav1.ManagedFieldsEntry {
		set, err := ownershipcore.ParsePathSet(paths)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ownershipcore.EncodeFields(set)
		if err != nil {
			t.Fatal(err)
		}
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: f}
	}
	recorded, err := ownershipcore.ParsePathSet([]string{".spec.replicas"})
	if err != nil {
		t.Fatal(err)
	}
	recordedV1, err := ownershipcore.EncodeFields(recorded)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		uid     string // status.targetUID
		owned   []string
		notOwn  []string
	}{
		{
			name:   "no entry of ours: nothing",
			uid:    "u1",
			notOwn: []string{"/spec/replicas", "/spec/env/1/value"},
		},
		{
			name:    "our Apply entry and the recorded fields",
			entries: []metav1.ManagedFieldsEntry{entry("fp", metav1.ManagedFieldsOperationApply, `.spec.env[name="B"].value`, ".spec.tolerations")},
			uid:     "u1",
			owned:   []string{"/spec/env/1/value", "/spec/env/1", "/spec/env", "/spec/tolerations/0/key", "/spec/replicas"},
			notOwn:  []string{"/spec/env/0/value", "/spec/finalizers/0", "/data/k"},
		},
		{
			name:    "recorded fields of another target do not count",
			entries: []metav1.ManagedFieldsEntry{entry("fp", metav1.ManagedFieldsOperationApply, ".data.k")},
			uid:     "u0",
			owned:   []string{"/data/k"},
			notOwn:  []string{"/spec/replicas"},
		},
		{
			name:    "an Update entry of ours is not an application",
			entries: []metav1.ManagedFieldsEntry{entry("fp", metav1.ManagedFieldsOperationUpdate, ".spec.replicas")},
			uid:     "u1",
			notOwn:  []string{"/spec/replicas"},
		},
		{
			name:    "another manager's entry is not ours",
			entries: []metav1.ManagedFieldsEntry{entry("helm", metav1.ManagedFieldsOperationApply, ".spec.replicas")},
			uid:     "u1",
			notOwn:  []string{"/spec/replicas"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live.SetManagedFields(tc.entries)
			st := &v1alpha1.FieldPatchStatus{TargetUID: tc.uid, RecordedFields: recordedV1}
			owned, err := s.owned(live, st, "fp")
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.owned {
				path, _ := parsePointer(p)
				if !owned(doc, path) {
					t.Errorf("%s not owned", p)
				}
			}
			for _, p := range tc.notOwn {
				path, _ := parsePointer(p)
				if owned(doc, path) {
					t.Errorf("%s owned", p)
				}
			}
		})
	}
}

// TestCountLeaves: CountLeaves counts what Leaves lists.
func TestCountLeaves(t *testing.T) {
	for _, paths := range [][]string{
		nil,
		{".apiVersion", ".kind", ".metadata.name", ".metadata.namespace"},
		{".apiVersion", ".kind", ".metadata.name", ".data.a", ".data.b"},
		{".metadata.labels.name", ".metadata.namespace", `.spec.containers[name="app"].env[name="A"].value`, ".spec.kind"},
		{".metadata", ".metadata.name", ".kind.apiVersion"},
	} {
		set, err := fieldset.ParsePathSet(paths)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := CountLeaves(set), len(Leaves(set)); got != want {
			t.Errorf("CountLeaves(%v) = %d, Leaves lists %d", paths, got, want)
		}
	}
	if CountLeaves(nil) != 0 {
		t.Error("CountLeaves(nil) != 0")
	}
}
