/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"fmt"
	"math/rand"
	"testing"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// TestWithParents: withParents walks the tree once and gives what
// inserting every prefix of every path gives, on random sets of random
// depth (and on a set with an empty child node, which holds no member).
func TestWithParents(t *testing.T) {
	prefixes := func(set *fieldpath.Set) *fieldpath.Set {
		out := fieldpath.NewSet()
		set.Iterate(func(p fieldpath.Path) {
			for i := 1; i <= len(p); i++ {
				out.Insert(p[:i].Copy())
			}
		})
		return out
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 500; i++ {
		set := fieldpath.NewSet()
		for j := rng.Intn(8); j >= 0; j-- {
			var p fieldpath.Path
			for k := rng.Intn(6); k >= 0; k-- {
				name := fmt.Sprintf("f%d", rng.Intn(3))
				p = append(p, fieldpath.PathElement{FieldName: &name})
			}
			set.Insert(p)
		}
		if got, want := withParents(set), prefixes(set); !got.Equals(want) {
			t.Fatalf("withParents(%v) = %v, want %v", set, got, want)
		}
	}
	name := "empty"
	set := fieldpath.NewSet()
	set.Children.Descend(fieldpath.PathElement{FieldName: &name})
	if got := withParents(set); !got.Empty() {
		t.Errorf("withParents of a set with an empty child node = %v, want empty", got)
	}
}
