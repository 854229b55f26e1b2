/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// SchemaInfo answers what the schema of one kind, as the apiserver's field
// manager reads it (Schema), says about the value at a path: how Server-Side
// Apply merges it (FieldShape) and how managedFields name it (FieldPath).
// Paths are a JSON pointer's tokens (RFC 6901, unescaped): a field name
// descends into an object or a map, a list position (a decimal index or
// "-") into the items of a list, whose schema is the same at every
// position; a deduced, untyped value may be either. Make one with
// Schema.Info or SchemaInfoOf. It is read-only and safe for concurrent
// use.
type SchemaInfo struct {
	schema *smdschema.Schema
	root   smdschema.TypeRef
}

// Info returns the SchemaInfo of obj's kind, read from the typed value of
// obj (ToTyped, whose errors it returns: ErrUnknownKind wrapped when the
// apiserver publishes no schema for the kind, a validation error when obj
// has fields the schema does not declare).
func (s *Schema) Info(obj *unstructured.Unstructured) (*SchemaInfo, error) {
	tv, err := s.ToTyped(obj)
	if err != nil {
		return nil, err
	}
	return SchemaInfoOf(tv), nil
}

// SchemaInfoOf returns the SchemaInfo of the schema tv was typed with, from
// tv's own type: for callers (and tests) that already hold a typed value.
func SchemaInfoOf(tv *typed.TypedValue) *SchemaInfo {
	return &SchemaInfo{schema: tv.Schema(), root: tv.TypeRef()}
}

// FieldShape is how Server-Side Apply merges the value at one path of a
// kind's schema (SSA docs, "Merge strategy"; the OpenAPI extensions
// x-kubernetes-list-type, x-kubernetes-list-map-keys and
// x-kubernetes-map-type, as structured-merge-diff reads them). A deduced,
// untyped value is both a list and an object: both ListType and MapType
// are set.
type FieldShape struct {
	// ListType is "atomic", "set" or "map" for a list ("" for a value
	// that is not one): a list whose items are not associative is
	// atomic; an associative one is a map list when it has key fields, a
	// set otherwise.
	ListType string
	// Keys are the key fields of an associative list
	// (x-kubernetes-list-map-keys), nil for any other value.
	Keys []string
	// MapType is "atomic" or "granular" for an object or a map ("" for a
	// value that is neither one).
	MapType string
	// Struct reports whether the value is an object with named fields
	// (such as a volume's emptyDir), rather than a map of arbitrary keys
	// (data, labels) or a scalar.
	Struct bool
}

// Shape returns the FieldShape of the value at pointer; ok is false when
// the schema declares no value there.
func (i *SchemaInfo) Shape(pointer []string) (shape FieldShape, ok bool) {
	a, ok := i.atom(pointer)
	if !ok {
		return FieldShape{}, false
	}
	if l := a.List; l != nil {
		shape.ListType = "atomic"
		if l.ElementRelationship == smdschema.Associative {
			shape.Keys = slices.Clone(l.Keys)
			shape.ListType = "set"
			if len(l.Keys) > 0 {
				shape.ListType = "map"
			}
		}
	}
	if m := a.Map; m != nil {
		shape.MapType = "granular"
		if m.ElementRelationship == smdschema.Atomic {
			shape.MapType = "atomic"
		}
		shape.Struct = len(m.Fields) > 0
	}
	return shape, true
}

// atom resolves the type at pointer; ok is false when the schema does not
// declare it. A token that is a list position descends into a list, any
// other into a map.
func (i *SchemaInfo) atom(pointer []string) (smdschema.Atom, bool) {
	tr := i.root
	for _, t := range pointer {
		a, ok := i.schema.Resolve(tr)
		if !ok {
			return smdschema.Atom{}, false
		}
		switch {
		case a.List != nil && isListPosition(t):
			tr = a.List.ElementType
		case a.Map != nil:
			if f, ok := a.Map.FindField(t); ok {
				tr = f.Type
			} else if a.Map.ElementType.NamedType != nil || a.Map.ElementType.Inlined != (smdschema.Atom{}) {
				tr = a.Map.ElementType
			} else {
				return smdschema.Atom{}, false
			}
		default:
			return smdschema.Atom{}, false
		}
	}
	return i.schema.Resolve(tr)
}

// isListPosition reports whether a JSON pointer token can name a list
// position: "-" or a decimal index.
func isListPosition(t string) bool {
	if t == "-" {
		return true
	}
	_, err := strconv.Atoi(t)
	return err == nil
}

// FieldPath returns the field path, as managedFields record it, of the
// value that pointer names in doc (a decoded JSON object of the kind):
// items of map lists by their keys, items of sets by their values
// (fieldset.WithItemKeys, fieldset.WithItemValue). At an atomic list it
// stops: the list is the field, whatever item pointer goes on to. ok is
// false when pointer names no value of doc, or one the schema does not
// declare, or an item of a map list that lacks one of its keys.
func (i *SchemaInfo) FieldPath(doc interface{}, pointer []string) (fieldset.Path, bool) {
	var out fieldset.Path
	tr := i.root
	for _, t := range pointer {
		a, ok := i.schema.Resolve(tr)
		if !ok {
			return nil, false
		}
		switch d := doc.(type) {
		case []interface{}:
			var atomic bool
			out, doc, atomic, ok = listStep(out, a.List, d, t)
			if !ok {
				return nil, false
			}
			if atomic {
				return out, true
			}
			tr = a.List.ElementType
		case map[string]interface{}:
			if a.Map == nil {
				return nil, false
			}
			out = fieldset.WithField(out, t)
			tr = fieldType(a.Map, t)
			if doc, ok = d[t]; !ok {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return out, true
}

// listStep takes FieldPath one token (t) into the list d of type l: it
// returns the path of the item and the item, or atomic when l is an
// atomic list (the path stays the list's), or ok false when t names no
// item of d.
func listStep(p fieldset.Path, l *smdschema.List, d []interface{}, t string) (out fieldset.Path, item interface{}, atomic, ok bool) {
	if l == nil {
		return nil, nil, false, false
	}
	n, err := strconv.Atoi(t)
	if err != nil || n < 0 || n >= len(d) {
		return nil, nil, false, false
	}
	if l.ElementRelationship != smdschema.Associative {
		return p, nil, true, true
	}
	item = d[n]
	if len(l.Keys) == 0 {
		return fieldset.WithItemValue(p, item), item, false, true
	}
	m, isMap := item.(map[string]interface{})
	if !isMap {
		return nil, nil, false, false
	}
	for _, k := range l.Keys {
		if _, has := m[k]; !has {
			return nil, nil, false, false
		}
	}
	return fieldset.WithItemKeys(p, m, l.Keys), item, false, true
}

// fieldType is the type of field name of m: the declared field's, else
// m's element type (a map's values).
func fieldType(m *smdschema.Map, name string) smdschema.TypeRef {
	if f, ok := m.FindField(name); ok {
		return f.Type
	}
	return m.ElementType
}
