/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// OpRestore is a Restore: previous values put back before a hand-back.
const OpRestore OpKind = "Restore"

// Previous values: what fields held before a field manager first wrote
// them, kept so that a deletion can put them back (deletionPolicy
// Restore). They are a partial object of the target's kind whose field set
// is the fields they cover, as structured-merge-diff's ExtractItems gives
// it: values of one field only, list items with their keys.

// PreviousValues extracts from obj (the target as read before a write)
// the values of fields: a partial object with apiVersion, kind and the
// identity of obj, holding only those fields. A field obj does not hold is
// left out. Errors: obj does not fit its kind's schema.
func (m Model) PreviousValues(obj *unstructured.Unstructured, fields *fieldpath.Set) (*unstructured.Unstructured, error) {
	tv, err := m.typedContent(obj)
	if err != nil {
		return nil, err
	}
	out, ok := tv.ExtractItems(withItemKeys(fields.Leaves())).AsValue().Unstructured().(map[string]interface{})
	if !ok || out == nil {
		out = map[string]interface{}{}
	}
	u := &unstructured.Unstructured{Object: out}
	u.SetAPIVersion(obj.GetAPIVersion())
	u.SetKind(obj.GetKind())
	u.SetName(obj.GetName())
	u.SetNamespace(obj.GetNamespace())
	return u, nil
}

// MergeValues is older with newer's values added (an earlier value of a
// field wins: it is what the field held before the first write). Both are
// partial objects of PreviousValues; either may be nil.
func (m Model) MergeValues(older, newer *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	switch {
	case older == nil:
		return newer, nil
	case newer == nil:
		return older, nil
	}
	ot, err := m.typedContent(older)
	if err != nil {
		return nil, err
	}
	nt, err := m.typedContent(newer)
	if err != nil {
		return nil, err
	}
	merged, err := nt.Merge(ot)
	if err != nil {
		return nil, err
	}
	out, _ := merged.AsValue().Unstructured().(map[string]interface{})
	return &unstructured.Unstructured{Object: out}, nil
}

// RestoreIntent is what manager applies to put back the previous values
// of the fields it owns alone (no other entry holds them: nobody wrote
// them since, or they would own them) among those values covers: its
// Apply entry's fields as they are in s (extracted, as client-go's
// Extract does), with those fields' previous values. Applied without
// force, it keeps manager's fields and changes only those values (a JSON
// patch of values and managed fields cannot: the apiserver records a
// value it changes as the requester's, SSA docs "Using Update to change
// managed fields"). A field another manager owns too keeps its value: it
// was written since (ChangedSince says by whom). restore is empty (and
// intent nil) when there is nothing to put back.
func (m Model) RestoreIntent(s State, manager string, values *unstructured.Unstructured) (intent *unstructured.Unstructured, restore *fieldpath.Set, err error) {
	vt, err := m.typedContent(values)
	if err != nil {
		return nil, nil, fmt.Errorf("previous values: %w", err)
	}
	covered, err := vt.ToFieldSet()
	if err != nil {
		return nil, nil, err
	}
	applied := s.Owners.Applied(manager)
	if applied == nil {
		return nil, fieldpath.NewSet(), nil
	}
	restore = valueLeaves(covered).Intersection(applied.Fields).Difference(s.othersOf(manager))
	if restore.Empty() {
		return nil, restore, nil
	}
	st, err := m.typedContent(s.Object)
	if err != nil {
		return nil, nil, err
	}
	merged, err := st.ExtractItems(applied.Fields).Merge(vt.ExtractItems(withItemKeys(restore)))
	if err != nil {
		return nil, nil, err
	}
	// Through JSON, so that numbers are what a decoded object holds
	// (int64, float64), as in every other state.
	content, _ := merged.AsValue().Unstructured().(map[string]interface{})
	if content == nil {
		content = map[string]interface{}{}
	}
	content["apiVersion"], content["kind"] = s.Object.GetAPIVersion(), s.Object.GetKind()
	raw, err := json.Marshal(content)
	if err != nil {
		return nil, nil, err
	}
	intent = &unstructured.Unstructured{}
	if err := intent.UnmarshalJSON(raw); err != nil {
		return nil, nil, err
	}
	intent.SetName(s.Object.GetName())
	intent.SetNamespace(s.Object.GetNamespace())
	return intent, restore, nil
}

// restore is the apply of RestoreIntent: the next state and the fields
// whose values were put back.
func (m Model) restore(s State, manager string, values *unstructured.Unstructured) (State, *fieldpath.Set, error) {
	intent, restore, err := m.RestoreIntent(s, manager, values)
	if err != nil || intent == nil {
		return s, restore, err
	}
	next, err := m.Apply(s, intent, manager, false)
	if err != nil {
		return State{}, nil, fmt.Errorf("restore: %w", err)
	}
	return next, restore, nil
}

// valueLeaves are the leaves of a PreviousValues field set but the key
// fields of the list items it goes through (there for the items'
// identity, not values of their own).
func valueLeaves(covered *fieldpath.Set) *fieldpath.Set {
	out := fieldpath.NewSet()
	covered.Leaves().Iterate(func(p fieldpath.Path) {
		if n := len(p); n >= 2 && p[n-1].FieldName != nil && p[n-2].Key != nil {
			for _, k := range *p[n-2].Key {
				if k.Name == *p[n-1].FieldName {
					return
				}
			}
		}
		out.Insert(p.Copy())
	})
	return out
}

// othersOf is the union of the fields of every entry but manager's on the
// main resource.
func (s State) othersOf(manager string) *fieldpath.Set {
	out := fieldpath.NewSet()
	for _, e := range s.Owners {
		if e.Manager != manager && e.Subresource == "" {
			out = out.Union(e.Fields)
		}
	}
	return out
}

// ChangedSince are the fields values covers that another manager than
// manager owns in s, by that manager: written since manager first wrote
// them, so a Restore leaves them as they are.
func (m Model) ChangedSince(s State, manager string, values *unstructured.Unstructured) (map[string]*fieldpath.Set, error) {
	covered, err := m.contentSet(values)
	if err != nil {
		return nil, err
	}
	out := map[string]*fieldpath.Set{}
	for _, e := range s.Owners {
		if e.Manager == manager || e.Subresource != "" {
			continue
		}
		if both := valueLeaves(covered).Intersection(e.Fields); !both.Empty() {
			if out[e.Manager] == nil {
				out[e.Manager] = fieldpath.NewSet()
			}
			out[e.Manager] = out[e.Manager].Union(both)
		}
	}
	return out, nil
}

// checkRestore checks that a restore changed no ownership and no value but
// those of op.Fields.
func checkRestore(bt, at *typed.TypedValue, before, after State, op Op, fail func(string, ...interface{}) error) error {
	if !entriesEqual(before.Owners, after.Owners) {
		return fail("managed fields changed")
	}
	cmp, err := bt.Compare(at)
	if err != nil {
		return err
	}
	if other := cmp.Modified.Union(cmp.Added).Union(cmp.Removed).Leaves().Difference(withItemKeys(op.Fields)); !other.Empty() {
		return fail("values changed outside the restored fields: %v", FormatSet(other))
	}
	return nil
}

// entriesEqual reports whether a and b hold the same entries with the
// same fields (times aside).
func entriesEqual(a, b ManagedFields) bool {
	if len(a) != len(b) {
		return false
	}
	bm := entryMap(b)
	for _, e := range a {
		if f := bm[e.ManagerKey]; f == nil || !f.Equals(e.Fields) {
			return false
		}
	}
	return true
}

// ValueAt is the value at path p of obj (a field, a map key, a list item
// by its key, index or value), and whether obj holds one there.
func ValueAt(obj *unstructured.Unstructured, p fieldpath.Path) (interface{}, bool) {
	return valueAt(obj.Object, p)
}
