/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"errors"

	"fmt"

	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// OwnedDiff returns the fields where live differs from the intent desired,
// restricted to what manager is responsible for: fields of the intent whose
// live value differs or is missing, and fields manager owns that the intent
// no longer sets (an apply would remove them). Fields set by others and
// absent from the intent never count: this replaces hard-coded ignore
// lists. An empty set means the intent holds.
func (a *Applier) OwnedDiff(live, desired *unstructured.Unstructured, manager string) (*fieldpath.Set, error) {
	owners, err := Owners(live)
	if err != nil {
		return nil, err
	}
	return a.OwnedDiffOf(live, owners, desired, manager)
}

// OwnedDiffOf is OwnedDiff for a caller that decoded live's managed fields
// already (owners, from Owners(live)): a reconcile decodes them once.
func (a *Applier) OwnedDiffOf(live *unstructured.Unstructured, owners ManagedFields, desired *unstructured.Unstructured, manager string) (*fieldpath.Set, error) {
	intent, err := a.cleanIntent(desired, nil)
	if err != nil {
		return nil, err
	}
	lt, err := a.Schema.ToTyped(live)
	if err != nil {
		return nil, err
	}
	it, err := a.Schema.ToTyped(intent)
	if err != nil {
		return nil, err
	}
	intentSet, err := it.ToFieldSet()
	if err != nil {
		return nil, err
	}
	// Compare the intent with live restricted to the intent's fields.
	cmp, err := lt.ExtractItems(intentSet.Leaves()).Compare(it)
	if err != nil {
		return nil, fmt.Errorf("compare %s: %w", describe(live), err)
	}
	diff := cmp.Added.Union(cmp.Modified).Union(cmp.Removed).Intersection(intentSet)
	if ours := owners.Applied(manager); ours != nil {
		diff = diff.Union(ours.Fields.Difference(intentSet).Leaves())
	}
	return diff.Leaves(), nil
}

// ErrRemoval is returned by ChangedIntent when the patched object lacks
// fields the live object has: a removed field has no owner and no value,
// so SSA can neither record nor hand it back.
var ErrRemoval = errors.New("the patch removes fields; removals cannot be owned or handed back")

// ChangedIntent turns an imperative patch (merge, strategic merge, JSON
// patch) into an intent for manager: the fields whose values patched sets
// differently from live, plus the fields of patched that manager already
// owns (so that a repeated patch keeps its fields and drift on them is
// seen). The result is a partial object for Apply with the identity of
// live. It returns ErrRemoval (wrapped) when the patch removes fields.
func (a *Applier) ChangedIntent(live, patched *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error) {
	return a.ChangedIntentWithin(live, patched, manager, nil)
}

// ChangedIntentWithin is ChangedIntent keeping, of the fields manager owns
// and patched holds, only those at or below a path of written: the fields
// the patch still writes (see ChangedFields). A field the patch no longer
// writes leaves the intent, so that an edit dropping it from the patch
// lets it go under the FieldPatch's deletionPolicy, as for an Apply patch.
// A nil written keeps every owned field (ChangedIntent).
func (a *Applier) ChangedIntentWithin(live, patched *unstructured.Unstructured, manager string, written *fieldpath.Set) (*unstructured.Unstructured, error) {
	pt, pset, fields, err := a.changedFields(live, patched)
	if err != nil {
		return nil, err
	}
	owners, err := Owners(live)
	if err != nil {
		return nil, err
	}
	if ours := owners.Applied(manager); ours != nil {
		kept := ours.Fields.Intersection(pset)
		if written != nil {
			kept = kept.Intersection(underAny(pset, written))
		}
		fields = fields.Union(kept)
	}
	m, ok := pt.ExtractItems(fields, typed.WithAppendKeyFields()).AsValue().Unstructured().(map[string]interface{})
	if !ok || m == nil {
		m = map[string]interface{}{}
	}
	out := &unstructured.Unstructured{Object: m}
	out.SetGroupVersionKind(live.GroupVersionKind())
	out.SetName(live.GetName())
	out.SetNamespace(live.GetNamespace())
	return out, nil
}

// ChangedFields returns the fields whose values patched sets differently
// from live, every field below an added one included (a field set in
// structured-merge-diff's form). It returns ErrRemoval (wrapped) when
// patched lacks fields live has.
func (a *Applier) ChangedFields(live, patched *unstructured.Unstructured) (*fieldpath.Set, error) {
	_, _, fields, err := a.changedFields(live, patched)
	return fields, err
}

// changedFields is ChangedFields, with patched as a typed value and its
// field set.
func (a *Applier) changedFields(live, patched *unstructured.Unstructured) (*typed.TypedValue, *fieldpath.Set, *fieldpath.Set, error) {
	lt, err := a.Schema.ToTyped(live)
	if err != nil {
		return nil, nil, nil, err
	}
	pt, err := a.Schema.ToTyped(patched)
	if err != nil {
		return nil, nil, nil, err
	}
	cmp, err := lt.Compare(pt)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("compare patched %s: %w", describe(live), err)
	}
	if !cmp.Removed.Empty() {
		return nil, nil, nil, fmt.Errorf("%w: %v", ErrRemoval, FormatSet(cmp.Removed))
	}
	pset, err := pt.ToFieldSet()
	if err != nil {
		return nil, nil, nil, err
	}
	// Compare names the top-most added field (a whole new map); the intent
	// needs every field below it.
	return pt, pset, underAny(pset, cmp.Added.Union(cmp.Modified)), nil
}

// underAny returns the paths of set that are in prefixes or below one of
// them.
func underAny(set, prefixes *fieldpath.Set) *fieldpath.Set {
	out := fieldpath.NewSet()
	set.Iterate(func(p fieldpath.Path) {
		for i := len(p); i > 0; i-- {
			if prefixes.Has(p[:i]) {
				out.Insert(p)
				return
			}
		}
	})
	return out
}
