/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package notes

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    string
		max  int
		want string
	}{
		{"short", "abc", 10, "abc"},
		{"exact", "abcdefghij", 10, "abcdefghij"},
		{"empty", "", 0, ""},
		{"ascii", strings.Repeat("a", 30), 20, "aaaa" + Marker}, // Marker is 16 bytes
		// "é" is 2 bytes: a cut inside it moves back to its start.
		{"rune-boundary", strings.Repeat("é", 20), 21, "éé" + Marker},
		// "€" is 3 bytes.
		{"rune-boundary-3", strings.Repeat("€", 20), 22, "€€" + Marker},
		{"tiny-max", "abcdef", 3, "abc"},
		{"tiny-max-rune", "€€", 4, "€"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Truncate(tc.s, tc.max)
			if got != tc.want {
				t.Errorf("Truncate(%q, %d) = %q, want %q", tc.s, tc.max, got, tc.want)
			}
			if len(got) > tc.max && len(tc.s) > tc.max {
				t.Errorf("%d bytes, more than %d", len(got), tc.max)
			}
			if !utf8.ValidString(got) {
				t.Errorf("%q is not valid UTF-8", got)
			}
		})
	}
}

func TestEvent(t *testing.T) {
	long := strings.Repeat(`.data.k owned by "other" (Apply), `, 300)
	got := Event("%d conflict(s): %s", 300, long)
	if len(got) > MaxEventNote || !strings.HasSuffix(got, Marker) || !strings.HasPrefix(got, "300 conflict(s): .data.k") {
		t.Errorf("Event: %d bytes %q", len(got), got)
	}
	for n := MaxEventNote - 5; n <= MaxEventNote+5; n++ {
		s := strings.Repeat("a", n-4) + "€é" // a rune across every cut
		if e := Event("%s", s); len(e) > MaxEventNote || !utf8.ValidString(e) {
			t.Errorf("%d bytes in: %d bytes out, valid %v", n, len(e), utf8.ValidString(e))
		}
	}
	if got := Event("%s: %v", "patch", `.spec.x: expected string, got &value.valueUnstructured{Value:5}`); got != "patch: .spec.x: expected string, got integer" {
		t.Errorf("Event did not clean the note: %q", got)
	}
	if got := Event("100%% done"); got != "100% done" {
		t.Errorf("Event(%q) = %q", "100%% done", got)
	}
}

func TestCondition(t *testing.T) {
	got := Condition(strings.Repeat("x", MaxConditionMessage+1))
	if len(got) != MaxConditionMessage || !strings.HasSuffix(got, Marker) {
		t.Errorf("Condition: %d bytes", len(got))
	}
	if got := Condition(`spec.x: Invalid value: "s3cr3t": bad`); got != "spec.x: Invalid value (omitted): bad" {
		t.Errorf("Condition = %q", got)
	}
}
