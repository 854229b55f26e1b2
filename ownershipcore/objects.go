/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// sameObject compares two objects' content and managed fields, ignoring the
// managed fields' times. Entries compare in order, as decoded JSON: a field
// set's FieldsV1 form is canonical (structured-merge-diff writes it), so two
// entries with the same set have equal FieldsV1 maps. Nothing is copied or
// decoded: this runs on every apply decision.
func sameObject(a, b *unstructured.Unstructured) bool {
	ea, _, _ := unstructured.NestedFieldNoCopy(a.Object, "metadata", "managedFields")
	eb, _, _ := unstructured.NestedFieldNoCopy(b.Object, "metadata", "managedFields")
	la, _ := ea.([]interface{})
	lb, _ := eb.([]interface{})
	if len(la) != len(lb) {
		return false
	}
	for i := range la {
		if !sameEntryContent(la[i], lb[i]) {
			return false
		}
	}
	return equality.Semantic.DeepEqual(WithoutManagedFields(a.Object), WithoutManagedFields(b.Object))
}

// sameEntryContent compares two managedFields entries of unstructured objects
// without their times.
func sameEntryContent(a, b interface{}) bool {
	ma, oka := a.(map[string]interface{})
	mb, okb := b.(map[string]interface{})
	if !oka || !okb {
		return equality.Semantic.DeepEqual(a, b)
	}
	n := 0
	for k, va := range ma {
		if k == "time" {
			continue
		}
		vb, ok := mb[k]
		if !ok || !equality.Semantic.DeepEqual(va, vb) {
			return false
		}
		n++
	}
	for k := range mb {
		if k != "time" {
			n--
		}
	}
	return n == 0
}

// WithoutManagedFields is a shallow copy of the unstructured object obj
// whose metadata leaves out managedFields (obj itself when it has none);
// obj is not changed, and the copy shares every other value with it.
func WithoutManagedFields(obj map[string]interface{}) map[string]interface{} {
	md, ok := obj["metadata"].(map[string]interface{})
	if !ok {
		return obj
	}
	if _, has := md["managedFields"]; !has {
		return obj
	}
	out := make(map[string]interface{}, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	m := make(map[string]interface{}, len(md))
	for k, v := range md {
		if k != "managedFields" {
			m[k] = v
		}
	}
	out["metadata"] = m
	return out
}

// live reads the object the intent names, nil when it does not exist.
func (a *Applier) live(ctx context.Context, intent *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return a.get(ctx, a.Reader, intent)
}

// Get reads the live object obj names (apiVersion, kind, namespace, name)
// through Reader; nil, nil when it does not exist.
func (a *Applier) Get(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return a.get(ctx, a.Reader, obj)
}

// GetFresh is Get through APIReader: the apiserver's current object, never
// a cached copy.
func (a *Applier) GetFresh(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return a.get(ctx, a.freshReader(), obj)
}

func (a *Applier) get(ctx context.Context, r client.Reader, intent *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(intent.GroupVersionKind())
	err := r.Get(ctx, client.ObjectKeyFromObject(intent), live)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", describe(intent), err)
	}
	return live, nil
}

// cleanIntent copies desired without the fields a client may not apply
// (managedFields, resourceVersion, uid, creationTimestamp, generation,
// status) and without ignore.
func (a *Applier) cleanIntent(desired *unstructured.Unstructured, ignore *fieldpath.Set) (*unstructured.Unstructured, error) {
	intent := desired.DeepCopy()
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink"} {
		unstructured.RemoveNestedField(intent.Object, "metadata", f)
	}
	delete(intent.Object, "status")
	if ignore != nil && !ignore.Empty() {
		return a.RemoveFields(intent, ignore)
	}
	return intent, nil
}

// FieldSet returns the field set of an intent: every field it sets,
// with list items by their keys, as the apiserver records it.
func (a *Applier) FieldSet(obj *unstructured.Unstructured) (*fieldpath.Set, error) {
	tv, err := a.Schema.ToTyped(obj)
	if err != nil {
		return nil, err
	}
	set, err := tv.ToFieldSet()
	if err != nil {
		return nil, fmt.Errorf("field set of %s: %w", describe(obj), err)
	}
	return set, nil
}

// RemoveFields returns a copy of obj without the fields in set (and
// everything below them), using the schema for list keys.
func (a *Applier) RemoveFields(obj *unstructured.Unstructured, set *fieldpath.Set) (*unstructured.Unstructured, error) {
	tv, err := a.Schema.ToTyped(obj)
	if err != nil {
		return nil, err
	}
	removed := tv.RemoveItems(set)
	// structured-merge-diff leaves a map whose every entry was removed as
	// null: drop it, and each map and list above it the removal leaves
	// empty, inside list items too, so that ignoring the only annotation
	// of an object ignores it ("annotations: null" is not applied) and a
	// yielded last field does not leave an intent of "spec: {}" or
	// "params: null" in a list item, which would claim .spec or .params.
	// A list item left with its keys alone stays: the applier may own it,
	// and dropping it from the intent would relinquish it, and with it
	// other managers' fields inside it.
	m, ok := removed.AsValue().Unstructured().(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("remove fields from %s: not an object", describe(obj))
	}
	set.Iterate(func(p fieldpath.Path) { pruneAbove(m, p) })
	out := &unstructured.Unstructured{Object: m}
	// Identity stays even if a path named it.
	out.SetGroupVersionKind(obj.GroupVersionKind())
	out.SetName(obj.GetName())
	out.SetNamespace(obj.GetNamespace())
	return out, nil
}

// pruneAbove removes, from the deepest up, each parent of p in obj that
// is null, an empty map or an empty list, inside list items too; it stops
// at the first parent that holds something else, and at a list item,
// which keeps at least its keys.
func pruneAbove(obj map[string]interface{}, p fieldpath.Path) {
	for i := len(p) - 1; i >= 1; i-- {
		vals := locate(obj, p[:i])
		if vals == nil {
			return
		}
		v, pe := vals[i], p[i-1]
		empty := v == nil
		switch t := v.(type) {
		case map[string]interface{}:
			// A list item left with its keys alone stays: dropping it
			// would relinquish the item, and with it what others own
			// inside it, if the applier owned the item before.
			empty = len(t) == 0 && pe.Key == nil
		case []interface{}:
			empty = len(t) == 0
		}
		if !empty {
			return
		}
		shorter, ok := without(vals[i-1], pe)
		if !ok {
			return
		}
		if i == 1 && pe.FieldName != nil {
			delete(obj, *pe.FieldName)
			continue
		}
		if set(vals[i-2], p[i-2], shorter) != nil {
			return
		}
	}
}

// locate returns the values along p in obj (out[k] is the value at p[:k],
// out[0] is obj), or nil when one is missing.
func locate(obj map[string]interface{}, p fieldpath.Path) []interface{} {
	out := make([]interface{}, 0, len(p)+1)
	var v interface{} = obj
	out = append(out, v)
	for _, pe := range p {
		c, ok := child(v, pe)
		if !ok {
			return nil
		}
		v = c
		out = append(out, v)
	}
	return out
}

func describe(obj *unstructured.Unstructured) string {
	ref := obj.GetKind() + " " + obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		ref = obj.GetKind() + " " + ns + "/" + obj.GetName()
	}
	return ref
}
