/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"bytes"
	"encoding/json"
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

// Owners decodes every managedFields entry of obj into a field set. It
// returns an error when an entry is not FieldsV1 or does not parse.
func Owners(obj metav1.Object) (ManagedFields, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return ownersOf(u)
	}
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

// The managed fields of an unstructured object are read and written here
// without runtime.DefaultUnstructuredConverter, whose reflection (and deep
// copy of the whole list on every read) is most of what decoding costs the
// model, which decodes and encodes them around every run of the field
// manager. Only the shape the converter itself writes is taken this way:
// each item a map of the ManagedFieldsEntry's JSON names to strings, and
// fieldsV1 to a map; anything else goes through
// Unstructured.GetManagedFields and SetManagedFields, so the result is
// theirs in every case.

// rawEntry is one item of metadata.managedFields in the converter's shape.
type rawEntry struct {
	manager, operation, apiVersion, time, fieldsType, subresource string
	hasTime                                                       bool
	fieldsV1                                                      map[string]interface{}
}

// readRawEntries reads obj's metadata.managedFields items; ok is false when
// an item is not of the converter's shape (the caller then reads them with
// Unstructured.GetManagedFields). found is false when obj has no list.
func readRawEntries(obj map[string]interface{}) (entries []rawEntry, found, ok bool) {
	md, isMap := obj["metadata"].(map[string]interface{})
	if !isMap {
		return nil, false, obj["metadata"] == nil
	}
	v, has := md["managedFields"]
	if !has {
		return nil, false, true
	}
	items, isList := v.([]interface{})
	if !isList {
		return nil, false, false
	}
	entries = make([]rawEntry, 0, len(items))
	for _, item := range items {
		e, ok := readRawEntry(item)
		if !ok {
			return nil, true, false
		}
		entries = append(entries, e)
	}
	return entries, true, true
}

// readRawEntry reads one item of metadata.managedFields; ok is false when
// it is not of the converter's shape.
func readRawEntry(item interface{}) (e rawEntry, ok bool) {
	m, isMap := item.(map[string]interface{})
	if !isMap {
		return e, false
	}
	for k, v := range m {
		if k == "fieldsV1" {
			f, isMap := v.(map[string]interface{})
			if !isMap || !onlyMaps(f) {
				return e, false
			}
			e.fieldsV1 = f
			continue
		}
		s, isString := v.(string)
		if !isString {
			return e, false
		}
		switch k {
		case "manager":
			e.manager = s
		case "operation":
			e.operation = s
		case "apiVersion":
			e.apiVersion = s
		case "time":
			e.time, e.hasTime = s, true
		case "fieldsType":
			e.fieldsType = s
		case "subresource":
			e.subresource = s
		default:
			return e, false
		}
	}
	return e, true
}

// onlyMaps reports whether every value in m is a map of the same kind (the
// shape of a FieldsV1 value: every leaf is {}).
func onlyMaps(m map[string]interface{}) bool {
	for _, v := range m {
		c, ok := v.(map[string]interface{})
		if !ok || !onlyMaps(c) {
			return false
		}
	}
	return true
}

// parseTime is the entry's time as the converter reads it (nil without
// one); ok is false when the converter would refuse it.
func (e rawEntry) parseTime() (t *metav1.Time, ok bool) {
	if !e.hasTime {
		return nil, true
	}
	if utf8.ValidString(e.time) {
		// metav1.Time.UnmarshalJSON of the string json.Marshal makes
		// of e.time, which is e.time itself when it is valid UTF-8.
		pt, err := time.Parse(time.RFC3339, e.time)
		if err != nil {
			return nil, false
		}
		return &metav1.Time{Time: pt.Local()}, true
	}
	b, err := json.Marshal(e.time)
	if err != nil {
		return nil, false
	}
	t = &metav1.Time{}
	if err := t.UnmarshalJSON(b); err != nil {
		return nil, false
	}
	return t, true
}

// key is the entry's ManagerKey.
func (e rawEntry) key() ManagerKey {
	return ManagerKey{Manager: e.manager, Operation: metav1.ManagedFieldsOperationType(e.operation), APIVersion: e.apiVersion, Subresource: e.subresource}
}

// convert is the entry as the converter reads it; ok is false when the
// converter would refuse it (a time that does not parse), which makes
// GetManagedFields return no entry at all.
func (e rawEntry) convert() (out metav1.ManagedFieldsEntry, ok bool) {
	out = metav1.ManagedFieldsEntry{Manager: e.manager, Operation: metav1.ManagedFieldsOperationType(e.operation),
		APIVersion: e.apiVersion, FieldsType: e.fieldsType, Subresource: e.subresource}
	if out.Time, ok = e.parseTime(); !ok {
		return out, false
	}
	if e.fieldsV1 != nil {
		b, err := json.Marshal(e.fieldsV1)
		if err != nil {
			return out, false
		}
		out.FieldsV1 = &metav1.FieldsV1{}
		if err := out.FieldsV1.UnmarshalJSON(b); err != nil {
			return out, false
		}
	}
	return out, true
}

// managedFieldsOf is u.GetManagedFields().
func managedFieldsOf(u *unstructured.Unstructured) []metav1.ManagedFieldsEntry {
	raw, found, ok := readRawEntries(u.Object)
	if !ok {
		return u.GetManagedFields()
	}
	if !found {
		return nil
	}
	out := make([]metav1.ManagedFieldsEntry, 0, len(raw))
	for _, r := range raw {
		e, ok := r.convert()
		if !ok {
			return u.GetManagedFields()
		}
		out = append(out, e)
	}
	return out
}

// setEncoded sets u's metadata.managedFields to the entries of m (empty
// ones dropped), as u.SetManagedFields(m.Encode()) does, when there is at
// least one; it reports whether there was one (with none, u is left as it
// is).
func (m ManagedFields) setEncoded(u *unstructured.Unstructured) (bool, error) {
	md, isMap := u.Object["metadata"].(map[string]interface{})
	_, hasMeta := u.Object["metadata"]
	slow := hasMeta && !isMap
	items := make([]interface{}, 0, len(m))
	for _, e := range m {
		if slow {
			break
		}
		if e.Fields == nil || e.Fields.Empty() {
			continue
		}
		item, ok := encodeEntry(e)
		if !ok {
			slow = true
			break
		}
		items = append(items, item)
	}
	if slow {
		entries, err := m.Encode()
		if err != nil || len(entries) == 0 {
			return false, err
		}
		u.SetManagedFields(entries)
		return true, nil
	}
	if len(items) == 0 {
		return false, nil
	}
	if u.Object == nil {
		u.Object = map[string]interface{}{}
	}
	if md == nil {
		md = map[string]interface{}{}
		u.Object["metadata"] = md
	}
	md["managedFields"] = items
	return true, nil
}

// encodeEntry is e as the converter writes it into an unstructured object
// (empty strings and a nil time left out); ok is false when only the
// converter can write it: a zero time (written as null), or fields whose
// path elements do not serialize to distinct valid UTF-8 keys.
func encodeEntry(e Entry) (item map[string]interface{}, ok bool) {
	if e.Time != nil && e.Time.IsZero() {
		return nil, false
	}
	fields, ok := fieldsToMap(e.Fields, false)
	if !ok {
		return nil, false
	}
	item = make(map[string]interface{}, 7)
	putString(item, "manager", e.Manager)
	putString(item, "operation", string(e.Operation))
	putString(item, "apiVersion", e.APIVersion)
	putString(item, "subresource", e.Subresource)
	if e.Time != nil {
		item["time"] = e.Time.ToUnstructured()
	}
	item["fieldsType"] = "FieldsV1"
	item["fieldsV1"] = fields
	return item, true
}

// putString sets item[key] to v unless v is empty (omitempty).
func putString(item map[string]interface{}, key, v string) {
	if v != "" {
		item[key] = v
	}
}

// ownersOf is Owners of an unstructured object: decodeEntries of
// managedFieldsOf, with each FieldsV1 map read into its field set
// directly (fieldsFromMap) rather than encoded to JSON and parsed.
func ownersOf(u *unstructured.Unstructured) (ManagedFields, error) {
	raw, _, ok := readRawEntries(u.Object)
	if !ok {
		return decodeEntries(u.GetManagedFields())
	}
	out := make(ManagedFields, 0, len(raw))
	for _, r := range raw {
		t, ok := r.parseTime()
		if !ok {
			return decodeEntries(u.GetManagedFields())
		}
		out = append(out, Entry{ManagerKey: r.key(), Time: t})
	}
	for i, r := range raw {
		set, ok := fieldsFromMap(r.fieldsV1)
		if !ok {
			e, _ := r.convert()
			var err error
			if set, err = DecodeFields(e.FieldsV1); err != nil {
				return nil, fmt.Errorf("managed fields of %q: %w", r.manager, err)
			}
		}
		out[i].Fields = set
	}
	return out, nil
}

// fieldsFromMap is the field set of a FieldsV1 value in unstructured form
// (as DecodeFields parses it from JSON: "." marks a member that has
// children, an element of an unknown kind is skipped); ok is false when
// the value is not one FieldsV1 encodes (a key that is no path element,
// not valid UTF-8, or two keys for one element), for DecodeFields to
// report.
func fieldsFromMap(m map[string]interface{}) (*fieldpath.Set, bool) {
	if m == nil {
		return fieldpath.NewSet(), true
	}
	children, _, ok := readFieldsMap(m)
	if !ok {
		return nil, false
	}
	if children == nil {
		return fieldpath.NewSet(), true
	}
	return children, true
}

// readFieldsMap reads one level of a FieldsV1 map: the set below it, and
// whether the path it is at is a member itself.
func readFieldsMap(m map[string]interface{}) (children *fieldpath.Set, isMember, ok bool) {
	for key, v := range m {
		if key == "." {
			isMember = true
			continue
		}
		if !utf8.ValidString(key) {
			return nil, false, false
		}
		pe, err := fieldpath.DeserializePathElement(key)
		if errors.Is(err, fieldpath.ErrUnknownPathElementType) {
			continue
		}
		if err != nil {
			return nil, false, false
		}
		sub, _ := v.(map[string]interface{})
		grandchildren, childIsMember, ok := readFieldsMap(sub)
		if !ok {
			return nil, false, false
		}
		if children == nil {
			children = fieldpath.NewSet()
		}
		if children.Members.Has(pe) {
			return nil, false, false
		}
		if _, has := children.Children.Get(pe); has {
			return nil, false, false
		}
		if childIsMember {
			children.Members.Insert(pe)
		}
		if grandchildren != nil {
			*children.Children.Descend(pe) = *grandchildren
		}
	}
	if children == nil {
		isMember = true
	}
	return children, isMember, true
}

// fieldsToMap is the unstructured form of s's FieldsV1 encoding (what
// json.Unmarshal makes of s.ToJSON()), built without JSON; includeSelf
// marks s's own path a member ("."). ok is false when a path element does
// not serialize (or not to valid UTF-8), or two serialize alike, for
// ToJSON to handle.
func fieldsToMap(s *fieldpath.Set, includeSelf bool) (map[string]interface{}, bool) {
	out := map[string]interface{}{}
	nodes := s.Members.Size()
	s.Children.Iterate(func(fieldpath.PathElement) { nodes++ })
	if includeSelf && nodes > 0 {
		out["."] = map[string]interface{}{}
	}
	ok := true
	put := func(pe fieldpath.PathElement, v map[string]interface{}) {
		key, err := fieldpath.SerializePathElement(pe)
		if err != nil || !utf8.ValidString(key) {
			ok = false
			return
		}
		if _, dup := out[key]; dup {
			ok = false
			return
		}
		out[key] = v
	}
	s.Members.Iterate(func(pe fieldpath.PathElement) {
		if _, child := s.Children.Get(pe); !child && ok {
			put(pe, map[string]interface{}{})
		}
	})
	s.Children.Iterate(func(pe fieldpath.PathElement) {
		if !ok {
			return
		}
		child, _ := s.Children.Get(pe)
		v, childOK := fieldsToMap(child, s.Members.Has(pe))
		if !childOK {
			ok = false
			return
		}
		put(pe, v)
	})
	if !ok {
		return nil, false
	}
	return out, true
}
