/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/test/testkit"
)

// Removals decided by comparing field sets of entries of two versions, on
// a custom resource whose versions a webhook converts (spec.params in v1
// is spec.settings in v2), with the map spec.opts and a shared key owned
// by entries of v2: base owns spec.settings and spec.opts, helm
// spec.settings.k, fp (in v1) spec.params.k and spec.opts.x. Dropping
// both leaves spec.opts null, which the apiserver refuses
// (kubernetes/kubernetes issue 103011). Which keys are fp's alone cannot
// be told by comparing v2 paths with v1 ones: spec.params.k is helm's
// too, as spec.settings.k. Before, both fallbacks removed it with
// opts.x, helm's value lost; with strategy None the same removals are
// right and made (TestApplyDropsLastKeyWithAnEntryOfAnotherVersion).
func TestRemovalsAcrossAConversionWebhook(t *testing.T) {
	ctx := context.Background()
	createCRD(t, testkit.RenamingCRD(t, "convert.apply.fieldops.dev", "Dial", map[string]apiextensionsv1.JSONSchemaProps{"opts": stringMapProp}))
	a, requests := newApplier(t)
	const dial = `{"apiVersion": "convert.apply.fieldops.dev/%s", "kind": "Dial", "metadata": {"name": "%s", "namespace": "default"}, "spec": %s}`
	opts := ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionForce)}
	setUp := func(t *testing.T, name string) {
		applyAs(t, a.Client, "base", sprintf(dial, "v2", name, `{"settings": {}, "opts": {}}`))
		applyAs(t, a.Client, "helm", sprintf(dial, "v2", name, `{"settings": {"k": "2"}}`))
		if _, err := a.Apply(ctx, obj(t, sprintf(dial, "v1", name, `{"params": {"k": "2"}, "opts": {"x": "1"}}`)), opts); err != nil {
			t.Fatal(err)
		}
	}
	unchanged := func(t *testing.T, name string) *unstructured.Unstructured {
		t.Helper()
		live := get(t, a.Client, obj(t, sprintf(dial, "v1", name, `{}`)))
		spec, _, _ := unstructured.NestedMap(live.Object, "spec")
		if want := map[string]interface{}{"params": map[string]interface{}{"k": "2"}, "opts": map[string]interface{}{"x": "1"}}; !reflect.DeepEqual(spec, want) {
			t.Errorf("spec = %v, want %v (helm's params.k kept)", spec, want)
		}
		return live
	}

	t.Run("apply removes nothing", func(t *testing.T) {
		setUp(t, "apply")
		before := requests.writes.Load()
		res, err := a.Apply(ctx, obj(t, sprintf(dial, "v1", "apply", `{}`)), opts)
		if !apierrors.IsInvalid(err) {
			t.Fatalf("drop params.k and opts.x: %s, %v; want the apiserver's Invalid", res.Action, err)
		}
		if n := requests.writes.Load() - before; n != 1 {
			t.Errorf("%d writes, want 1 (the refused apply)", n)
		}
		unchanged(t, "apply")
	})

	t.Run("relinquish keeps ours unowned", func(t *testing.T) {
		setUp(t, "relinquish")
		intent := obj(t, sprintf(dial, "v1", "relinquish", `{}`))
		out, err := a.Relinquish(ctx, intent, "fp")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ownershipcore.FormatSet(out.Kept), []string{".spec.opts.x", ".spec.params.k"}; !reflect.DeepEqual(got, want) {
			t.Errorf("kept %v, want %v", got, want)
		}
		live := unchanged(t, "relinquish")
		if ownershipcore.HasManager(live, "fp") {
			t.Errorf("fp still has an entry: %v", owners(t, live))
		}
	})

	t.Run("the CRD is read once per kind", func(t *testing.T) {
		gvk := runtimeschema.GroupVersionKind{Group: "convert.apply.fieldops.dev", Version: "v1", Kind: "Dial"}
		schema.InvalidateGroup(gvk.Group)
		for i, want := range []int64{1, 0} {
			before := requests.reads.Load()
			if a.SameFieldPaths(ctx, gvk, "convert.apply.fieldops.dev/v2") {
				t.Errorf("call %d: v1 and v2 under a conversion webhook have the same field paths", i)
			}
			if n := requests.reads.Load() - before; n != want {
				t.Errorf("call %d: %d reads, want %d", i, n, want)
			}
		}
		if before := requests.reads.Load(); !a.SameFieldPaths(ctx, gvk, "convert.apply.fieldops.dev/v1") || requests.reads.Load() != before {
			t.Error("the same version: want the same paths, without a read")
		}
	})
}
