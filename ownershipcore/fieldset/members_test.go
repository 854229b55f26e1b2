/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldset_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// membersCases are FieldsV1 objects and the list FormatMembers writes for
// them: the path form wherever it is exact, the FieldsV1 object of the
// member alone where it is not.
var membersCases = []struct {
	name, fieldsV1 string
	want           []string
}{
	{"a field", `{"f:spec":{"f:replicas":{}}}`, []string{".spec.replicas"}},
	{"a list item owned as a whole, with its fields",
		`{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}`,
		[]string{`.spec.containers[name="app"]`, `.spec.containers[name="app"].image`, `.spec.containers[name="app"].name`}},
	{"a map owned as a whole, with a field below", `{"f:spec":{".":{},"f:replicas":{}}}`, []string{".spec", ".spec.replicas"}},
	{"nested keyed items",
		`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:env":{"k:{\"name\":\"HTTP_PROXY\"}":{".":{},"f:name":{},"f:value":{}}}}}}}}}`,
		[]string{`.spec.template.spec.containers[name="app"].env[name="HTTP_PROXY"]`, `.spec.template.spec.containers[name="app"].env[name="HTTP_PROXY"].name`, `.spec.template.spec.containers[name="app"].env[name="HTTP_PROXY"].value`}},
	{"an item with several keys", `{"f:spec":{"f:ports":{"k:{\"containerPort\":53,\"protocol\":\"UDP\"}":{".":{},"f:name":{}}}}}`,
		[]string{`.spec.ports[containerPort=53,protocol="UDP"]`, `.spec.ports[containerPort=53,protocol="UDP"].name`}},
	{"a float, a bool and a null key", `{"f:items":{"k:{\"a\":1.5,\"b\":true,\"c\":null}":{}}}`, []string{`.items[a=1.5,b=true,c=null]`}},
	{"set values", `{"f:metadata":{"f:finalizers":{"v:\"example.com/x\"":{},"v:3":{},"v:null":{},"v:false":{}}}}`,
		[]string{`.metadata.finalizers[="example.com/x"]`, `.metadata.finalizers[=3]`, `.metadata.finalizers[=false]`, `.metadata.finalizers[=null]`}},
	{"an index", `{"f:spec":{"f:args":{"i:2":{}}}}`, []string{".spec.args[2]"}},
	{"dots, slashes, brackets and quotes in a map key", `{"f:metadata":{"f:annotations":{"f:example.com/a.b[c]\"d\"=e,f":{}}}}`,
		[]string{`.metadata.annotations["example.com/a.b[c]\"d\"=e,f"]`}},
	{"an empty map key", `{"f:data":{"f:":{}}}`, []string{`.data[""]`}},
	{"non-ASCII in a map key", `{"f:data":{"f:café/ü":{}}}`, []string{`.data["café/ü"]`}},
	{"commas, brackets, = and quotes in a key value", `{"f:env":{"k:{\"name\":\"a,b=c]\\\"d[\"}":{"f:value":{}}}}`,
		[]string{`.env[name="a,b=c]\"d["].value`}},
	{"a key name that starts with a digit", `{"f:items":{"k:{\"0x\":\"a\"}":{}}}`, []string{`{"f:items":{"k:{\"0x\":\"a\"}":{}}}`}},
	{"a key name with =", `{"f:items":{"k:{\"a=b\":\"x\"}":{}}}`, []string{`{"f:items":{"k:{\"a=b\":\"x\"}":{}}}`}},
	{"a key value that is a map", `{"f:items":{"k:{\"a\":{\"b\":1,\"c\":2}}":{}}}`, []string{`{"f:items":{"k:{\"a\":{\"b\":1,\"c\":2}}":{}}}`}},
	{"a set value that is a list", `{"f:items":{"v:[1,2]":{}}}`, []string{`{"f:items":{"v:[1,2]":{}}}`}},
	{"a control character in a key value", `{"f:env":{"k:{\"name\":\"\\u0007\"}":{}}}`, []string{`{"f:env":{"k:{\"name\":\"\\u0007\"}":{}}}`}},
	{"an item with no key", `{"f:items":{"k:{}":{".":{},"f:a":{}}}}`,
		[]string{`{"f:items":{"k:{}":{"f:a":{}}}}`, `{"f:items":{"k:{}":{}}}`}},
	{"exact and inexact members together", `{"f:items":{"k:{\"0x\":\"a\"}":{".":{},"f:v":{}}},"f:spec":{"f:replicas":{}}}`,
		[]string{`.spec.replicas`, `{"f:items":{"k:{\"0x\":\"a\"}":{"f:v":{}}}}`, `{"f:items":{"k:{\"0x\":\"a\"}":{}}}`}},
}

func decode(t testing.TB, fieldsV1 string) *fieldpath.Set {
	t.Helper()
	s := fieldpath.NewSet()
	if err := s.FromJSON(strings.NewReader(fieldsV1)); err != nil {
		t.Fatalf("FieldsV1 %s: %v", fieldsV1, err)
	}
	return s
}

func encode(t testing.TB, s *fieldpath.Set) string {
	t.Helper()
	raw, err := s.ToJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestFormatMembers(t *testing.T) {
	for _, tc := range membersCases {
		t.Run(tc.name, func(t *testing.T) {
			set := decode(t, tc.fieldsV1)
			got, err := fieldset.FormatMembers(set)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("FormatMembers(%s) =\n%q\nwant\n%q", tc.fieldsV1, got, tc.want)
			}
			back, err := fieldset.ParseMembers(got)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := encode(t, back), encode(t, set); a != b {
				t.Fatalf("ParseMembers(FormatMembers(%s)) is %s", b, a)
			}
		})
	}
}

func TestParseMembersErrors(t *testing.T) {
	for _, list := range [][]string{{"spec"}, {".spec["}, {`{"f:spec":`}, {`{"f:spec":{"k:{":{}}}`}} {
		if s, err := fieldset.ParseMembers(list); err == nil {
			t.Errorf("ParseMembers(%q) = %v, want an error", list, s)
		}
	}
	if s, err := fieldset.ParseMembers(nil); err != nil || !s.Empty() {
		t.Errorf("ParseMembers(nil) = %v, %v; want the empty set", s, err)
	}
}

// FuzzFormatMembers: for any field set FieldsV1 can hold, ParseMembers
// reads FormatMembers' list back into the set a record in FieldsV1 form
// reads back (the same FieldsV1), every item is valid UTF-8 (a status is
// JSON), and the list is canonical (what it reads back is written as the
// FieldsV1 form's set is).
func FuzzFormatMembers(f *testing.F) {
	for _, tc := range membersCases {
		f.Add(tc.fieldsV1)
	}
	f.Add(`{"f:spec":{"f:a":{"k:{\"k\":\"\\ud800\"}":{}}}}`)
	f.Add("{\"f:data\":{\"f:\xff\":{}}}")
	f.Add(`{"f:x":{"v:1e300":{},"v:-0.5":{},"v:18446744073709551616":{}}}`)
	f.Fuzz(func(t *testing.T, fieldsV1 string) {
		set := fieldpath.NewSet()
		if set.FromJSON(bytes.NewReader([]byte(fieldsV1))) != nil {
			return
		}
		raw, err := set.ToJSON()
		if err != nil {
			return
		}
		// What a record in FieldsV1 form reads back.
		stored := fieldpath.NewSet()
		if err := stored.FromJSON(bytes.NewReader(raw)); err != nil {
			t.Fatalf("FieldsV1 %s does not read back: %v", raw, err)
		}
		list, err := fieldset.FormatMembers(set)
		if err != nil {
			t.Fatalf("FormatMembers(%s): %v", raw, err)
		}
		for _, item := range list {
			if !utf8.ValidString(item) {
				t.Fatalf("FormatMembers(%s): %q is not UTF-8", raw, item)
			}
		}
		if !utf8.Valid(raw) {
			// Not an object's fields: the apiserver decodes JSON into UTF-8.
			return
		}
		back, err := fieldset.ParseMembers(list)
		if err != nil {
			t.Fatalf("ParseMembers(%q): %v", list, err)
		}
		if a, b := encode(t, back), encode(t, stored); a != b {
			t.Fatalf("FieldsV1 %s: the members %q read back as %s", b, list, a)
		}
		want, err := fieldset.FormatMembers(stored)
		if err != nil {
			t.Fatal(err)
		}
		again, err := fieldset.FormatMembers(back)
		if err != nil || !slices.Equal(again, want) {
			t.Fatalf("FieldsV1 %s: FormatMembers of what %q reads back is %q, want %q (%v)", raw, list, again, want, err)
		}
	})
}
