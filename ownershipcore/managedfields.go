/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
//
// An unstructured object's entries in the shape the apiserver writes them
// (every value a string, fieldsV1 an object) are read from its content
// directly (ownersOf), which gives the same entries without the JSON round
// trip of each entry and its FieldsV1; any other shape takes the reading
// above.
func Owners(obj metav1.Object) (ManagedFields, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if out, read, err := ownersOf(u.Object); read {
			return out, err
		}
	}
	return decodeEntries(obj.GetManagedFields())
}

// ownersOf decodes the managedFields entries of content, an unstructured
// object's content, when each is in the apiserver's shape; read is false
// (and nothing decoded) when one is not, or when a FieldsV1 does not parse,
// so that the caller's reading reports it.
func ownersOf(content map[string]interface{}) (out ManagedFields, read bool, err error) {
	field, found, err := unstructured.NestedFieldNoCopy(content, "metadata", "managedFields")
	items, isSlice := field.([]interface{})
	if !found || err != nil || !isSlice {
		return nil, false, nil
	}
	out = make(ManagedFields, 0, len(items))
	for _, item := range items {
		e, ok := entryOf(item)
		if !ok {
			return nil, false, nil
		}
		out = append(out, e)
	}
	return out, true, nil
}

// entryOf is one managedFields item as an Entry, when every value of it is
// a string but fieldsV1, an object.
func entryOf(item interface{}) (Entry, bool) {
	m, ok := item.(map[string]interface{})
	if !ok {
		return Entry{}, false
	}
	var str [6]string
	for i, key := range [...]string{"manager", "operation", "apiVersion", "subresource", "time", "fieldsType"} {
		v, present := m[key]
		if s, isString := v.(string); isString {
			str[i] = s
		} else if present {
			return Entry{}, false
		}
	}
	e := Entry{ManagerKey: ManagerKey{Manager: str[0], Operation: metav1.ManagedFieldsOperationType(str[1]), APIVersion: str[2], Subresource: str[3]}}
	if _, present := m["time"]; present {
		t, err := time.Parse(time.RFC3339, str[4]) // as metav1.Time.UnmarshalJSON
		if err != nil {
			return Entry{}, false
		}
		e.Time = &metav1.Time{Time: t.Local()}
	}
	e.Fields = fieldpath.NewSet()
	if f, present := m["fieldsV1"]; present {
		fm, isMap := f.(map[string]interface{})
		if !isMap {
			return Entry{}, false
		}
		set, _, ok := setOf(fm)
		if !ok {
			return Entry{}, false
		}
		if set != nil {
			e.Fields = set
		}
	}
	return e, true
}

// setOf reads a FieldsV1 object (KEP-555's "f:"/"k:"/"v:"/"i:" keys, "."
// for the field itself) as structured-merge-diff's Set.FromJSON does:
// children is nil when there is none, and a field whose object holds no
// child, or ".", is a member of its parent. A key of an unknown kind is
// left out, as FromJSON leaves it out; ok is false for a key that does not
// parse or a value that is not an object.
func setOf(m map[string]interface{}) (children *fieldpath.Set, isMember, ok bool) {
	for key, v := range m {
		if key == "." {
			isMember = true
			continue
		}
		pe, err := fieldpath.DeserializePathElement(key)
		if errors.Is(err, fieldpath.ErrUnknownPathElementType) {
			continue
		}
		sub, isMap := v.(map[string]interface{})
		if err != nil || !isMap || !canonicalKey(key, pe) {
			return nil, false, false
		}
		grandchildren, childIsMember, ok := setOf(sub)
		if !ok {
			return nil, false, false
		}
		if children == nil && (childIsMember || grandchildren != nil) {
			children = &fieldpath.Set{}
		}
		if childIsMember {
			children.Members.Insert(pe)
		}
		if grandchildren != nil {
			*children.Children.Descend(pe) = *grandchildren
		}
	}
	return children, isMember || children == nil, true
}

// canonicalKey reports whether key is valid UTF-8 and pe's own spelling
// (SerializePathElement's). Another spelling (a key list with spaces, an
// index with a leading zero) could name the same element as a second key
// of the object, and the converter's reading depends then on the order of
// the keys, as JSON sorts them; invalid UTF-8 it reads as U+FFFD: both
// are left to it.
func canonicalKey(key string, pe fieldpath.PathElement) bool {
	if !utf8.ValidString(key) {
		return false
	}
	if pe.FieldName != nil {
		return true // "f:" and the name, the only spelling
	}
	s, err := fieldpath.SerializePathElement(pe)
	return err == nil && s == key
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

// content is Encode's entries in an unstructured object's form of
// metadata.managedFields, as runtime.DefaultUnstructuredConverter turns
// each entry into one (SetManagedFields): the strings that are set, the
// time as metav1.Time.ToUnstructured gives it, and fieldsV1 as the object
// that Set.ToJSON writes (fieldsContent), without the JSON in between.
func (m ManagedFields) content() ([]interface{}, error) {
	out := make([]interface{}, 0, len(m))
	for _, e := range m {
		if e.Fields == nil || e.Fields.Empty() {
			continue
		}
		fields, err := fieldsContent(e.Fields, false)
		if err != nil {
			return nil, fmt.Errorf("encode FieldsV1: %w", err)
		}
		item := map[string]interface{}{"fieldsType": "FieldsV1", "fieldsV1": fields}
		for k, v := range map[string]string{"manager": e.Manager, "operation": string(e.Operation), "apiVersion": e.APIVersion, "subresource": e.Subresource} {
			if v != "" {
				item[k] = v
			}
		}
		if e.Time != nil {
			item["time"] = e.Time.ToUnstructured()
		}
		out = append(out, item)
	}
	return out, nil
}

// fieldsContent is s as the object Set.ToJSON writes (KEP-555's FieldsV1):
// a member is a key with an empty object, a child a key with its own
// fields, and a member that has children too holds "." (self, once it has
// a member or a child of its own).
func fieldsContent(s *fieldpath.Set, self bool) (map[string]interface{}, error) {
	out := map[string]interface{}{}
	children := 0
	s.Children.Iterate(func(fieldpath.PathElement) { children++ })
	if self && (s.Members.Size() > 0 || children > 0) {
		out["."] = map[string]interface{}{}
	}
	var err error
	s.Members.Iterate(func(pe fieldpath.PathElement) {
		key, kerr := fieldpath.SerializePathElement(pe)
		if kerr != nil && err == nil {
			err = kerr
		}
		out[key] = map[string]interface{}{}
	})
	s.Children.Iterate(func(pe fieldpath.PathElement) {
		key, kerr := fieldpath.SerializePathElement(pe)
		child, _ := s.Children.Get(pe)
		sub, serr := fieldsContent(child, s.Members.Has(pe))
		if kerr != nil || serr != nil {
			if err == nil {
				err = errors.Join(kerr, serr)
			}
			return
		}
		out[key] = sub
	})
	return out, err
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
