/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"bytes"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// ManagerKey identifies one managed fields entry: the field manager, its
// operation (Apply or Update), and the subresource it wrote through. For
// Update entries the apiVersion is part of the identity too, as in the
// apiserver's encoding.
type ManagerKey struct {
	Manager     string
	Operation   metav1.ManagedFieldsOperationType
	APIVersion  string
	Subresource string
}

// String prints the key as `"manager" (Operation[ apiVersion][ /subresource])`.
func (k ManagerKey) String() string {
	s := fmt.Sprintf("%q (%s", k.Manager, k.Operation)
	if k.Operation == metav1.ManagedFieldsOperationUpdate {
		s += " " + k.APIVersion
	}
	if k.Subresource != "" {
		s += " /" + k.Subresource
	}
	return s + ")"
}

// Entry is one decoded managed fields entry.
type Entry struct {
	ManagerKey
	// APIVersion is the version the fields are expressed in (for Apply
	// entries too).
	Time   *metav1.Time
	Fields *fieldpath.Set
}

// ManagedFields is every entry of an object's metadata.managedFields, in
// the object's order.
type ManagedFields []Entry

// Owners decodes every managedFields entry of obj into a field set, in
// obj's order. It returns an error when an entry's FieldsV1 does not parse
// (DecodeFields). The entries are read with obj.GetManagedFields: of an
// unstructured object, runtime.DefaultUnstructuredConverter's reading,
// which yields no entry at all when an item does not convert (an item or
// a value of the wrong kind, a time that does not parse).
func Owners(obj metav1.Object) (ManagedFields, error) {
	return decodeEntries(obj.GetManagedFields())
}

// decodeEntries decodes managed fields entries (see Owners).
func decodeEntries(entries []metav1.ManagedFieldsEntry) (ManagedFields, error) {
	out := make(ManagedFields, 0, len(entries))
	for _, e := range entries {
		set, err := DecodeFields(e.FieldsV1)
		if err != nil {
			return nil, fmt.Errorf("managed fields of %q: %w", e.Manager, err)
		}
		out = append(out, Entry{
			ManagerKey: ManagerKey{Manager: e.Manager, Operation: e.Operation, APIVersion: e.APIVersion, Subresource: e.Subresource},
			Time:       e.Time,
			Fields:     set,
		})
	}
	return out, nil
}

// DecodeFields parses a FieldsV1 value (KEP-555's "f:"/"k:"/"v:"/"i:" form)
// into a field set; nil is the empty set.
func DecodeFields(f *metav1.FieldsV1) (*fieldpath.Set, error) {
	set := fieldpath.NewSet()
	if f == nil || len(f.GetRawBytes()) == 0 {
		return set, nil
	}
	if err := set.FromJSON(bytes.NewReader(f.GetRawBytes())); err != nil {
		return nil, fmt.Errorf("decode FieldsV1: %w", err)
	}
	return set, nil
}

// EncodeFields is the inverse of DecodeFields.
func EncodeFields(s *fieldpath.Set) (*metav1.FieldsV1, error) {
	raw, err := s.ToJSON()
	if err != nil {
		return nil, fmt.Errorf("encode FieldsV1: %w", err)
	}
	out := &metav1.FieldsV1{}
	out.SetRawBytes(raw)
	return out, nil
}

// Encode turns the entries back into metadata.managedFields; empty entries
// are dropped, as the apiserver drops them.
func (m ManagedFields) Encode() ([]metav1.ManagedFieldsEntry, error) {
	out := make([]metav1.ManagedFieldsEntry, 0, len(m))
	for _, e := range m {
		if e.Fields == nil || e.Fields.Empty() {
			continue
		}
		f, err := EncodeFields(e.Fields)
		if err != nil {
			return nil, err
		}
		out = append(out, metav1.ManagedFieldsEntry{
			Manager: e.Manager, Operation: e.Operation, APIVersion: e.APIVersion,
			Subresource: e.Subresource, Time: e.Time, FieldsType: "FieldsV1", FieldsV1: f,
		})
	}
	return out, nil
}

// Applied returns the Apply entry of manager on the main resource, or nil.
func (m ManagedFields) Applied(manager string) *Entry {
	for i := range m {
		if m[i].Manager == manager && m[i].Operation == metav1.ManagedFieldsOperationApply && m[i].Subresource == "" {
			return &m[i]
		}
	}
	return nil
}

// OwnersOf returns, for each entry other than except, the part of fields it
// owns; entries owning none of them are left out.
func (m ManagedFields) OwnersOf(fields *fieldpath.Set, except string) ManagedFields {
	var out ManagedFields
	for _, e := range m {
		if e.Manager == except {
			continue
		}
		if in := e.Fields.Intersection(fields); !in.Empty() {
			out = append(out, Entry{ManagerKey: e.ManagerKey, Time: e.Time, Fields: in})
		}
	}
	return out
}

// Managers returns the distinct manager names of the entries, sorted.
func (m ManagedFields) Managers() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range m {
		if !seen[e.Manager] {
			seen[e.Manager] = true
			out = append(out, e.Manager)
		}
	}
	sort.Strings(out)
	return out
}

// ByPath returns, for every leaf field (FormatPath form), the entries that
// own it as "manager/Operation", in the order of the entries: the view
// kubectl-blame gives, per field.
func (m ManagedFields) ByPath() map[string][]string {
	out := map[string][]string{}
	for _, e := range m {
		for _, p := range FormatSet(e.Fields) {
			out[p] = append(out[p], e.Manager+"/"+string(e.Operation))
		}
	}
	return out
}

// Union is the union of the entries' field sets.
func (m ManagedFields) Union() *fieldpath.Set {
	out := fieldpath.NewSet()
	for _, e := range m {
		out = out.Union(e.Fields)
	}
	return out
}

// ManagerNames returns the distinct field manager names of obj's managed
// fields entries, in their order, without decoding any field set.
func ManagerNames(obj metav1.Object) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range obj.GetManagedFields() {
		if !seen[e.Manager] {
			seen[e.Manager] = true
			out = append(out, e.Manager)
		}
	}
	return out
}

// HasManager reports whether manager has a managed fields entry on obj.
func HasManager(obj metav1.Object, manager string) bool {
	for _, e := range obj.GetManagedFields() {
		if e.Manager == manager {
			return true
		}
	}
	return false
}
