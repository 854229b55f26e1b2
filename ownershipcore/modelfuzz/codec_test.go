/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package modelfuzz

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"

	"github.com/fieldops/fieldops/ownershipcore"
)

// sameEntries compares two decodings entry by entry: keys, times and field
// sets.
func sameEntries(a, b ownershipcore.ManagedFields) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d entries, want %d", len(a), len(b))
	}
	for i := range a {
		if a[i].ManagerKey != b[i].ManagerKey || !reflect.DeepEqual(a[i].Time, b[i].Time) || !a[i].Fields.Equals(b[i].Fields) {
			return fmt.Errorf("entry %d: %+v, want %+v", i, a[i], b[i])
		}
	}
	return nil
}

// nonEmpty is mf without the entries that own no field (Encode drops
// them, as the apiserver does).
func nonEmpty(mf ownershipcore.ManagedFields) ownershipcore.ManagedFields {
	var out ownershipcore.ManagedFields
	for _, e := range mf {
		if e.Fields != nil && !e.Fields.Empty() {
			out = append(out, e)
		}
	}
	return out
}

// TestManagedFieldsCodec checks, on every state of 100 model sequences,
// that State.Encoded writes managed fields the apiserver accepts
// (managedfields.ValidateManagedFields) and that Owners reads back the
// state's entries, in order, with their keys, times and field sets (the
// empty ones dropped).
func TestManagedFieldsCodec(t *testing.T) {
	r, err := NewRunner()
	if err != nil {
		t.Fatal(err)
	}
	r.Observe = func(s ownershipcore.State) error {
		enc, err := s.Encoded()
		if err != nil {
			return err
		}
		if err := managedfields.ValidateManagedFields(enc.GetManagedFields()); err != nil {
			return fmt.Errorf("Encoded: %w", err)
		}
		owners, err := ownershipcore.Owners(enc)
		if err != nil {
			return err
		}
		if err := sameEntries(owners, nonEmpty(s.Owners)); err != nil {
			return fmt.Errorf("Owners of Encoded: %w", err)
		}
		return nil
	}
	for seed := int64(1); seed <= 100; seed++ {
		if err := r.Run(Generate(seed, 12)); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// describe prints a decoding as `key[ at time] fieldsV1` per entry, joined
// by "; ", or the error.
func describe(mf ownershipcore.ManagedFields, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	parts := make([]string, 0, len(mf))
	for _, e := range mf {
		s := e.ManagerKey.String()
		if e.Time != nil {
			s += " at " + e.Time.UTC().Format("2006-01-02T15:04:05Z")
		}
		j, err := e.Fields.ToJSON()
		if err != nil {
			return "error: " + err.Error()
		}
		parts = append(parts, s+" "+string(j))
	}
	return strings.Join(parts, "; ")
}

// TestManagedFieldsCodecShapes pins what Owners reads from managed fields
// of shapes the apiserver does not write (apimachinery's converter: an item
// that does not convert leaves no entry at all; a FieldsV1 value that does
// not parse is an error), and that State.Encoded of what it reads reads
// back the same (the empty entries dropped).
func TestManagedFieldsCodecShapes(t *testing.T) {
	fields := func(m map[string]interface{}) map[string]interface{} {
		return map[string]interface{}{"manager": "m", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": m}
	}
	leaf := map[string]interface{}{}
	const parseError = `error: managed fields of "m": decode FieldsV1: `
	cases := map[string]struct {
		managedFields interface{}
		// want is describe's form of Owners' result; an error is
		// matched by its start.
		want string
	}{
		"no list":          {nil, ""},
		"empty list":       {[]interface{}{}, ""},
		"not a list":       {"x", ""},
		"item not a map":   {[]interface{}{"x"}, ""},
		"unknown key":      {[]interface{}{map[string]interface{}{"manager": "m", "other": "x"}}, `"m" () {}`},
		"number manager":   {[]interface{}{map[string]interface{}{"manager": int64(1)}}, ""},
		"null time":        {[]interface{}{map[string]interface{}{"manager": "m", "time": nil}}, `"m" () {}`},
		"bad time":         {[]interface{}{map[string]interface{}{"manager": "m", "time": "yesterday"}}, ""},
		"time":             {[]interface{}{map[string]interface{}{"manager": "m", "time": "2026-01-02T03:04:05Z"}}, `"m" () at 2026-01-02T03:04:05Z {}`},
		"offset time":      {[]interface{}{map[string]interface{}{"manager": "m", "time": "2026-01-02T03:04:05+02:00"}}, `"m" () at 2026-01-02T01:04:05Z {}`},
		"fields not a map": {[]interface{}{map[string]interface{}{"manager": "m", "fieldsV1": "x"}}, parseError},
		"leaf not a map":   {[]interface{}{fields(map[string]interface{}{"f:spec": "x"})}, parseError},
		"no fields":        {[]interface{}{map[string]interface{}{"manager": "m", "operation": "Update"}}, `"m" (Update ) {}`},
		"empty fields":     {[]interface{}{fields(leaf)}, `"m" (Apply) {}`},
		"member and child": {[]interface{}{fields(map[string]interface{}{"f:spec": map[string]interface{}{".": leaf, "f:a": leaf}})},
			`"m" (Apply) {"f:spec":{".":{},"f:a":{}}}`},
		"dot with content": {[]interface{}{fields(map[string]interface{}{"f:spec": map[string]interface{}{".": map[string]interface{}{"f:x": leaf}, "f:a": leaf}})},
			`"m" (Apply) {"f:spec":{".":{},"f:a":{}}}`},
		"unknown element": {[]interface{}{fields(map[string]interface{}{"f:spec": map[string]interface{}{"x:a": leaf}})},
			`"m" (Apply) {"f:spec":{}}`},
		"unknown and child": {[]interface{}{fields(map[string]interface{}{"f:spec": map[string]interface{}{"x:a": leaf, "f:b": leaf}})},
			`"m" (Apply) {"f:spec":{"f:b":{}}}`},
		"bad element": {[]interface{}{fields(map[string]interface{}{"k:{bad": leaf})}, parseError},
		"keys and values": {[]interface{}{fields(map[string]interface{}{"f:spec": map[string]interface{}{
			"f:mapList": map[string]interface{}{`k:{"name":"n1"}`: map[string]interface{}{".": leaf, "f:name": leaf}},
			"f:setList": map[string]interface{}{`v:"x"`: leaf, `v:"<&>"`: leaf}, "i:0": leaf}})},
			`"m" (Apply) {"f:spec":{"f:mapList":{"k:{\"name\":\"n1\"}":{".":{},"f:name":{}}},"f:setList":{"v:\"\\u003c\\u0026\\u003e\"":{},"v:\"x\"":{}},"i:0":{}}}`},
		// The converter writes the keys sorted, so the second spelling
		// (`k:{"a":"b"}`) is read last and replaces the first.
		"one element twice": {[]interface{}{fields(map[string]interface{}{`k:{"a":"b"}`: map[string]interface{}{"f:x": leaf}, `k:{"a": "b"}`: map[string]interface{}{"f:y": leaf}})},
			`"m" (Apply) {"k:{\"a\":\"b\"}":{"f:x":{}}}`},
		"invalid utf-8": {[]interface{}{fields(map[string]interface{}{"f:\xff": leaf})}, `"m" (Apply) {"f:` + "\ufffd" + `":{}}`},
		"two entries": {[]interface{}{fields(map[string]interface{}{"f:a": leaf}), map[string]interface{}{"manager": "n", "operation": "Update", "apiVersion": "v1", "subresource": "status"}},
			`"m" (Apply) {"f:a":{}}; "n" (Update v1 /status) {}`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{"name": "w"}}}
			if c.managedFields != nil {
				u.Object["metadata"].(map[string]interface{})["managedFields"] = c.managedFields
			}
			got, err := ownershipcore.Owners(u)
			if d := describe(got, err); d != c.want && (err == nil || !strings.HasPrefix(d, c.want) || c.want == "") {
				t.Fatalf("Owners: %s\nwant %s", d, c.want)
			}
			if err != nil {
				return
			}
			enc, err := ownershipcore.State{Object: u, Owners: got}.Encoded()
			if err != nil {
				t.Fatal(err)
			}
			back, err := ownershipcore.Owners(enc)
			if err != nil {
				t.Fatal(err)
			}
			if err := sameEntries(back, nonEmpty(got)); err != nil {
				t.Fatalf("Owners of Encoded: %v", err)
			}
		})
	}
	// A zero time is written as the converter writes it (null) and read
	// back as no time.
	owners, err := ownershipcore.Owners(&unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{
		"managedFields": []interface{}{fields(map[string]interface{}{"f:a": leaf})}}}})
	if err != nil {
		t.Fatal(err)
	}
	owners[0].Time = &metav1.Time{}
	enc, err := ownershipcore.State{Object: &unstructured.Unstructured{Object: map[string]interface{}{}}, Owners: owners}.Encoded()
	if err != nil {
		t.Fatal(err)
	}
	items, _, _ := unstructured.NestedSlice(enc.Object, "metadata", "managedFields")
	if len(items) != 1 || !hasNull(items[0], "time") {
		t.Fatalf("Encoded with a zero time: %#v, want one entry with a null time", items)
	}
	back, err := ownershipcore.Owners(enc)
	if err != nil || len(back) != 1 || back[0].Time != nil {
		t.Fatalf("Owners of an entry with a null time: %s, want one entry without a time", describe(back, err))
	}
}

// hasNull reports whether item is a map holding key with a null value.
func hasNull(item interface{}, key string) bool {
	m, ok := item.(map[string]interface{})
	if !ok {
		return false
	}
	v, has := m[key]
	return has && v == nil
}
