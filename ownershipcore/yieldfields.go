/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// Yielded is the part of an intent YieldFields left to one field
// manager: the fields (in structured-merge-diff's form) that manager
// owns on the live object.
type Yielded struct {
	Manager string
	Fields  *fieldpath.Set
}

// YieldFields returns desired, the intent manager is about to apply to
// live, without every field that on live is owned by a field manager
// yieldTo accepts and that manager does not co-own with the value
// desired gives it; and, per yielded manager, what it left to it. When
// nothing is left to anyone it returns desired itself and no Yielded.
//
// Applying the result without force cannot conflict with a yielded
// manager: Server-Side Apply reports a conflict only for a field the
// applier sets to a value other than the live one while another manager
// owns it, and a field the applier co-owns with the live value is not
// changed (https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts).
// Leaving the field out relinquishes manager's share of it, if any; the
// value stays, owned by the other manager. Argo CD's
// RespectIgnoreDifferences reaches the same end for
// ignoreDifferences.managedFieldsManagers by applying the live values
// instead, which makes argocd-controller a co-owner (docs/gitops.md).
//
// Only leaves of desired's field set are left out, never a list item's
// key field: a map or a list item that desired sets keeps the fields
// nobody else owns, and an item reduced to its keys stays (RemoveFields).
func (a *Applier) YieldFields(live, desired *unstructured.Unstructured, manager string, yieldTo func(string) bool) (*unstructured.Unstructured, []Yielded, error) {
	owners, err := Owners(live)
	if err != nil {
		return nil, nil, fmt.Errorf("managed fields of %s: %w", describe(live), err)
	}
	theirs := fieldpath.NewSet()
	for _, e := range owners {
		if e.Manager != manager && yieldTo(e.Manager) {
			theirs = theirs.Union(e.Fields)
		}
	}
	if theirs.Empty() {
		return desired, nil, nil
	}
	remove, err := a.yieldSet(live, desired, theirs, ownedByManager(owners, manager))
	if err != nil || remove.Empty() {
		return desired, nil, err
	}
	out, err := a.RemoveFields(desired, remove)
	if err != nil {
		return nil, nil, err
	}
	return out, yieldedTo(owners, remove, manager, yieldTo), nil
}

// yieldSet is the set YieldFields leaves out: the leaves of desired's
// field set that theirs holds, but for list items' key fields and the
// fields ours co-owns that desired leaves at their live value.
func (a *Applier) yieldSet(live, desired *unstructured.Unstructured, theirs, ours *fieldpath.Set) (*fieldpath.Set, error) {
	lt, err := a.Schema.ToTyped(live)
	if err != nil {
		return nil, err
	}
	dt, err := a.Schema.ToTyped(desired)
	if err != nil {
		return nil, err
	}
	dset, err := dt.ToFieldSet()
	if err != nil {
		return nil, fmt.Errorf("field set of %s: %w", describe(desired), err)
	}
	candidates := theirs.Intersection(dset.Leaves())
	if candidates.Empty() {
		return candidates, nil
	}
	cmp, err := lt.Compare(dt)
	if err != nil {
		return nil, fmt.Errorf("compare %s with its intent: %w", describe(live), err)
	}
	changed := underAny(dset, cmp.Added.Union(cmp.Modified))
	remove := fieldpath.NewSet()
	candidates.Iterate(func(p fieldpath.Path) {
		if isKeyField(p) || (ours.Has(p) && !changed.Has(p)) {
			return
		}
		remove.Insert(p.Copy())
	})
	return remove, nil
}

// isKeyField reports whether p names a key field of a map list item
// (containers[name="app"].name): the item's identity, not a value.
func isKeyField(p fieldpath.Path) bool {
	n := len(p)
	if n < 2 || p[n-1].FieldName == nil || p[n-2].Key == nil {
		return false
	}
	for _, k := range *p[n-2].Key {
		if k.Name == *p[n-1].FieldName {
			return true
		}
	}
	return false
}

// yieldedTo is, per manager yieldTo accepts (in owners' order, each
// once), the part of remove it owns.
func yieldedTo(owners ManagedFields, remove *fieldpath.Set, manager string, yieldTo func(string) bool) []Yielded {
	var out []Yielded
	index := map[string]int{}
	for _, e := range owners {
		if e.Manager == manager || !yieldTo(e.Manager) {
			continue
		}
		in := e.Fields.Intersection(remove)
		if in.Empty() {
			continue
		}
		if i, ok := index[e.Manager]; ok {
			out[i].Fields = out[i].Fields.Union(in)
			continue
		}
		index[e.Manager] = len(out)
		out = append(out, Yielded{Manager: e.Manager, Fields: in})
	}
	return out
}

// WithLiveValues returns a copy of desired in which every field of
// yielded has its value on live, instead of being left out as
// YieldFields leaves it. It is for a client-side three-way merge, such as
// Helm 3's upgrade (helm.sh/helm/v3 pkg/kube createPatch: previous
// manifest, new manifest, live object), which leaves a field alone when
// the new manifest has its live value, but deletes a field the previous
// manifest had and the new one lacks.
func (a *Applier) WithLiveValues(live, desired *unstructured.Unstructured, yielded []Yielded) (*unstructured.Unstructured, error) {
	set := fieldpath.NewSet()
	for _, y := range yielded {
		set = set.Union(y.Fields)
	}
	lt, err := a.Schema.ToTyped(live)
	if err != nil {
		return nil, err
	}
	dt, err := a.Schema.ToTyped(desired)
	if err != nil {
		return nil, err
	}
	merged, err := dt.Merge(lt.ExtractItems(set, typed.WithAppendKeyFields()))
	if err != nil {
		return nil, fmt.Errorf("live values of %s: %w", describe(live), err)
	}
	m, ok := merged.AsValue().Unstructured().(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("live values of %s: not an object", describe(live))
	}
	return &unstructured.Unstructured{Object: m}, nil
}
