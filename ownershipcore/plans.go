/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// PreviousOwners returns, for every managed fields entry of live other than
// manager's, the fields of intent it owns: what must be recorded before
// manager first writes them, so that HandBack can return them.
func PreviousOwners(live *unstructured.Unstructured, intent *fieldpath.Set, manager string) (ManagedFields, error) {
	owners, err := Owners(live)
	if err != nil {
		return nil, err
	}
	return owners.OwnersOf(intent, manager), nil
}

// HandBackPlan computes the managed fields after handing back: each field
// manager still owns (Apply, main resource) that an entry of previous owned
// before, and that entry does not own now, is moved into that entry (same
// manager, operation, apiVersion and subresource; recreated if it
// vanished); manager keeps only the rest. A field the previous owner still
// shares with manager (both applied the same value) is left as it is: the
// relinquish that follows leaves it with its owner.
// Values are untouched. It returns the new entries and the moved fields;
// nothing to move returns an empty set.
func HandBackPlan(current ManagedFields, manager string, previous ManagedFields) (ManagedFields, *fieldpath.Set) {
	moved := fieldpath.NewSet()
	ours := current.Applied(manager)
	if ours == nil {
		return current, moved
	}
	out := make(ManagedFields, len(current))
	for i, e := range current {
		out[i] = Entry{ManagerKey: e.ManagerKey, Time: e.Time, Fields: e.Fields.Copy()}
	}
	oursIdx := -1
	for i := range out {
		if out[i].Manager == manager && out[i].Operation == metav1.ManagedFieldsOperationApply && out[i].Subresource == "" {
			oursIdx = i
		}
	}
	for _, prev := range previous {
		back := ours.Fields.Intersection(prev.Fields)
		idx := -1
		for i := range out {
			if sameEntry(out[i].ManagerKey, prev.ManagerKey) {
				idx = i
				break
			}
		}
		if idx >= 0 {
			// Fields the previous owner still shares with us are not
			// taken: they need no hand-back (the relinquish that follows
			// leaves them with it).
			back = back.Difference(out[idx].Fields)
		}
		if back.Empty() {
			continue
		}
		moved = moved.Union(back)
		if idx < 0 {
			out = append(out, Entry{ManagerKey: prev.ManagerKey, Time: prev.Time, Fields: fieldpath.NewSet()})
			idx = len(out) - 1
		}
		out[idx].Fields = out[idx].Fields.Union(back)
	}
	out[oursIdx].Fields = out[oursIdx].Fields.Difference(moved)
	return out, moved
}

// sameEntry matches entries as the apiserver keys them: manager, operation
// and subresource, plus apiVersion for Update entries.
func sameEntry(a, b ManagerKey) bool {
	if a.Manager != b.Manager || a.Operation != b.Operation || a.Subresource != b.Subresource {
		return false
	}
	return a.Operation == metav1.ManagedFieldsOperationApply || a.APIVersion == b.APIVersion
}

// ReleasePlan computes the managed fields after manager lets fields go
// without a new owner: its Apply entry (main resource) loses them, no
// other entry changes, values are untouched. It returns the new entries and
// the fields released (those of fields manager owned, with the list items
// and maps of manager that hold them).
func ReleasePlan(current ManagedFields, manager string, fields *fieldpath.Set) (ManagedFields, *fieldpath.Set) {
	ours := current.Applied(manager)
	if ours == nil {
		return current, fieldpath.NewSet()
	}
	released := ours.Fields.Intersection(fields)
	if released.Empty() {
		return current, released
	}
	// A released field stays only with the list items and maps that hold
	// it: those manager owns go too, with an item's key fields, or the
	// relinquish that follows removes them, and the field with them.
	released = released.Union(holders(released, ours.Fields))
	out := make(ManagedFields, len(current))
	for i, e := range current {
		out[i] = Entry{ManagerKey: e.ManagerKey, Time: e.Time, Fields: e.Fields}
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			out[i].Fields = e.Fields.Difference(released)
		}
	}
	return out, released
}

// holders returns the paths of ours that hold a path of others: list items
// and maps above another manager's field (removing them would remove that
// field), with the key fields of such list items: a relinquish or drop
// leaves them in place (released), so no other manager's field goes with
// them. A holder another manager owns too is left out: no removal of ours
// can remove it (a container item both applied, with our env var in it).
func holders(others, ours *fieldpath.Set) *fieldpath.Set {
	out := fieldpath.NewSet()
	others.Iterate(func(p fieldpath.Path) {
		for i := 1; i < len(p); i++ {
			prefix := p[:i]
			if !ours.Has(prefix) || others.Has(prefix) {
				continue
			}
			insertWithKeys(out, prefix, ours)
		}
	})
	return out
}

// insertWithKeys inserts path into out, with, when path is a list item,
// those of its key fields that from holds.
func insertWithKeys(out *fieldpath.Set, path fieldpath.Path, from *fieldpath.Set) {
	out.Insert(path.Copy())
	if last := path[len(path)-1]; last.Key != nil {
		for _, k := range *last.Key {
			name := k.Name
			if kp := append(path.Copy(), fieldpath.PathElement{FieldName: &name}); from.Has(kp) {
				out.Insert(kp)
			}
		}
	}
}
