/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldset

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// FormatMembers lists every member of s, sorted: not only its leaves
// (FormatSet) but also a map or list item that is a member while members
// below it are too (the "." of FieldsV1: a list item owned as a whole), so
// that ParseMembers reads the list back into the set s is. Each member is
// in FormatPath form when ParsePath reads that form back into the same
// path, element by element as FieldsV1 serializes it (KEP-555's "f:",
// "k:", "v:" and "i:" keys). A member FormatPath cannot name exactly (a
// list key whose name starts with a digit or holds "=" or "]", a key or
// set value that is a map or a list, a string FormatPath would quote in
// Go's form rather than JSON's) is listed as
// the FieldsV1 object of a set holding that member alone, which starts
// with "{" where a path starts with "." or "[". It returns an error when a
// member cannot be serialized at all (an empty path element), as
// FieldsV1 could not hold it either. A name that is not UTF-8 (which no
// object the apiserver decoded holds) is listed with U+FFFD in place of
// its invalid bytes, as any JSON string holds it.
func FormatMembers(s *fieldpath.Set) ([]string, error) {
	if s == nil {
		return nil, nil
	}
	var out []string
	var err error
	s.Iterate(func(p fieldpath.Path) {
		if err != nil {
			return
		}
		var item string
		item, err = formatMember(p)
		out = append(out, item)
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// formatMember is p in FormatPath form when that form is exact, else the
// FieldsV1 object of {p}.
func formatMember(p fieldpath.Path) (string, error) {
	s := FormatPath(p)
	exact, err := samePath(p, s)
	if err != nil {
		return "", err
	}
	if exact {
		return s, nil
	}
	raw, err := fieldpath.NewSet(p.Copy()).ToJSON()
	if err != nil {
		return "", fmt.Errorf("member %s: %w", s, err)
	}
	// A status is JSON, whose strings hold UTF-8 only.
	return strings.ToValidUTF8(string(raw), "\uFFFD"), nil
}

// samePath reports whether ParsePath reads s back into p exactly: the same
// elements, each serialized as FieldsV1 serializes it, and s valid UTF-8
// (a status holds JSON strings, which replace invalid bytes). Errors: an
// element of p that cannot be serialized.
func samePath(p fieldpath.Path, s string) (bool, error) {
	want := make([]string, len(p))
	for i, pe := range p {
		key, err := fieldpath.SerializePathElement(pe)
		if err != nil {
			return false, fmt.Errorf("member %s: %w", s, err)
		}
		want[i] = key
	}
	if !utf8.ValidString(s) {
		return false, nil
	}
	q, err := ParsePath(s)
	if err != nil || len(q) != len(p) {
		return false, nil
	}
	for i, pe := range q {
		if key, err := fieldpath.SerializePathElement(pe); err != nil || key != want[i] {
			return false, nil
		}
	}
	return true, nil
}

// ParseMembers reads a list FormatMembers wrote into a field set: a path
// (ParsePath) is one member; an item that starts with "{" is a FieldsV1
// object whose members it adds. It returns an error naming the first
// item it cannot read.
func ParseMembers(list []string) (*fieldpath.Set, error) {
	set := fieldpath.NewSet()
	for _, item := range list {
		if strings.HasPrefix(item, "{") {
			part := fieldpath.NewSet()
			if err := part.FromJSON(bytes.NewReader([]byte(item))); err != nil {
				return nil, fmt.Errorf("field %s: %w", item, err)
			}
			set = set.Union(part)
			continue
		}
		p, err := ParsePath(item)
		if err != nil {
			return nil, err
		}
		set.Insert(p)
	}
	return set, nil
}
