/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package optable_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"

	"github.com/fieldops/fieldops/ownershipcore"
)

// deepGVK is a kind of any shape: its types are deduced from the object
// (every map granular), as for a CRD that preserves unknown fields.
var deepGVK = schema.GroupVersionKind{Group: "example.dev", Version: "v1", Kind: "Deep"}

// shaped is an object of 2n fields under spec: nested n levels deep (a
// map and a leaf per level), or flat (2n leaves). value is every leaf's
// value.
func shaped(n int, deep bool, value string) *unstructured.Unstructured {
	spec := map[string]interface{}{}
	if deep {
		level := spec
		for i := 0; i < n; i++ {
			next := map[string]interface{}{}
			level[fmt.Sprintf("leaf%d", i)] = value
			level["next"] = next
			level = next
		}
	} else {
		for i := 0; i < 2*n; i++ {
			spec[fmt.Sprintf("leaf%d", i)] = value
		}
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{"spec": spec}}
	u.SetGroupVersionKind(deepGVK)
	u.SetName("shaped")
	u.SetNamespace("default")
	return u
}

// BenchmarkShape measures the cost of a FieldPatch's life on an object
// of 2n fields, nested n levels deep or flat: another manager's update
// of the whole object, the patch's forced apply of every field, and the
// deletion's hand-back (LetGo with the previous owner, then Relinquish),
// over the model (the apiserver's field manager, in-process). Compare
// deep with flat of the same n (benchstat): a deep object costs a small
// multiple of a flat one of the same size, not the square of its depth.
// The manager's input limits (internal/inputlimits) refuse a patch nested
// deeper than 64 levels; a target may be deeper, made by another manager.
func BenchmarkShape(b *testing.B) {
	m := ownershipcore.Model{Schema: ownershipcore.NewStaticSchema(map[schema.GroupVersion]managedfields.TypeConverter{
		deepGVK.GroupVersion(): managedfields.NewDeducedTypeConverter(),
	})}
	for _, n := range benchShapes {
		for _, deep := range []bool{false, true} {
			name := fmt.Sprintf("flat/n=%d", n)
			if deep {
				name = fmt.Sprintf("deep/n=%d", n)
			}
			b.Run(name, func(b *testing.B) {
				empty, err := ownershipcore.NewState(shaped(0, false, ""), true)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					patchLife(b, m, empty, shaped(n, deep, "owner"), shaped(n, deep, "patch"))
				}
			})
		}
	}
}

// patchLife runs one patch's life on s: "helm" updates it to owned, the
// patch forces patch's values, and its deletion hands every field back to
// helm.
func patchLife(b *testing.B, m ownershipcore.Model, s ownershipcore.State, owned, patch *unstructured.Unstructured) {
	b.Helper()
	s, err := m.Update(s, owned, "helm")
	if err != nil {
		b.Fatal(err)
	}
	before := s
	if s, err = m.Apply(s, patch, "fp", true); err != nil {
		b.Fatal(err)
	}
	helm := before.Owners[0]
	_, out, err := m.LetGo(s, "fp", ownershipcore.LetGo{Previous: ownershipcore.ManagedFields{helm}, Relinquish: true})
	if err != nil {
		b.Fatal(err)
	}
	if out.Moved.Empty() {
		b.Fatal("nothing handed back")
	}
}

var benchShapes = []int{10, 100, 1000}
