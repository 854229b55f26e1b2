/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package invariants

import (
	"fmt"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/fieldops/fieldops/ownershipcore"
)

// This file reads and writes the field a fieldpath.Path names in an
// unstructured object: the same paths managedFields lists, so a value and
// its owners are looked up by one key.

// mustPath parses a path in the ownership core's form
// (`.spec.items[name="x"].value`); the catalogue's paths are constants.
func mustPath(s string) fieldpath.Path {
	p, err := ownershipcore.ParsePath(s)
	if err != nil {
		panic(err)
	}
	return p
}

// lookup returns the value at p in obj, and whether it is there.
func lookup(obj interface{}, p fieldpath.Path) (interface{}, bool) {
	cur := obj
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, ok := cur.(map[string]interface{})
			if !ok {
				return nil, false
			}
			if cur, ok = m[*pe.FieldName]; !ok {
				return nil, false
			}
		case pe.Index != nil:
			l, ok := cur.([]interface{})
			if !ok || *pe.Index >= len(l) {
				return nil, false
			}
			cur = l[*pe.Index]
		default:
			l, _ := cur.([]interface{})
			i := find(l, pe)
			if i < 0 {
				return nil, false
			}
			cur = l[i]
		}
	}
	return cur, true
}

// find returns the index of the list item a key or set-value path element
// names, or -1.
func find(l []interface{}, pe fieldpath.PathElement) int {
	for i, item := range l {
		if pe.Value != nil && value.Equals(value.NewValueInterface(item), *pe.Value) {
			return i
		}
		if pe.Key == nil {
			continue
		}
		m, ok := item.(map[string]interface{})
		if !ok {
			continue
		}
		match := true
		for _, f := range *pe.Key {
			v, ok := m[f.Name]
			if !ok || !value.Equals(value.NewValueInterface(v), f.Value) {
				match = false
				break
			}
		}
		if match {
			return i
		}
	}
	return -1
}

// setPath returns cur with the field at p set to v, creating what leads
// to it: maps for field names, list items (with their key fields) for
// keys. A set value at the end of p is added to the set (v is ignored).
func setPath(cur interface{}, p fieldpath.Path, v interface{}) interface{} {
	if len(p) == 0 {
		return v
	}
	pe := p[0]
	switch {
	case pe.FieldName != nil:
		m, _ := cur.(map[string]interface{})
		if m == nil {
			m = map[string]interface{}{}
		}
		m[*pe.FieldName] = setPath(m[*pe.FieldName], p[1:], v)
		return m
	case pe.Key != nil:
		l, _ := cur.([]interface{})
		i := find(l, pe)
		if i < 0 {
			item := map[string]interface{}{}
			for _, f := range *pe.Key {
				item[f.Name] = f.Value.Unstructured()
			}
			l, i = append(l, item), len(l)
		}
		l[i] = setPath(l[i], p[1:], v)
		return l
	case pe.Value != nil:
		l, _ := cur.([]interface{})
		if find(l, pe) < 0 {
			l = append(l, (*pe.Value).Unstructured())
		}
		return l
	}
	panic(fmt.Sprintf("setPath: unsupported path element %v", pe))
}

// removePath returns cur without the field at p (a no-op when it is not
// there). What led to it stays, possibly empty.
func removePath(cur interface{}, p fieldpath.Path) interface{} {
	if len(p) == 0 {
		return cur
	}
	pe := p[0]
	switch {
	case pe.FieldName != nil:
		m, ok := cur.(map[string]interface{})
		if !ok {
			return cur
		}
		if len(p) == 1 {
			delete(m, *pe.FieldName)
		} else if child, ok := m[*pe.FieldName]; ok {
			m[*pe.FieldName] = removePath(child, p[1:])
		}
		return m
	default:
		l, ok := cur.([]interface{})
		i := find(l, pe)
		if !ok || i < 0 {
			return cur
		}
		if len(p) == 1 {
			return append(l[:i:i], l[i+1:]...)
		}
		l[i] = removePath(l[i], p[1:])
		return l
	}
}

// pointer is the RFC 6901 JSON pointer of a path made of field names only,
// or "" when p has list elements.
func pointer(p fieldpath.Path) string {
	var b strings.Builder
	for _, pe := range p {
		if pe.FieldName == nil {
			return ""
		}
		b.WriteString("/")
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(*pe.FieldName))
	}
	return b.String()
}

// onlyFields reports whether p is made of field names only (reachable
// through maps, as a JSON merge patch can express it).
func onlyFields(p fieldpath.Path) bool { return pointer(p) != "" }

// isSetValue reports whether p ends with a set element (`[="a"]`).
func isSetValue(p fieldpath.Path) bool { return len(p) > 0 && p[len(p)-1].Value != nil }
