/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldset

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// FormatPath prints a field path in the ownership core's path form: the form
// structured-merge-diff's fieldpath.Path.String uses (`.spec.replicas`,
// `.spec.containers[name="app"].image`, `.spec.finalizers[="x"]`, `[0]`),
// except that a field name that is not a plain identifier is quoted:
// `.metadata.annotations["example.com/owner"]`. ParsePath reads it back.
func FormatPath(p fieldpath.Path) string {
	var b strings.Builder
	for _, pe := range p {
		if pe.FieldName != nil && !plainName(*pe.FieldName) {
			q, _ := json.Marshal(*pe.FieldName)
			b.WriteString("[")
			b.Write(q)
			b.WriteString("]")
			continue
		}
		b.WriteString(pe.String())
	}
	return b.String()
}

func plainName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r != '_' && r != '-' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// ParsePath reads a field path in the form FormatPath prints. Elements:
//
//	.name               a field (letters, digits, '_' and '-')
//	["any name"]        a field, JSON-quoted (map keys with dots or slashes)
//	[k1="v",k2=2]       a list item by its keys; values are JSON
//	[=value]            a set item by its value, JSON
//	[3]                 a list item by index (atomic lists only)
//
// It returns an error naming the offset of the first character it could not
// read.
func ParsePath(s string) (fieldpath.Path, error) {
	var p fieldpath.Path
	i := 0
	for i < len(s) {
		switch s[i] {
		case '.':
			j := i + 1
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			name := s[i+1 : j]
			if !plainName(name) {
				return nil, fmt.Errorf("path %q: invalid field name at offset %d (quote it as [\"...\"])", s, i+1)
			}
			p = append(p, fieldpath.PathElement{FieldName: &name})
			i = j
		case '[':
			end, err := closingBracket(s, i)
			if err != nil {
				return nil, err
			}
			pe, err := parseBracket(s[i+1 : end])
			if err != nil {
				return nil, fmt.Errorf("path %q at offset %d: %w", s, i, err)
			}
			p = append(p, pe)
			i = end + 1
		default:
			return nil, fmt.Errorf("path %q: expected '.' or '[' at offset %d", s, i)
		}
	}
	if len(p) == 0 {
		return nil, fmt.Errorf("path %q is empty", s)
	}
	return p, nil
}

// closingBracket finds the ']' that closes the '[' at open, skipping JSON
// strings.
func closingBracket(s string, open int) (int, error) {
	inString := false
	for j := open + 1; j < len(s); j++ {
		switch c := s[j]; {
		case inString && c == '\\':
			j++
		case c == '"':
			inString = !inString
		case !inString && c == ']':
			return j, nil
		}
	}
	return 0, fmt.Errorf("path %q: unclosed '[' at offset %d", s, open)
}

func parseBracket(in string) (fieldpath.PathElement, error) {
	switch {
	case in == "":
		return fieldpath.PathElement{}, fmt.Errorf("empty []")
	case in[0] == '"':
		var name string
		if err := json.Unmarshal([]byte(in), &name); err != nil {
			return fieldpath.PathElement{}, fmt.Errorf("quoted field name: %w", err)
		}
		return fieldpath.PathElement{FieldName: &name}, nil
	case in[0] == '=':
		v, err := value.FromJSON([]byte(in[1:]))
		if err != nil {
			return fieldpath.PathElement{}, fmt.Errorf("set value: %w", err)
		}
		return fieldpath.PathElement{Value: &v}, nil
	case in[0] >= '0' && in[0] <= '9':
		n, err := strconv.Atoi(in)
		if err != nil {
			return fieldpath.PathElement{}, fmt.Errorf("index: %w", err)
		}
		return fieldpath.PathElement{Index: &n}, nil
	}
	var fields value.FieldList
	for in != "" {
		eq := strings.IndexByte(in, '=')
		if eq <= 0 {
			return fieldpath.PathElement{}, fmt.Errorf("key %q: want name=value", in)
		}
		name := in[:eq]
		rest := in[eq+1:]
		end := valueEnd(rest)
		v, err := value.FromJSON([]byte(rest[:end]))
		if err != nil {
			return fieldpath.PathElement{}, fmt.Errorf("key %s: %w", name, err)
		}
		fields = append(fields, value.Field{Name: name, Value: v})
		in = strings.TrimPrefix(rest[end:], ",")
	}
	fields.Sort()
	return fieldpath.PathElement{Key: &fields}, nil
}

// valueEnd returns the length of the JSON value at the start of s, which
// ends at the first ',' outside a string.
func valueEnd(s string) int {
	inString := false
	for j := 0; j < len(s); j++ {
		switch c := s[j]; {
		case inString && c == '\\':
			j++
		case c == '"':
			inString = !inString
		case !inString && c == ',':
			return j
		}
	}
	return len(s)
}

// ParsePathSet reads a list of paths (ParsePath) into a field set.
func ParsePathSet(paths []string) (*fieldpath.Set, error) {
	set := fieldpath.NewSet()
	for _, s := range paths {
		p, err := ParsePath(s)
		if err != nil {
			return nil, err
		}
		set.Insert(p)
	}
	return set, nil
}

// FormatSet lists the leaf paths of a field set (the fields, not the
// prefixes that lead to them) in FormatPath form, sorted.
func FormatSet(s *fieldpath.Set) []string {
	var out []string
	if s == nil {
		return nil
	}
	s.Leaves().Iterate(func(p fieldpath.Path) { out = append(out, FormatPath(p)) })
	sort.Strings(out)
	return out
}
