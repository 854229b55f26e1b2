/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package inputlimits

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// nested is {"a":{"a":...{"a":"x"}...}} with depth levels.
func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth) + `"x"` + strings.Repeat(`}`, depth)
}

// flat is one object of n string fields: depth 1.
func flat(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":"x"`, i)
	}
	b.WriteString("}")
	return b.String()
}

func TestDepth(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{`"x"`, 0},
		{`{}`, 1},
		{`{"a":[1,{"b":[]}]}`, 4},
		{`[[[]],[]]`, 3},
		{nested(10), 10},
	} {
		got, err := Depth([]byte(tc.in), MaxDepth)
		if err != nil || got != tc.want {
			t.Errorf("Depth(%s) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	// It stops reading once past max.
	if got, err := Depth([]byte(nested(2000)), 5); err != nil || got != 6 {
		t.Errorf("Depth(2000 levels, max 5) = %d, %v; want 6", got, err)
	}
	if _, err := Depth([]byte(`{"a":`), MaxDepth); err == nil {
		t.Error("Depth of truncated JSON: no error")
	}
}

func TestPatch(t *testing.T) {
	deepOp := `[{"op":"add","path":"/metadata/labels/a","value":` + nested(MaxDepth) + `}]`
	longPath := `[{"op":"add","path":"` + strings.Repeat("/a", MaxDepth+1) + `","value":"x"}]`
	manyOps := "[" + strings.TrimSuffix(strings.Repeat(`{"op":"add","path":"/metadata/labels/a","value":"x"},`, MaxJSONPatchOps+1), ",") + "]"
	for _, tc := range []struct {
		name, in string
		json     bool
		err      string
	}{
		{"flat", `{"metadata":{"labels":{"a":"b"}}}`, false, ""},
		{"at the limit", nested(MaxDepth), false, ""},
		{"one over", nested(MaxDepth + 1), false, "nests more than 64 levels deep"},
		{"1000 levels", nested(1000), false, "nests more than 64 levels deep"},
		{"too big", `{"data":{"a":"` + strings.Repeat("x", MaxPatchBytes) + `"}}`, false, "more than 524288"},
		{"JSON patch", `[{"op":"add","path":"/metadata/labels/a","value":"x"}]`, true, ""},
		{"JSON value too deep with its path", deepOp, true, "op 1: its path and value nest more than 64"},
		{"JSON path too long", longPath, true, "its path has more than 64 segments"},
		{"JSON too many ops", manyOps, true, "1001 operations, more than 1000"},
		{"JSON not a list, deep", nested(1000), true, "nests more than 64"},
		{"not JSON: left to validation", `{`, false, ""},
	} {
		err := Patch([]byte(tc.in), tc.json)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrLimit)):
			t.Errorf("%s: %v, want an ErrLimit with %q", tc.name, err, tc.err)
		}
	}
	if err := Object([]byte(`{"apiVersion":"v1","kind":"ConfigMap","data":` + nested(MaxDepth) + `}`)); err == nil {
		t.Error("Object: a ConfigMap 65 levels deep is accepted")
	}
}

// The check's own work is linear in the input's size, whatever its
// shape: a 1,000-level patch costs no more allocations than a flat one of
// the same size (allocations are counted, not timed).
func TestPatchCostLinear(t *testing.T) {
	deep := nested(1000)
	wide := flat(len(deep) / len(`"k100":"x",`))
	d := testing.AllocsPerRun(5, func() { _ = Patch([]byte(deep), false) })
	f := testing.AllocsPerRun(5, func() { _ = Patch([]byte(wide), false) })
	if d > 2*f+10 {
		t.Errorf("checking a 1,000-level patch (%d bytes) allocates %.0f times, a flat one (%d bytes) %.0f", len(deep), d, len(wide), f)
	}
}
