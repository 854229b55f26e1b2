/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldset

import (
	"slices"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// WithField returns p followed by the field name: the path of a field of
// the object (or of a value of the map) at p, as managedFields names it
// (`.spec.replicas`). p is left as it is: the result never shares a
// backing array that a later append to p could overwrite.
func WithField(p Path, name string) Path {
	return append(slices.Clip(p), fieldpath.PathElement{FieldName: &name})
}

// WithItemKeys returns p followed by the item of the map list at p
// (x-kubernetes-list-type: map) that item is, named as managedFields
// names it: by the values item has for the key fields keys
// (x-kubernetes-list-map-keys), in key-name order
// (`.spec.ports[port=80,protocol="TCP"]`; structured-merge-diff's
// fieldpath.KeyByFields). A key item lacks is left out of the name. p is
// left as it is.
func WithItemKeys(p Path, item map[string]interface{}, keys []string) Path {
	key := value.FieldList{}
	for _, k := range keys {
		if v, ok := item[k]; ok {
			key = append(key, value.Field{Name: k, Value: value.NewValueInterface(v)})
		}
	}
	key.Sort()
	return append(slices.Clip(p), fieldpath.PathElement{Key: &key})
}

// WithItemValue returns p followed by the item v of the set at p
// (x-kubernetes-list-type: set), named as managedFields names it: by its
// value (`.metadata.finalizers[="example.com/x"]`). v is a decoded JSON
// value (string, bool, int64, float64, ...). p is left as it is.
func WithItemValue(p Path, v interface{}) Path {
	val := value.NewValueInterface(v)
	return append(slices.Clip(p), fieldpath.PathElement{Value: &val})
}

// HasAtOrBelow reports whether set holds p itself or a path below it (a
// field of p, an item of the list at p, and so on): whether a field
// manager whose field set is set owns something of p. A nil set holds
// nothing.
func HasAtOrBelow(set *Set, p Path) bool {
	if set == nil {
		return false
	}
	if set.Has(p) {
		return true
	}
	below := false
	set.Iterate(func(q Path) {
		if !below && len(q) > len(p) && q[:len(p)].Equals(p) {
			below = true
		}
	})
	return below
}
