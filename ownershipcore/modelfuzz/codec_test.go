/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package modelfuzz

import (
	"fmt"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/ownershipcore"
)

// decodeSlow is Owners as apimachinery's converter reads managed fields
// (Unstructured.GetManagedFields, then each FieldsV1 parsed from JSON).
func decodeSlow(u *unstructured.Unstructured) (ownershipcore.ManagedFields, error) {
	var out ownershipcore.ManagedFields
	for _, e := range u.GetManagedFields() {
		set, err := ownershipcore.DecodeFields(e.FieldsV1)
		if err != nil {
			return nil, fmt.Errorf("managed fields of %q: %w", e.Manager, err)
		}
		out = append(out, ownershipcore.Entry{
			ManagerKey: ownershipcore.ManagerKey{Manager: e.Manager, Operation: e.Operation, APIVersion: e.APIVersion, Subresource: e.Subresource},
			Time:       e.Time, Fields: set,
		})
	}
	return out, nil
}

// encodeSlow is State.Encoded as apimachinery's converter writes managed
// fields (Unstructured.SetManagedFields of ManagedFields.Encode).
func encodeSlow(s ownershipcore.State) (*unstructured.Unstructured, error) {
	entries, err := s.Owners.Encode()
	if err != nil {
		return nil, err
	}
	out := (&unstructured.Unstructured{Object: ownershipcore.WithoutManagedFields(s.Object.Object)}).DeepCopy()
	if len(entries) > 0 {
		out.SetManagedFields(entries)
	}
	return out, nil
}

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

// TestManagedFieldsCodec checks, on every state of a few hundred model
// sequences, that Owners and State.Encoded read and write managed fields
// exactly as apimachinery's converter does.
func TestManagedFieldsCodec(t *testing.T) {
	r, err := NewRunner()
	if err != nil {
		t.Fatal(err)
	}
	r.Observe = func(s ownershipcore.State) error {
		got, err := s.Encoded()
		if err != nil {
			return err
		}
		want, err := encodeSlow(s)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(got.Object, want.Object) {
			return fmt.Errorf("Encoded:\n%#v\nwant\n%#v", got.Object, want.Object)
		}
		owners, err := ownershipcore.Owners(got)
		if err != nil {
			return err
		}
		slow, err := decodeSlow(got)
		if err != nil {
			return err
		}
		if err := sameEntries(owners, slow); err != nil {
			return fmt.Errorf("Owners: %w", err)
		}
		var kept ownershipcore.ManagedFields
		for _, e := range s.Owners {
			if !e.Fields.Empty() {
				kept = append(kept, e)
			}
		}
		return sameEntries(owners, kept)
	}
	for seed := int64(1); seed <= 100; seed++ {
		if err := r.Run(Generate(seed, 12)); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// TestManagedFieldsCodecShapes checks Owners against apimachinery's
// converter on managed fields of shapes the apiserver does not write.
func TestManagedFieldsCodecShapes(t *testing.T) {
	fields := func(m map[string]interface{}) map[string]interface{} {
		return map[string]interface{}{"manager": "m", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": m}
	}
	leaf := map[string]interface{}{}
	cases := map[string]interface{}{
		"no list":           nil,
		"empty list":        []interface{}{},
		"not a list":        "x",
		"item not a map":    []interface{}{"x"},
		"unknown key":       []interface{}{map[string]interface{}{"manager": "m", "other": "x"}},
		"number manager":    []interface{}{map[string]interface{}{"manager": int64(1)}},
		"null time":         []interface{}{map[string]interface{}{"manager": "m", "time": nil}},
		"bad time":          []interface{}{map[string]interface{}{"manager": "m", "time": "yesterday"}},
		"time":              []interface{}{map[string]interface{}{"manager": "m", "time": "2026-01-02T03:04:05Z"}},
		"offset time":       []interface{}{map[string]interface{}{"manager": "m", "time": "2026-01-02T03:04:05+02:00"}},
		"fields not a map":  []interface{}{map[string]interface{}{"manager": "m", "fieldsV1": "x"}},
		"leaf not a map":    []interface{}{fields(map[string]interface{}{"f:spec": "x"})},
		"no fields":         []interface{}{map[string]interface{}{"manager": "m", "operation": "Update"}},
		"empty fields":      []interface{}{fields(leaf)},
		"member and child":  []interface{}{fields(map[string]interface{}{"f:spec": map[string]interface{}{".": leaf, "f:a": leaf}})},
		"dot with content":  []interface{}{fields(map[string]interface{}{"f:spec": map[string]interface{}{".": map[string]interface{}{"f:x": leaf}, "f:a": leaf}})},
		"unknown element":   []interface{}{fields(map[string]interface{}{"f:spec": map[string]interface{}{"x:a": leaf}})},
		"unknown and child": []interface{}{fields(map[string]interface{}{"f:spec": map[string]interface{}{"x:a": leaf, "f:b": leaf}})},
		"bad element":       []interface{}{fields(map[string]interface{}{"k:{bad": leaf})},
		"keys and values": []interface{}{fields(map[string]interface{}{"f:spec": map[string]interface{}{
			"f:mapList": map[string]interface{}{`k:{"name":"n1"}`: map[string]interface{}{".": leaf, "f:name": leaf}},
			"f:setList": map[string]interface{}{`v:"x"`: leaf, `v:"<&>"`: leaf}, "i:0": leaf}})},
		"one element twice": []interface{}{fields(map[string]interface{}{`k:{"a":"b"}`: map[string]interface{}{"f:x": leaf}, `k:{"a": "b"}`: map[string]interface{}{"f:y": leaf}})},
		"invalid utf-8":     []interface{}{fields(map[string]interface{}{"f:\xff": leaf})},
		"two entries":       []interface{}{fields(map[string]interface{}{"f:a": leaf}), map[string]interface{}{"manager": "n", "operation": "Update", "apiVersion": "v1", "subresource": "status"}},
	}
	for name, mf := range cases {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{"name": "w"}}}
			if mf != nil {
				u.Object["metadata"].(map[string]interface{})["managedFields"] = mf
			}
			got, gotErr := ownershipcore.Owners(u)
			want, wantErr := decodeSlow(u)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("error %v, want %v", gotErr, wantErr)
			}
			if err := sameEntries(got, want); err != nil {
				t.Fatal(err)
			}
			// Encoded writes back what the converter writes.
			if gotErr == nil {
				s := ownershipcore.State{Object: u, Owners: got}
				enc, err := s.Encoded()
				if err != nil {
					t.Fatal(err)
				}
				slow, err := encodeSlow(s)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(enc.Object, slow.Object) {
					t.Fatalf("Encoded:\n%#v\nwant\n%#v", enc.Object, slow.Object)
				}
			}
		})
	}
	// A zero time is written as the converter writes it (null).
	zero := ownershipcore.State{Object: &unstructured.Unstructured{Object: map[string]interface{}{}}}
	owners, err := ownershipcore.Owners(&unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{
		"managedFields": []interface{}{fields(map[string]interface{}{"f:a": leaf})}}}})
	if err != nil {
		t.Fatal(err)
	}
	owners[0].Time = &metav1.Time{}
	zero.Owners = owners
	enc, err := zero.Encoded()
	if err != nil {
		t.Fatal(err)
	}
	slow, err := encodeSlow(zero)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(enc.Object, slow.Object) {
		t.Fatalf("Encoded with a zero time:\n%#v\nwant\n%#v", enc.Object, slow.Object)
	}
}
