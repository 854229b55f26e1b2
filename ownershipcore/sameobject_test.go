/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// sameObject decides whether an apply would write: content and managed
// fields, in order, but not their times.
func TestSameObject(t *testing.T) {
	const base = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  resourceVersion: "7"
  managedFields:
  - manager: helm
    operation: Apply
    apiVersion: v1
    time: "2026-01-01T00:00:00Z"
    fieldsType: FieldsV1
    fieldsV1: {"f:data": {"f:a": {}}}
  - manager: fieldops-fieldpatch/ns/p
    operation: Apply
    apiVersion: v1
    time: "2026-01-01T00:00:00Z"
    fieldsType: FieldsV1
    fieldsV1: {"f:data": {"f:b": {}}}
data: {a: "1", b: "2"}
`
	for _, tc := range []struct {
		name  string
		other string // base with these lines replaced: old=>new
		same  bool
	}{
		{"identical", "", true},
		{"only a time differs", `time: "2026-01-01T00:00:00Z"
    fieldsType: FieldsV1
    fieldsV1: {"f:data": {"f:b": {}}}=>time: "2026-11-22T10:00:00Z"
    fieldsType: FieldsV1
    fieldsV1: {"f:data": {"f:b": {}}}`, true},
		{"a field set differs", `{"f:data": {"f:b": {}}}=>{"f:data": {"f:b": {}, "f:c": {}}}`, false},
		{"an operation differs", `operation: Apply
    apiVersion: v1
    time: "2026-01-01T00:00:00Z"
    fieldsType: FieldsV1
    fieldsV1: {"f:data": {"f:b": {}}}=>operation: Update
    apiVersion: v1
    time: "2026-01-01T00:00:00Z"
    fieldsType: FieldsV1
    fieldsV1: {"f:data": {"f:b": {}}}`, false},
		{"a value differs", `data: {a: "1", b: "2"}=>data: {a: "1", b: "3"}`, false},
		{"an entry more", `data: {a: "1", b: "2"}=>  - {manager: kubectl, operation: Update, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {}}}
data: {a: "1", b: "2"}`, false},
		{"no managed fields", "  managedFields:=>  managedFieldsGone:", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := parse(t, base), parse(t, base)
			if tc.other != "" {
				old, repl, _ := strings.Cut(tc.other, "=>")
				if !strings.Contains(base, old) {
					t.Fatalf("%q is not in the base object", old)
				}
				b = parse(t, strings.Replace(base, old, repl, 1))
			}
			ca, cb := a.DeepCopy(), b.DeepCopy()
			if got := sameObject(a, b); got != tc.same {
				t.Fatalf("sameObject = %v, want %v", got, tc.same)
			}
			if got := sameObject(b, a); got != tc.same {
				t.Fatalf("sameObject (swapped) = %v, want %v", got, tc.same)
			}
			if !equality.Semantic.DeepEqual(a, ca) || !equality.Semantic.DeepEqual(b, cb) {
				t.Fatal("sameObject changed its arguments")
			}
		})
	}
}

func parse(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// hasNull finds a null anywhere but in status: the one-patch give-back
// never writes one.
func TestHasNull(t *testing.T) {
	for _, tc := range []struct {
		obj  string
		want bool
	}{
		{`{"spec": {"a": {"b": 1}, "l": [{"x": "y"}]}}`, false},
		{`{"spec": {"a": null}}`, true},
		{`{"spec": {"l": [{"x": null}]}}`, true},
		{`{"spec": {"l": [null]}}`, true},
		{`{"status": {"a": null}, "spec": {}}`, false},
	} {
		var m map[string]interface{}
		if err := yaml.Unmarshal([]byte(tc.obj), &m); err != nil {
			t.Fatal(err)
		}
		if got := hasNull(m); got != tc.want {
			t.Errorf("hasNull(%s) = %v, want %v", tc.obj, got, tc.want)
		}
	}
}
