/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// owned is Owners's answer, comparable: each entry's key, time and field
// set (as its JSON), or the error.
func owned(t *testing.T, read func() (ManagedFields, error)) string {
	t.Helper()
	out, err := read()
	if err != nil {
		return "error: " + err.Error()
	}
	s := fmt.Sprintf("%d entries", len(out))
	for _, e := range out {
		fields, err := e.Fields.ToJSON()
		if err != nil {
			t.Fatal(err)
		}
		when := "no time"
		if e.Time != nil {
			when = e.Time.String() + " " + e.Time.Location().String()
		}
		s += fmt.Sprintf("\n%s %s %s", e.ManagerKey, when, fields)
	}
	return s
}

// sameAsConverter checks that Owners reads content's managed fields as
// obj.GetManagedFields and decodeEntries do.
func sameAsConverter(t *testing.T, content map[string]interface{}) {
	t.Helper()
	u := &unstructured.Unstructured{Object: content}
	fast := owned(t, func() (ManagedFields, error) { return Owners(u) })
	slow := owned(t, func() (ManagedFields, error) { return decodeEntries(u.GetManagedFields()) })
	if fast != slow {
		raw, _ := json.Marshal(content)
		t.Fatalf("Owners of %s:\n%s\nthe converter's reading:\n%s", raw, fast, slow)
	}
}

func withEntries(entries ...interface{}) map[string]interface{} {
	return map[string]interface{}{"metadata": map[string]interface{}{"name": "x", "managedFields": entries}}
}

// TestOwnersReadsContentAsTheConverter: the shapes the direct reading of
// an unstructured object's entries takes, and the ones it leaves to the
// converter (which then yields no entry, or the FieldsV1 error), read the
// same as runtime.DefaultUnstructuredConverter's reading.
func TestOwnersReadsContentAsTheConverter(t *testing.T) {
	entry := func(k string, v interface{}) map[string]interface{} {
		e := map[string]interface{}{"manager": "helm", "operation": "Apply", "apiVersion": "v1",
			"time": "2026-11-26T10:00:00Z", "fieldsType": "FieldsV1",
			"fieldsV1": map[string]interface{}{"f:data": map[string]interface{}{"f:a": map[string]interface{}{}}}}
		if k != "" {
			e[k] = v
		}
		return e
	}
	for name, content := range map[string]map[string]interface{}{
		"the apiserver's shape":     withEntries(entry("", nil), entry("manager", "kubectl")),
		"no managed fields":         {"metadata": map[string]interface{}{"name": "x"}},
		"empty time":                withEntries(entry("time", "")),
		"time null as a string":     withEntries(entry("time", "null")),
		"time null":                 withEntries(entry("time", nil)),
		"time a number":             withEntries(entry("time", int64(5))),
		"time in an offset":         withEntries(entry("time", "2026-11-26T10:00:00+02:00")),
		"no time":                   withEntries(entry("time", nil), func() map[string]interface{} { e := entry("", nil); delete(e, "time"); return e }()),
		"a subresource":             withEntries(entry("subresource", "status")),
		"manager a number":          withEntries(entry("manager", int64(3))),
		"an unknown key":            withEntries(entry("other", map[string]interface{}{})),
		"fieldsV1 a string":         withEntries(entry("fieldsV1", "f:a")),
		"fieldsV1 null":             withEntries(entry("fieldsV1", nil)),
		"fieldsV1 empty":            withEntries(entry("fieldsV1", map[string]interface{}{})),
		"a child not an object":     withEntries(entry("fieldsV1", map[string]interface{}{"f:a": int64(5)})),
		"an unknown element kind":   withEntries(entry("fieldsV1", map[string]interface{}{"z:a": map[string]interface{}{}, "f:b": map[string]interface{}{}})),
		"a key that does not parse": withEntries(entry("fieldsV1", map[string]interface{}{"k:{not json": map[string]interface{}{}})),
		"the field and children": withEntries(entry("fieldsV1", map[string]interface{}{"f:a": map[string]interface{}{
			".": map[string]interface{}{}, "f:b": map[string]interface{}{}}})),
		"only the dot":        withEntries(entry("fieldsV1", map[string]interface{}{"f:a": map[string]interface{}{".": map[string]interface{}{}}})),
		"an item not a map":   withEntries(entry("", nil), "helm"),
		"managedFields a map": {"metadata": map[string]interface{}{"managedFields": map[string]interface{}{}}},
	} {
		t.Run(name, func(t *testing.T) { sameAsConverter(t, content) })
	}
}

// TestOwnersReadsRandomSetsAsTheConverter draws field sets of every kind
// of path element and checks the direct reading against the converter's.
func TestOwnersReadsRandomSetsAsTheConverter(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 500; i++ {
		var entries []interface{}
		for j := 0; j < 1+r.Intn(3); j++ {
			raw, err := randomSet(r).ToJSON()
			if err != nil {
				t.Fatal(err)
			}
			var fields map[string]interface{}
			if err := json.Unmarshal(raw, &fields); err != nil {
				t.Fatal(err)
			}
			entries = append(entries, map[string]interface{}{"manager": fmt.Sprintf("m%d", j), "operation": "Apply",
				"apiVersion": "apps/v1", "time": "2026-11-26T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields})
		}
		content := withEntries(entries...)
		if _, read, _ := ownersOf(content); !read {
			t.Fatalf("entries in the apiserver's shape left to the converter: %v", content)
		}
		sameAsConverter(t, content)
	}
}

// randomSet is a set of up to 12 paths of up to 4 elements of every kind.
func randomSet(r *rand.Rand) *fieldpath.Set {
	s := fieldpath.NewSet()
	for i := 0; i < r.Intn(13); i++ {
		var p fieldpath.Path
		for j := 0; j <= r.Intn(4); j++ {
			name := string(rune('a' + r.Intn(4)))
			switch r.Intn(4) {
			case 0:
				p = append(p, fieldpath.PathElement{Key: &value.FieldList{{Name: "name", Value: value.NewValueInterface(name)}}})
			case 1:
				v := value.NewValueInterface(name)
				p = append(p, fieldpath.PathElement{Value: &v})
			case 2:
				n := r.Intn(3)
				p = append(p, fieldpath.PathElement{Index: &n})
			default:
				p = append(p, fieldpath.PathElement{FieldName: &name})
			}
		}
		s.Insert(p)
	}
	return s
}

// BenchmarkOwners reads the managed fields of a Deployment with two
// entries (helm's and one more manager's) directly (Owners) and through
// the converter's reading (GetManagedFields), side by side.
func BenchmarkOwners(b *testing.B) {
	fields := func(raw string) map[string]interface{} {
		var m map[string]interface{}
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			b.Fatal(err)
		}
		return m
	}
	helm := fields(`{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}`)
	patch := fields(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:env":{"k:{\"name\":\"PROXY\"}":{".":{},"f:name":{},"f:value":{}}},"f:name":{}}}}}}}`)
	u := &unstructured.Unstructured{Object: withEntries(
		map[string]interface{}{"manager": "helm", "operation": "Apply", "apiVersion": "apps/v1", "time": "2026-11-26T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": helm},
		map[string]interface{}{"manager": "fieldops-fp", "operation": "Apply", "apiVersion": "apps/v1", "time": "2026-11-26T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": patch})}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := Owners(u); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("converter", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeEntries(u.GetManagedFields()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestEncodedAsTheConverter: State.Encoded writes the entries as Encode
// and SetManagedFields (the converter) would, for random field sets,
// times (none, zero, local) and subresources, and Owners reads them back.
func TestEncodedAsTheConverter(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 500; i++ {
		var owners ManagedFields
		for j := 0; j < r.Intn(4); j++ {
			e := Entry{ManagerKey: ManagerKey{Manager: fmt.Sprintf("m%d", j), Operation: "Apply", APIVersion: "apps/v1"}, Fields: randomSet(r)}
			switch r.Intn(4) {
			case 0:
				e.Time = &metav1.Time{}
			case 1:
				e.Time = &metav1.Time{Time: time.Date(2026, 11, 26, 10, 0, r.Intn(60), 0, time.FixedZone("x", 7200))}
			case 2:
				e.Subresource, e.Operation, e.APIVersion = "status", "Update", ""
			}
			owners = append(owners, e)
		}
		s := State{Object: &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap"}}, Owners: owners}
		got, err := s.Encoded()
		if err != nil {
			t.Fatal(err)
		}
		entries, err := owners.Encode()
		if err != nil {
			t.Fatal(err)
		}
		want := s.Object.DeepCopy()
		if len(entries) > 0 {
			want.SetManagedFields(entries)
		}
		if !reflect.DeepEqual(got.Object, want.Object) {
			g, _ := json.Marshal(got.Object)
			w, _ := json.Marshal(want.Object)
			t.Fatalf("Encoded:\n%s\nthe converter's:\n%s", g, w)
		}
		sameAsConverter(t, got.Object)
	}
}
