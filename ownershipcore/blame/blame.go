/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package blame is the kubectl-blame view of an object: its YAML, line by
// line, with the managed fields entries that own what each line shows. A
// view for people, kept outside the ownership core, which it reads only
// through its exported types.
package blame

import (
	"sort"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/ownershipcore"
)

// Line is one line of an object's YAML with the managed fields entries
// that own what the line shows: the view kubectl-blame gives.
type Line struct {
	// Text is the YAML line, indented, without a newline.
	Text string
	// Path is the field the line shows (a key: value, a key: opening a
	// map or list, or a list item's first line); nil on the continuation
	// lines of a multi-line string, which belong to the line above.
	Path fieldpath.Path
	// Parent is the index of the line that opens the enclosing map, list
	// or list item, -1 at the top level.
	Parent int
	// Owners are the entries whose field set holds Path itself: a leaf, or
	// a map, list or list item owned as a whole (the "." of FieldsV1). A
	// list item's first line falls back to the item's owners when its own
	// field has none. In the order of managedFields.
	Owners ownershipcore.ManagedFields
}

// Blame renders obj as YAML (sigs.k8s.io/yaml's layout: keys sorted, two
// spaces of indent, list items under their key) without
// metadata.managedFields, and attributes each line to the managed fields
// entries of owners that own it. List items are matched to the entries'
// path elements by key (k:{...}), by value (v:...) or by index (i:N), as
// the apiserver records them (SSA docs, "Field management"). The result
// is deterministic for a given object and owners.
func Blame(obj map[string]interface{}, owners ownershipcore.ManagedFields) []Line {
	obj = ownershipcore.WithoutManagedFields(obj)
	sets := make([]*fieldpath.Set, len(owners))
	for i := range owners {
		sets[i] = owners[i].Fields
	}
	b := &blamer{owners: owners}
	b.mapLines(obj, "", "", fieldpath.Path{}, sets, -1)
	return b.lines
}

type blamer struct {
	owners ownershipcore.ManagedFields
	lines  []Line
}

// ownersOf: the entries whose set (at the parent) has pe as a member, and
// each entry's set below pe.
func (b *blamer) ownersOf(sets []*fieldpath.Set, pe fieldpath.PathElement) (ownershipcore.ManagedFields, []*fieldpath.Set) {
	var own ownershipcore.ManagedFields
	child := make([]*fieldpath.Set, len(sets))
	for i, s := range sets {
		if s == nil {
			continue
		}
		if s.Members.Has(pe) {
			own = append(own, b.owners[i])
		}
		if c, ok := s.Children.Get(pe); ok {
			child[i] = c
		}
	}
	return own, child
}

func (b *blamer) add(text string, path fieldpath.Path, parent int, own ownershipcore.ManagedFields) int {
	b.lines = append(b.lines, Line{Text: text, Path: path, Parent: parent, Owners: own})
	return len(b.lines) - 1
}

// mapLines writes the fields of m at indent; the first one after first
// when m is a list item ("- ").
func (b *blamer) mapLines(m map[string]interface{}, indent, first string, path fieldpath.Path, sets []*fieldpath.Set, parent int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		prefix := indent
		if i == 0 && first != "" {
			prefix = first
		}
		pe := fieldpath.PathElement{FieldName: &keys[i]}
		own, child := b.ownersOf(sets, pe)
		idx := b.value(prefix+yamlKey(k)+":", indent, m[k], append(path.Copy(), pe), child, parent, own)
		if i == 0 && first != "" {
			parent = idx // an item's later fields belong to its "- " line
		}
	}
}

// value writes head (a key and colon, or "-") and v; it returns the index
// of the head line.
func (b *blamer) value(head, indent string, v interface{}, path fieldpath.Path, sets []*fieldpath.Set, parent int, own ownershipcore.ManagedFields) int {
	switch v := v.(type) {
	case map[string]interface{}:
		if len(v) > 0 {
			idx := b.add(head, path, parent, own)
			b.mapLines(v, indent+"  ", "", path, sets, idx)
			return idx
		}
	case []interface{}:
		if len(v) > 0 {
			idx := b.add(head, path, parent, own)
			b.listLines(v, indent, path, sets, idx)
			return idx
		}
	}
	text := scalar(v)
	lines := strings.Split(text, "\n")
	idx := b.add(head+" "+lines[0], path, parent, own)
	for _, l := range lines[1:] {
		b.add(indent+l, nil, idx, nil)
	}
	return idx
}

// listLines writes the items of l at indent ("- " prefix), each matched to
// a path element of the entries' sets.
func (b *blamer) listLines(l []interface{}, indent string, path fieldpath.Path, sets []*fieldpath.Set, parent int) {
	for i, item := range l {
		pe := b.element(sets, item, i)
		own, child := b.ownersOf(sets, pe)
		itemPath := append(path.Copy(), pe)
		if m, ok := item.(map[string]interface{}); ok && len(m) > 0 {
			start := len(b.lines)
			b.mapLines(m, indent+"  ", indent+"- ", itemPath, child, parent)
			if len(b.lines[start].Owners) == 0 && len(own) > 0 {
				b.lines[start].Owners = own
				b.lines[start].Path = itemPath
			}
			continue
		}
		if nested, ok := item.([]interface{}); ok && len(nested) > 0 {
			idx := b.add(indent+"-", itemPath, parent, own)
			b.listLines(nested, indent+"  ", itemPath, child, idx)
			continue
		}
		b.value(indent+"-", indent+"  ", item, itemPath, child, parent, own)
	}
}

// element finds the path element the entries use for item i: a key whose
// fields all equal the item's, the item's value, or index i. An item no
// entry names gets its index.
func (b *blamer) element(sets []*fieldpath.Set, item interface{}, i int) fieldpath.PathElement {
	var found *fieldpath.PathElement
	match := func(pe fieldpath.PathElement) {
		if found != nil {
			return
		}
		switch {
		case pe.Key != nil:
			m, ok := item.(map[string]interface{})
			if !ok {
				return
			}
			for _, f := range *pe.Key {
				v, ok := m[f.Name]
				if !ok || !value.Equals(f.Value, value.NewValueInterface(v)) {
					return
				}
			}
		case pe.Value != nil:
			if !value.Equals(*pe.Value, value.NewValueInterface(item)) {
				return
			}
		case pe.Index != nil:
			if *pe.Index != i {
				return
			}
		default:
			return
		}
		found = &pe
	}
	for _, s := range sets {
		if s != nil {
			s.Members.Iterate(match)
			s.Children.Iterate(match)
		}
	}
	if found != nil {
		return *found
	}
	return fieldpath.PathElement{Index: &i}
}

func yamlKey(k string) string {
	b, err := yaml.Marshal(map[string]interface{}{k: nil})
	if err != nil {
		return k
	}
	return strings.TrimSuffix(string(b), ": null\n")
}

// scalar is v in YAML: a plain or quoted scalar, {} or [] for an empty
// map or list, or a block scalar whose later lines are indented by two.
func scalar(v interface{}) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "<unprintable>"
	}
	return strings.TrimSuffix(string(b), "\n")
}
