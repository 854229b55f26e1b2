/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldset

import "testing"

// The path builders name fields and list items as managedFields do, and
// never write into the path they extend.
func TestPathBuilders(t *testing.T) {
	spec := WithField(Path{}, "spec")
	for _, tc := range []struct {
		name string
		got  Path
		want string
	}{
		{"field", WithField(spec, "replicas"), ".spec.replicas"},
		{"field needing quotes", WithField(spec, "example.com/x"), `.spec["example.com/x"]`},
		{"map-list item, keys in name order", WithItemKeys(WithField(spec, "ports"), map[string]interface{}{"protocol": "TCP", "port": int64(80), "name": "web"}, []string{"protocol", "port"}), `.spec.ports[port=80,protocol="TCP"]`},
		{"map-list item lacking a key", WithItemKeys(WithField(spec, "ports"), map[string]interface{}{"port": int64(80)}, []string{"port", "protocol"}), `.spec.ports[port=80]`},
		{"set item", WithItemValue(WithField(spec, "finalizers"), "x"), `.spec.finalizers[="x"]`},
	} {
		if s := FormatPath(tc.got); s != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, s, tc.want)
		}
	}
	base := make(Path, 0, 4)
	base = WithField(base, "spec")
	a, b := WithField(base, "a"), WithField(base, "b")
	if FormatPath(a) != ".spec.a" || FormatPath(b) != ".spec.b" {
		t.Errorf("siblings share a backing array: %s, %s", FormatPath(a), FormatPath(b))
	}
}

// HasAtOrBelow: the path itself, or any path under it; not the path above
// nor a sibling.
func TestHasAtOrBelow(t *testing.T) {
	set, err := ParsePathSet([]string{`.spec.containers[name="app"].image`, ".spec.replicas"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want bool
	}{
		{".spec.replicas", true},
		{".spec", true},
		{".spec.containers", true},
		{`.spec.containers[name="app"]`, true},
		{`.spec.containers[name="app"].image`, true},
		{`.spec.containers[name="other"]`, false},
		{".spec.replicas.x", false},
		{".metadata", false},
	} {
		p, err := ParsePath(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := HasAtOrBelow(set, p); got != tc.want {
			t.Errorf("HasAtOrBelow(%s) = %v, want %v", tc.path, got, tc.want)
		}
	}
	if HasAtOrBelow(nil, Path{}) {
		t.Error("a nil set holds something")
	}
}
