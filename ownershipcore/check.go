/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// OpKind names an operation of the model.
type OpKind string

// The operations Check knows.
const (
	OpApply      OpKind = "Apply"
	OpDrop       OpKind = "Drop"
	OpHandBack   OpKind = "HandBack"
	OpRelease    OpKind = "Release"
	OpRelinquish OpKind = "Relinquish"
)

// Op is one operation of a field manager of fieldops, as Check judges it.
type Op struct {
	Kind    OpKind
	Manager string
	// Previous are the entries a HandBack gives fields back to.
	Previous ManagedFields
	// Fields are the fields a Release or a Drop lets go of.
	Fields *fieldpath.Set
}

func (o Op) String() string { return fmt.Sprintf("%s by %q", o.Kind, o.Manager) }

// InvariantError is a broken invariant of the ownership core: the
// operation would lose another manager's field or value, or leave what it
// should not.
type InvariantError struct {
	Op     Op
	Reason string
}

func (e *InvariantError) Error() string {
	return fmt.Sprintf("%s breaks an invariant: %s", e.Op, e.Reason)
}

// Check holds the invariants of the ownership core for op taking before to
// after:
//   - no other manager loses a field it owned, but one a forced Apply took
//     (then op.Manager owns it), and none of its values changes;
//   - HandBack and Release change no value; Relinquish (and Drop, of the
//     fields it drops) removes only values op.Manager owned alone, and the
//     lists and maps they leave empty;
//   - after Relinquish op.Manager has no entry on the main resource; after
//     HandBack it owns none of the fields it gave back, after Release none
//     of those it released;
//   - no null appears where before had a value.
//
// It returns an *InvariantError for the first broken one.
func (m Model) Check(before, after State, op Op) error {
	fail := func(format string, args ...interface{}) error {
		return &InvariantError{Op: op, Reason: fmt.Sprintf(format, args...)}
	}
	bt, err := m.typedContent(before.Object)
	if err != nil {
		return err
	}
	at := bt // the same object: the same typed value
	if after.Object != before.Object {
		if at, err = m.typedContent(after.Object); err != nil {
			return err
		}
	}
	bs, err := bt.ToFieldSet()
	if err != nil {
		return err
	}
	if err := checkOthers(bt, at, bs, before, after, op, fail); err != nil {
		return err
	}
	if hasNull(WithoutManagedFields(after.Object.Object)) && !hasNull(WithoutManagedFields(before.Object.Object)) {
		return fail("a null appeared")
	}
	switch op.Kind {
	case OpRestore:
		return checkRestore(bt, at, before, after, op, fail)
	case OpHandBack:
		return checkHandBack(before, after, op, fail)
	case OpRelease:
		return checkRelease(before, after, op, fail)
	case OpRelinquish:
		if hasEntry(after.Owners, op.Manager) {
			return fail("an entry of %q is left", op.Manager)
		}
		return checkRemoved(bs, at, before, op, before.ours(op.Manager), fail)
	case OpDrop:
		kept := after.ours(op.Manager)
		if left := kept.Intersection(op.Fields).Difference(withParents(kept.Difference(op.Fields))); !left.Empty() {
			return fail("kept dropped fields %v", FormatSet(left))
		}
		return checkRemoved(bs, at, before, op, before.ours(op.Manager).Intersection(op.Fields), fail)
	}
	return nil
}

// checkOthers checks that no other manager than op.Manager loses a field
// (but those a forced Apply took) or a value of a field it keeps. Values
// are compared on the fields that hold one (scalars, atomic lists and
// maps, set items): owning a list or map that holds other fields, or is
// empty, is owning its presence, not the fields in it.
func checkOthers(bt, at *typed.TypedValue, bs *fieldpath.Set, before, after State, op Op, fail func(string, ...interface{}) error) error {
	taken := fieldpath.NewSet()
	if op.Kind == OpApply {
		taken = after.ours(op.Manager)
	}
	afterEntries := entryMap(after.Owners)
	kept := fieldpath.NewSet()
	for _, e := range before.Owners {
		if e.Manager == op.Manager {
			continue
		}
		now := afterEntries[e.ManagerKey]
		if now == nil {
			now = fieldpath.NewSet()
		}
		if lost := e.Fields.Difference(now).Difference(taken); !lost.Empty() {
			return fail("%s lost %v", e.ManagerKey, FormatSet(lost))
		}
		kept = kept.Union(e.Fields.Intersection(now))
	}
	valueLeaves := fieldpath.NewSet()
	bs.Leaves().Iterate(func(p fieldpath.Path) {
		if v, ok := valueAt(before.Object.Object, p); !ok || !isEmpty(v) {
			valueLeaves.Insert(p.Copy())
		}
	})
	if err := sameValues(bt, at, kept.Difference(taken).Intersection(valueLeaves)); err != nil {
		return fail("a value another manager owns changed: %v", err)
	}
	return nil
}

// checkHandBack checks that a hand-back changed no value and left
// op.Manager none of the fields it gave back.
func checkHandBack(before, after State, op Op, fail func(string, ...interface{}) error) error {
	if !equality.Semantic.DeepEqual(comparableContent(before.Object), comparableContent(after.Object)) {
		return fail("values changed")
	}
	gone := before.ours(op.Manager).Intersection(op.Previous.Union())
	for _, p := range op.Previous {
		// The previous owner's entry as the apiserver keys it: an Apply
		// entry whatever its version (an apply in another version since).
		for _, e := range after.Owners {
			if sameEntry(e.ManagerKey, p.ManagerKey) {
				gone = gone.Difference(e.Fields)
			}
		}
	}
	if left := after.ours(op.Manager).Intersection(gone); !left.Empty() {
		return fail("kept fields of its previous owners %v", FormatSet(left))
	}
	return nil
}

// checkRelease checks that a release changed no value and left op.Manager
// none of the fields it released.
func checkRelease(before, after State, op Op, fail func(string, ...interface{}) error) error {
	if !equality.Semantic.DeepEqual(comparableContent(before.Object), comparableContent(after.Object)) {
		return fail("values changed")
	}
	if left := after.Owners.Applied(op.Manager); left != nil && !left.Fields.Intersection(op.Fields).Empty() {
		return fail("kept released fields %v", FormatSet(left.Fields.Intersection(op.Fields)))
	}
	return nil
}

// checkRemoved checks that a relinquish removed only values of op.Manager
// alone (and the lists and maps they emptied), and all of them but those
// that hold another manager's field.
func checkRemoved(bs *fieldpath.Set, at *typed.TypedValue, before State, op Op, ours *fieldpath.Set, fail func(string, ...interface{}) error) error {
	as, err := at.ToFieldSet()
	if err != nil {
		return err
	}
	others := fieldpath.NewSet()
	for _, e := range before.Owners {
		if e.Manager != op.Manager {
			others = others.Union(e.Fields)
		}
	}
	alone := ours.Difference(others)
	removed := bs.Difference(as).Leaves()
	// A list item or map of op.Manager alone goes whole, with the values
	// in it that nobody owns (a released field, say), as the apiserver's
	// own empty apply removes them.
	owned := before.Owners.Union()
	bad := fieldpath.NewSet()
	removed.Difference(alone).Difference(withParents(alone)).Iterate(func(p fieldpath.Path) {
		if owned.Has(p) || !hasPrefixIn(alone, p) {
			bad.Insert(p.Copy())
		}
	})
	if !bad.Empty() {
		return fail("removed values it did not own alone %v", FormatSet(bad))
	}
	if kept := alone.Leaves().Intersection(as).Difference(withParents(others)).Difference(holders(others, alone)); !kept.Empty() {
		return fail("kept values it owned alone %v", FormatSet(kept))
	}
	return nil
}

// contentSet is every field of obj's content (managed fields aside).
func (m Model) contentSet(obj *unstructured.Unstructured) (*fieldpath.Set, error) {
	tv, err := m.typedContent(obj)
	if err != nil {
		return nil, err
	}
	return tv.ToFieldSet()
}

// typedContent is obj's content (managed fields aside) as a typed value.
func (m Model) typedContent(obj *unstructured.Unstructured) (*typed.TypedValue, error) {
	return m.Schema.ToTyped(&unstructured.Unstructured{Object: WithoutManagedFields(obj.Object)})
}

// sameValues reports an error when a field of set has another value in
// after (at) than in before (bt).
func sameValues(bt, at *typed.TypedValue, set *fieldpath.Set) error {
	if set.Empty() || bt == at {
		return nil
	}
	// Compared as typed values: the order of a map or set list's items
	// is not a value (an apply may reorder them).
	set = withItemKeys(set)
	cmp, err := bt.ExtractItems(set).Compare(at.ExtractItems(set))
	if err != nil {
		return err
	}
	if !cmp.IsSame() {
		return fmt.Errorf("%v", FormatSet(cmp.Modified.Union(cmp.Removed).Union(cmp.Added)))
	}
	return nil
}

// valueAt is the value at p in obj, and whether p names one.
func valueAt(obj map[string]interface{}, p fieldpath.Path) (interface{}, bool) {
	var cur interface{} = obj
	for _, pe := range p {
		next, ok := child(cur, pe)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// withItemKeys is set with the key fields of every map list item its paths
// go through (an extracted item needs its keys).
func withItemKeys(set *fieldpath.Set) *fieldpath.Set {
	out := set.Copy()
	set.Iterate(func(p fieldpath.Path) {
		for i, pe := range p {
			if pe.Key == nil {
				continue
			}
			for _, k := range *pe.Key {
				name := k.Name
				out.Insert(append(p[:i+1].Copy(), fieldpath.PathElement{FieldName: &name}))
			}
		}
	})
	return out
}
