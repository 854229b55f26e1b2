/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// ErrUnpredictable is returned (wrapped, with the reason) by the model's
// operations when they cannot compute the object the apiserver would store:
// managed-fields entries of another version whose field paths may differ
// from the object's (a conversion webhook, or a built-in kind served in
// several versions), or a write the apiserver's own field manager would
// record otherwise than planned. Nothing is written; the caller decides what
// to do instead (leave its fields in place without an owner, say).
var ErrUnpredictable = errors.New("the apiserver's result cannot be predicted")

// State is one object as the apiserver stores it: its content and its
// decoded managed fields, at the object's apiVersion. Every operation of the
// model maps a State to the next one without side effects, in the spirit of
// structured-merge-diff's merge.Updater (a pure function of the live object,
// the intent and the managers); Commit writes the difference in one guarded
// request.
type State struct {
	// Object is the object's content (metadata.managedFields is ignored:
	// Owners holds them).
	Object *unstructured.Unstructured
	// Owners are the managed-fields entries.
	Owners ManagedFields
	// SamePaths says that entries of other versions than the object's
	// name fields with the object's paths (SameFieldPaths): without it,
	// such entries make every operation but Release and HandBack
	// unpredictable.
	SamePaths bool
	// setAside says that entries of other versions were left out (View):
	// the object is not one never applied.
	setAside bool
}

// NewState decodes obj (which is not changed) into a State. samePaths is
// SameFieldPaths for obj's entries (true when they are all of obj's
// version).
func NewState(obj *unstructured.Unstructured, samePaths bool) (State, error) {
	owners, err := Owners(obj)
	if err != nil {
		return State{}, err
	}
	return State{Object: obj, Owners: owners, SamePaths: samePaths}, nil
}

// Encoded is the object with its managed fields encoded into
// metadata.managedFields, as a write of the state would send it.
func (s State) Encoded() (*unstructured.Unstructured, error) {
	entries, err := s.Owners.content()
	if err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{Object: WithoutManagedFields(s.Object.Object)}
	out = out.DeepCopy()
	if len(entries) > 0 {
		if err := unstructured.SetNestedField(out.Object, []interface{}{}, "metadata", "managedFields"); err != nil {
			return nil, err
		}
		out.Object["metadata"].(map[string]interface{})["managedFields"] = entries // out is a copy of its own
	}
	return out, nil
}

// otherVersions reports whether an entry of the main resource is of
// another version than the object's.
func (s State) otherVersions() bool {
	for _, e := range s.Owners {
		if e.Subresource == "" && e.APIVersion != "" && e.APIVersion != s.Object.GetAPIVersion() {
			return true
		}
	}
	return false
}

// comparable returns ErrUnpredictable when entries of other versions may
// name fields with other paths, or when two Apply entries of one manager
// differ only in their version (the apiserver keeps one Apply entry per
// manager; Update entries of several versions are managers of their own).
func (s State) comparable() error {
	if !s.otherVersions() {
		return nil
	}
	if !s.SamePaths {
		return fmt.Errorf("%w: managed fields of another version, whose field paths may differ (a conversion webhook)", ErrUnpredictable)
	}
	seen := map[ManagerKey]bool{}
	for _, e := range s.Owners {
		key := e.ManagerKey
		if key.Subresource == "" && key.Operation == metav1.ManagedFieldsOperationApply {
			key.APIVersion = ""
		}
		if seen[key] {
			return fmt.Errorf("%w: two entries of %s differ only in their version", ErrUnpredictable, e.ManagerKey)
		}
		seen[key] = true
	}
	return nil
}

// withOwners is s with other managed fields.
func (s State) withOwners(owners ManagedFields) State {
	return State{Object: s.Object, Owners: owners, SamePaths: s.SamePaths, setAside: s.setAside}
}

// View is s for deciding whether an apply would change anything: when
// entries of other versions may name other paths (a conversion webhook, a
// built-in kind served in several versions), they are set aside, since the
// apiserver converts them and the model cannot; a conflict with one of them
// is the apiserver's to report. Otherwise it is s. A View predicts no
// write: it only decides whether to send one.
func (s State) View() State {
	if s.comparable() == nil {
		return s
	}
	return s.aside()
}

// aside is s without its entries of other versions (see View).
func (s State) aside() State {
	version := s.Object.GetAPIVersion()
	var owners ManagedFields
	for _, e := range s.Owners {
		if e.Subresource != "" || e.APIVersion == "" || e.APIVersion == version {
			owners = append(owners, e)
		}
	}
	return State{Object: s.Object, Owners: owners, SamePaths: true, setAside: true}
}

// ours is the union of the fields of every entry of manager on the main
// resource (its Apply entry, and an Update entry a patch of its made).
func (s State) ours(manager string) *fieldpath.Set {
	out := fieldpath.NewSet()
	for _, e := range s.Owners {
		if e.Manager == manager && e.Subresource == "" {
			out = out.Union(e.Fields)
		}
	}
	return out
}

// HandBack moves each field manager owns (its Apply entry on the main
// resource) that an entry of previous owned before, and does not own now,
// into that entry (recreated when it vanished); see HandBackPlan. Values
// are untouched (SSA docs, "Transferring ownership"). It returns the next
// state and the fields moved.
func HandBack(s State, manager string, previous ManagedFields) (State, *fieldpath.Set) {
	next, moved := HandBackPlan(s.Owners, manager, previous)
	return s.withOwners(next), moved
}

// Release drops fields from manager's Apply entry without a new owner,
// with the list items and maps of manager that hold them (ReleasePlan).
// Values are untouched. It returns the next state and the fields released.
func Release(s State, manager string, fields *fieldpath.Set) (State, *fieldpath.Set) {
	next, released := ReleasePlan(s.Owners, manager, fields)
	return s.withOwners(next), released
}

// Relinquish is what manager letting go of all its fields leaves, as an
// empty apply should (SSA docs, "Field management": a field no longer in an
// applier's intent is removed when no other manager owns it), without the
// apiserver's losses:
//   - every entry of manager on the main resource goes;
//   - the fields manager owned alone are removed with their values (a list
//     item or map whole, with values nobody owns in it);
//   - a list item or map manager owned alone that holds another manager's
//     field stays, without an owner (the apiserver's empty apply removes
//     such an item with the other manager's field in it:
//     kubernetes-sigs/structured-merge-diff issue 335); no other manager's
//     entry changes;
//   - a list or map the removal empties is removed too, unless another
//     manager owns it: then it stays, empty (the apiserver would leave it
//     null, which a custom resource's schema refuses: kubernetes/kubernetes
//     issue 103011).
//
// It returns the next state and the fields removed. With entries of other
// versions whose paths may differ it returns ErrUnpredictable.
func (m Model) Relinquish(s State, manager string) (State, *fieldpath.Set, error) {
	return m.letGo(s, manager, nil)
}

// Drop is what manager's next apply of intent does to the fields its Apply
// entry holds and intent no longer does, done before that apply so that the
// apply removes nothing: they leave manager's entry, those manager owned
// alone are removed as Relinquish removes them, and the list items and maps
// among them that hold other managers' fields stay without an owner (the
// apiserver's apply would remove them whole, or leave an emptied map null;
// once manager no longer owns them, its apply prunes nothing of them).
// It returns the next state and the fields removed.
func (m Model) Drop(s State, intent *unstructured.Unstructured, manager string) (State, *fieldpath.Set, error) {
	ours := s.Owners.Applied(manager)
	if ours == nil {
		return s, fieldpath.NewSet(), nil
	}
	tv, err := m.Schema.ToTyped(intent)
	if err != nil {
		return State{}, nil, err
	}
	fields, err := tv.ToFieldSet()
	if err != nil {
		return State{}, nil, err
	}
	dropped := ours.Fields.Difference(fields)
	if dropped.Empty() {
		return s, dropped, nil
	}
	return m.letGo(s, manager, dropped)
}

// letGo is Relinquish of fields (nil: every field of manager, and its
// entries go).
func (m Model) letGo(s State, manager string, fields *fieldpath.Set) (State, *fieldpath.Set, error) {
	if err := s.comparable(); err != nil {
		return State{}, nil, err
	}
	ours := s.ours(manager)
	if fields != nil {
		// A list item or map that holds a field manager keeps stays
		// manager's.
		ours = ours.Intersection(fields).Difference(withParents(ours.Difference(fields)))
	}
	if ours.Empty() && (fields != nil || !hasEntry(s.Owners, manager)) {
		return s, fieldpath.NewSet(), nil
	}
	others := fieldpath.NewSet()
	for _, e := range s.Owners {
		if e.Manager != manager {
			others = others.Union(e.Fields)
		}
	}
	alone := ours.Difference(others)
	remove := alone.Difference(holders(others, alone))
	owners := make(ManagedFields, 0, len(s.Owners))
	for _, e := range s.Owners {
		set := e.Fields
		if e.Manager == manager && e.Subresource == "" {
			if fields == nil {
				continue // Relinquish: every entry of manager goes
			}
			set = set.Difference(ours)
		}
		owners = append(owners, Entry{ManagerKey: e.ManagerKey, Time: e.Time, Fields: set})
	}
	content, err := m.removeValues(s.Object, remove, others)
	if err != nil {
		return State{}, nil, err
	}
	return State{Object: content, Owners: owners, SamePaths: s.SamePaths}, remove, nil
}

// hasEntry reports whether manager has an entry on the main resource.
func hasEntry(owners ManagedFields, manager string) bool {
	for _, e := range owners {
		if e.Manager == manager && e.Subresource == "" {
			return true
		}
	}
	return false
}

// removeValues returns a copy of obj without the fields of remove (list
// items whole); a list or map the removal leaves empty goes too, unless
// others owns it: then it stays, empty.
func (m Model) removeValues(obj *unstructured.Unstructured, remove, others *fieldpath.Set) (*unstructured.Unstructured, error) {
	content := (&unstructured.Unstructured{Object: WithoutManagedFields(obj.Object)}).DeepCopy()
	var err error
	remove.Iterate(func(p fieldpath.Path) {
		if err == nil && !hasPrefixIn(remove, p) {
			err = removePath(content.Object, p, others)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("remove fields from %s: %w", describe(obj), err)
	}
	return content, nil
}

// hasPrefixIn reports whether a proper prefix of p is in set (removing it
// removes p).
func hasPrefixIn(set *fieldpath.Set, p fieldpath.Path) bool {
	for i := 1; i < len(p); i++ {
		if set.Has(p[:i]) {
			return true
		}
	}
	return false
}

// removePath removes the field at p from obj: a map's key, a list item of
// a map list (by its key fields) or of a set list (by its value). Each
// list or map above it that the removal leaves empty goes too, unless
// others owns it. A path that names nothing on obj removes nothing.
func removePath(obj map[string]interface{}, p fieldpath.Path, others *fieldpath.Set) error {
	if len(p) == 0 {
		return nil
	}
	parents := make([]interface{}, 0, len(p))
	var cur interface{} = obj
	for _, pe := range p[:len(p)-1] {
		parents = append(parents, cur)
		next, ok := child(cur, pe)
		if !ok {
			return nil
		}
		cur = next
	}
	parents = append(parents, cur)
	// Remove the last element, then climb while containers are left
	// empty and nobody else owns them.
	for depth := len(p) - 1; depth >= 0; depth-- {
		container := parents[depth]
		removed, ok := without(container, p[depth])
		if !ok {
			return nil
		}
		if depth == 0 {
			for k := range obj {
				delete(obj, k)
			}
			for k, v := range removed.(map[string]interface{}) {
				obj[k] = v
			}
			return nil
		}
		if !isEmpty(removed) || others.Has(p[:depth]) {
			return set(parents[depth-1], p[depth-1], removed)
		}
	}
	return nil
}

// child is the value at one path element of a map or list.
func child(v interface{}, pe fieldpath.PathElement) (interface{}, bool) {
	if i := itemIndex(v, pe); i >= 0 {
		return v.([]interface{})[i], true
	}
	if m, ok := v.(map[string]interface{}); ok && pe.FieldName != nil {
		c, ok := m[*pe.FieldName]
		return c, ok
	}
	return nil, false
}

// without is a container without the child at pe.
func without(v interface{}, pe fieldpath.PathElement) (interface{}, bool) {
	if i := itemIndex(v, pe); i >= 0 {
		l := v.([]interface{})
		return append(append([]interface{}{}, l[:i]...), l[i+1:]...), true
	}
	if m, ok := v.(map[string]interface{}); ok && pe.FieldName != nil {
		if _, has := m[*pe.FieldName]; !has {
			return nil, false
		}
		out := make(map[string]interface{}, len(m))
		for k, c := range m {
			if k != *pe.FieldName {
				out[k] = c
			}
		}
		return out, true
	}
	return nil, false
}

// set puts c at pe of the container v (in place).
func set(v interface{}, pe fieldpath.PathElement, c interface{}) error {
	if i := itemIndex(v, pe); i >= 0 {
		v.([]interface{})[i] = c
		return nil
	}
	if m, ok := v.(map[string]interface{}); ok && pe.FieldName != nil {
		m[*pe.FieldName] = c
		return nil
	}
	return fmt.Errorf("cannot set %s", pe)
}

// itemIndex is the index of the list item pe names (by key fields, value
// or index), -1 when v is no list or holds no such item.
func itemIndex(v interface{}, pe fieldpath.PathElement) int {
	l, ok := v.([]interface{})
	if !ok {
		return -1
	}
	for i, item := range l {
		switch {
		case pe.Key != nil:
			m, ok := item.(map[string]interface{})
			if !ok {
				continue
			}
			match := true
			for _, f := range *pe.Key {
				if !value.Equals(value.NewValueInterface(m[f.Name]), f.Value) {
					match = false
					break
				}
			}
			if match {
				return i
			}
		case pe.Value != nil:
			if value.Equals(value.NewValueInterface(item), *pe.Value) {
				return i
			}
		case pe.Index != nil:
			if *pe.Index == i {
				return i
			}
		}
	}
	return -1
}

func isEmpty(v interface{}) bool {
	switch c := v.(type) {
	case map[string]interface{}:
		return len(c) == 0
	case []interface{}:
		return len(c) == 0
	}
	return false
}

// BeforeApply is the state that manager's apply of intent must start from
// (see Apply's step 1), and the Drop it is: of what intent drops from
// manager's Apply entry (Drop), the fields another manager owns too and
// the list items and maps that hold another manager's field leave the
// entry, ownership only; the whole Drop, values included, only when the
// apply would otherwise leave a map or list null or lose another manager's
// field. It is s when nothing
// needs to go first, and ErrUnpredictable (wrapped) when the drop cannot
// be computed.
func (m Model) BeforeApply(s State, intent *unstructured.Unstructured, manager string) (State, Op, error) {
	dropped, _, err := m.Drop(s, intent, manager)
	if err != nil || Diff(s, dropped) == "" {
		return s, Op{}, err
	}
	next := m.releaseHolders(s, dropped, manager)
	// The apply then prunes the rest itself; its result is predicted, and
	// when it would leave a map null or take another manager's field with
	// what it prunes (structured-merge-diff can remove a map emptied of
	// the applier's keys with another manager's key in it), the whole drop
	// goes first instead.
	if applied, err := m.Apply(next, intent, manager, true); err == nil &&
		(newNull(s, applied) || m.Check(next, applied, Op{Kind: OpApply, Manager: manager}) != nil) {
		next = dropped
	}
	return next, Op{Kind: OpDrop, Manager: manager, Fields: s.ours(manager).Difference(next.ours(manager))}, nil
}

// releaseHolders is s with manager's Apply entry without the fields that
// dropped lets go of and another manager owns too, nor the list items and
// maps among them that hold another manager's field (holders): ownership
// only, no value changes. The apply prunes what is left of them, the
// fields manager owns alone.
func (m Model) releaseHolders(s, dropped State, manager string) State {
	others := fieldpath.NewSet()
	for _, e := range s.Owners {
		if e.Manager != manager {
			others = others.Union(e.Fields)
		}
	}
	leaving := s.ours(manager).Difference(dropped.ours(manager))
	next, _ := Release(s, manager, leaving.Intersection(others).Union(holders(others, leaving)))
	return next
}

// newNull reports whether after holds a null where before held a value.
func newNull(before, after State) bool {
	return hasNull(WithoutManagedFields(after.Object.Object)) && !hasNull(WithoutManagedFields(before.Object.Object))
}
