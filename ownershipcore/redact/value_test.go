/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package redact

import "testing"

func TestLooksLikeValue(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"", false},
		{`"secret": must be`, true},
		{"`raw`", true},
		{`{"a":1}`, true},
		{"[1, 2]", true},
		{"&value.valueUnstructured{Value:5}", true},
		{"*int32", true},
		{"5", true},
		{"-5", true},
		{"- detail", false},
		{"map[k:v]", true},
		{"struct { A int }{}", true},
		{"true", true},
		{"nil: detail", true},
		{"<nil>", true},
		{"trueish words", false},
		{"core.Container{Name:\"a\"}", true},
		{"{", true},
		{"must be no more than 63 characters", false},
		{"supported values: \"a\"", false},
	} {
		if got := looksLikeValue(tc.s); got != tc.want {
			t.Errorf("looksLikeValue(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

func TestScanValue(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		ok   bool
		rest string
	}{
		{`"a\"b": must be`, 6, true, ": must be"},
		{"`raw`: x", 5, true, ": x"},
		{`"open`, 5, false, ""},
		{`map[string]interface {}{"a":"b"}: x`, 32, true, ": x"},
		{"struct { A int }{A:1}, next", 21, true, ", next"},
		{"[1, [2]]; next", 8, true, "; next"},
		{"5)", 1, true, ")"},
		{"{unclosed", 9, false, ""},
		{"12345", 5, true, ""},
	} {
		n, ok := scanValue(tc.s)
		if n != tc.n || ok != tc.ok || tc.s[n:] != tc.rest {
			t.Errorf("scanValue(%q) = %d, %v (rest %q), want %d, %v (rest %q)", tc.s, n, ok, tc.s[n:], tc.n, tc.ok, tc.rest)
		}
	}
}
