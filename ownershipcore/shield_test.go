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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/fieldops/fieldops/ownershipcore"
)

// An apply that drops a list item holding another manager's field: hpa
// applied item x with params.k, set params.k with Updates (its Update
// entry owns params.k, not the item), fp applied the same item, hpa let
// its Apply entry go. fp's next apply drops item x: the apiserver removes
// the item its applier drops with every field in it, hpa's params.k too.
// Apply first drops the item from fp's entry without removing it (one
// guarded patch of managed fields; hpa's entry unchanged), so the item
// stays with hpa's field, in fp's version and in another (test/invariants
// seed 7200016).
func TestApplyDroppingAnItemKeepsAnotherManagersField(t *testing.T) {
	ctx := context.Background()
	items := namedItems("params", stringMapProp)
	installCRD(t, "shield.fieldops.dev", "Rack", []string{"v1", "v2"}, map[string]apiextensionsv1.JSONSchemaProps{"items": items, "note": stringProp})
	a, requests := newApplier(t)
	const rack = `{"apiVersion": "shield.fieldops.dev/%s", "kind": "Rack", "metadata": {"name": "%s", "namespace": "default"}, "spec": %s}`
	for _, fpVersion := range []string{"v1", "v2"} {
		name := "r" + fpVersion
		applyAs(t, a.Client, "base", sprintf(rack, "v1", name, `{"note": "b", "items": [{"name": "base"}]}`))
		applyAs(t, a.Client, "hpa", sprintf(rack, "v1", name, `{"items": [{"name": "x", "params": {"k": "2"}}]}`))
		u := obj(t, sprintf(rack, "v1", name, `{}`))
		for _, v := range []string{"1", "2"} {
			if err := a.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"items":[{"name":"base"},{"name":"x","params":{"k":"`+v+`"}}]}}`)), client.FieldOwner("hpa")); err != nil {
				t.Fatal(err)
			}
		}
		opts := ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionFail)}
		if _, err := a.Apply(ctx, obj(t, sprintf(rack, fpVersion, name, `{"items": [{"name": "x", "params": {"k": "2"}}], "note": "b"}`)), opts); err != nil {
			t.Fatal(err)
		}
		applyAs(t, a.Client, "hpa", `{"apiVersion": "shield.fieldops.dev/v1", "kind": "Rack", "metadata": {"name": "`+name+`", "namespace": "default"}}`)
		before := requests.writes.Load()
		if _, err := a.Apply(ctx, obj(t, sprintf(rack, fpVersion, name, `{"note": "b"}`)), opts); err != nil {
			t.Fatal(err)
		}
		l := get(t, a.Client, u)
		its, _, _ := unstructured.NestedSlice(l.Object, "spec", "items")
		want := []interface{}{map[string]interface{}{"name": "base"}, map[string]interface{}{"name": "x", "params": map[string]interface{}{"k": "2"}}}
		if !reflect.DeepEqual(its, want) {
			t.Errorf("fp in %s: items = %v, want %v (item x kept with hpa's params.k)", fpVersion, its, want)
		}
		if got := owners(t, l); !reflect.DeepEqual(got[`.spec.items[name="x"].params.k`], []string{"hpa/Update"}) || len(got[`.spec.items[name="x"].name`]) != 0 {
			t.Errorf("fp in %s: owners = %v, want params.k hpa's and item x without an owner", fpVersion, got)
		}
		// The drop hands item x to hpa and removes nothing else; the
		// apply of what is left changes nothing and is not sent.
		if n := requests.writes.Load() - before; n != 1 {
			t.Errorf("fp in %s: %d writes, want 1 (the drop)", fpVersion, n)
		}
	}
}

// A relinquish on a custom resource with entries of two versions: hpa
// applied item x in v2, helm's Update (v1) set its value, mw applied the
// same item and value in v1, and a note of its own. The relinquish must
// remove the note only; the apiserver's empty apply removed helm's value
// too (structured-merge-diff restores owned items one version at a time,
// and the last pass drops what only the other version's entries own).
// Relinquish removes mw's own fields with a guarded JSON patch and drops
// its entry with a guarded patch of managed fields instead
// (test/invariants seeds 8100545, 7201807).
func TestRelinquishOfSharedFieldsAcrossVersions(t *testing.T) {
	ctx := context.Background()
	items := namedItems("value", stringProp)
	installCRD(t, "shared.fieldops.dev", "Shelf", []string{"v1", "v2"}, map[string]apiextensionsv1.JSONSchemaProps{"items": items, "note": stringProp})
	a, _ := newApplier(t)
	const shelf = `{"apiVersion": "shared.fieldops.dev/%s", "kind": "Shelf", "metadata": {"name": "s", "namespace": "default"}, "spec": %s}`
	applyAs(t, a.Client, "base", sprintf(shelf, "v1", `{"items": [{"name": "base"}]}`))
	applyAs(t, a.Client, "hpa", sprintf(shelf, "v2", `{"items": [{"name": "x", "value": "1"}]}`))
	u := obj(t, sprintf(shelf, "v1", `{}`))
	if err := a.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"items":[{"name":"base"},{"name":"x","value":"2"}]}}`)), client.FieldOwner("helm")); err != nil {
		t.Fatal(err)
	}
	applyAs(t, a.Client, "mw", sprintf(shelf, "v1", `{"items": [{"name": "x", "value": "2"}], "note": "m"}`))
	if _, err := a.Relinquish(ctx, u, "mw"); err != nil {
		t.Fatal(err)
	}
	l := get(t, a.Client, u)
	if note, found, _ := unstructured.NestedString(l.Object, "spec", "note"); found {
		t.Errorf("spec.note = %q, want mw's note removed", note)
	}
	its, _, _ := unstructured.NestedSlice(l.Object, "spec", "items")
	if want := []interface{}{map[string]interface{}{"name": "base"}, map[string]interface{}{"name": "x", "value": "2"}}; !reflect.DeepEqual(its, want) {
		t.Errorf("items = %v, want %v (helm's value kept)", its, want)
	}
	if got := owners(t, l); !reflect.DeepEqual(got[`.spec.items[name="x"].value`], []string{"helm/Update"}) || ownershipcore.HasManager(l, "mw") {
		t.Errorf("owners = %v, want value helm's and no entry of mw", got)
	}
}

// A relinquish that removes the last item of a list another manager owns,
// on a custom resource: helm's Update made spec.tags and emptied it (its
// entry owns the list), mw then applied the item t. The apiserver's empty
// apply leaves the list null, which the CRD's schema refuses (as for a
// map: kubernetes/kubernetes issue 103011), and the fallbacks kept maps
// only: the list went, and helm's field with it. It stays, empty and
// helm's (test/invariants seeds 7200668, 8100327).
func TestRelinquishEmptiesAnotherManagersList(t *testing.T) {
	ctx := context.Background()
	set := "set"
	tags := apiextensionsv1.JSONSchemaProps{Type: "array", XListType: &set, Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &stringProp}}
	installCRD(t, "emptied.fieldops.dev", "Tray", []string{"v1"}, map[string]apiextensionsv1.JSONSchemaProps{"tags": tags, "note": stringProp})
	a, _ := newApplier(t)
	const tray = `{"apiVersion": "emptied.fieldops.dev/v1", "kind": "Tray", "metadata": {"name": "t", "namespace": "default"}, "spec": %s}`
	applyAs(t, a.Client, "base", sprintf(tray, `{"note": "b"}`))
	u := obj(t, sprintf(tray, `{}`))
	for _, patch := range []string{`[{"op": "add", "path": "/spec/tags", "value": ["h"]}]`, `[{"op": "remove", "path": "/spec/tags/0"}]`} {
		if err := a.Client.Patch(ctx, u, client.RawPatch(types.JSONPatchType, []byte(patch)), client.FieldOwner("helm")); err != nil {
			t.Fatal(err)
		}
	}
	applyAs(t, a.Client, "mw", sprintf(tray, `{"tags": ["t"]}`))
	if _, err := a.Relinquish(ctx, u, "mw"); err != nil {
		t.Fatal(err)
	}
	l := get(t, a.Client, u)
	got, found, _ := unstructured.NestedSlice(l.Object, "spec", "tags")
	if !found || len(got) != 0 {
		t.Errorf("spec.tags = %v (found %v), want [] (helm's list kept, t removed)", got, found)
	}
	if ownershipcore.HasManager(l, "mw") {
		t.Errorf("mw still has an entry: %v", owners(t, l))
	}
}

// A field released inside a list item only we hold: fp took items[x].value
// from helm and shared the item with it, then helm applied without the
// item (letting its key go). Released (Relinquish: values stay, unowned),
// the value must keep its item: before, the relinquish that followed
// removed the item fp still owned, and the released value with it
// (test/invariants seed 9100650).
func TestReleasedFieldKeepsItsItem(t *testing.T) {
	ctx := context.Background()
	items := namedItems("value", stringProp)
	installCRD(t, "released.fieldops.dev", "Bin", []string{"v1"}, map[string]apiextensionsv1.JSONSchemaProps{"items": items, "note": stringProp})
	a, _ := newApplier(t)
	const bin = `{"apiVersion": "released.fieldops.dev/v1", "kind": "Bin", "metadata": {"name": "b", "namespace": "default"}, "spec": %s}`
	applyAs(t, a.Client, "base", sprintf(bin, `{"items": [{"name": "base"}]}`))
	applyAs(t, a.Client, "helm", sprintf(bin, `{"items": [{"name": "x", "value": "2"}]}`))
	intent := obj(t, sprintf(bin, `{"items": [{"name": "x", "value": "1"}]}`))
	if _, err := a.Apply(ctx, intent, ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionForce)}); err != nil {
		t.Fatal(err)
	}
	applyAs(t, a.Client, "helm", sprintf(bin, `{"note": "h"}`))
	field, err := ownershipcore.ParsePath(`.spec.items[name="x"].value`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Release(ctx, intent, "fp", fieldpath.NewSet(field)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Relinquish(ctx, intent, "fp"); err != nil {
		t.Fatal(err)
	}
	l := get(t, a.Client, intent)
	its, _, _ := unstructured.NestedSlice(l.Object, "spec", "items")
	if want := []interface{}{map[string]interface{}{"name": "base"}, map[string]interface{}{"name": "x", "value": "1"}}; !reflect.DeepEqual(its, want) {
		t.Errorf("items = %v, want %v (the released value kept, with its item)", its, want)
	}
	if ownershipcore.HasManager(l, "fp") {
		t.Errorf("fp still has an entry: %v", owners(t, l))
	}
}

// namedItems is the schema of a list of objects keyed by name (a map list,
// x-kubernetes-list-map-keys [name]) with one more property, field.
func namedItems(field string, prop apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	mapType := "map"
	return apiextensionsv1.JSONSchemaProps{Type: "array", XListType: &mapType, XListMapKeys: []string{"name"}, Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", Required: []string{"name"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": stringProp, field: prop},
	}}}
}
