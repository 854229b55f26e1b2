/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/ownershipcore"
)

// A relinquish that moves no field, on a custom resource whose map
// another manager owns (base applied `params: {}`) and in which the
// relinquishing manager added the only key: the apiserver's empty apply
// would leave the map null, which the CRD's schema refuses (Invalid). The
// key must still go, the map stay (empty, base's), and nothing be kept
// without an owner (before, every field of the manager stayed, unowned).
func TestRelinquishEmptiesAnotherManagersMapOnACRD(t *testing.T) {
	ctx := context.Background()
	installCRD(t, "relinquish.fieldops.dev", "Gadget", []string{"v1"}, map[string]apiextensionsv1.JSONSchemaProps{"other": stringProp, "params": stringMapProp})
	a, requests := newApplier(t)
	const gadget = `{"apiVersion": "relinquish.fieldops.dev/v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": "default"}, "spec": %s}`
	applyAs(t, a.Client, "base", sprintf(gadget, `{"other": "x", "params": {}}`))
	intent := obj(t, sprintf(gadget, `{"params": {"k": "1"}}`))
	res, err := a.Apply(ctx, intent, ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionFail)})
	if err != nil {
		t.Fatal(err)
	}
	before := requests.writes.Load()
	out, _, err := a.LetGo(ctx, intent, res.Object, "fp", ownershipcore.LetGo{Relinquish: true})
	if err != nil {
		t.Fatal(err)
	}
	if kept := ownershipcore.FormatSet(out.Kept); len(kept) > 0 {
		t.Errorf("kept without an owner: %v", kept)
	}
	if got := ownershipcore.FormatSet(out.Removed); !reflect.DeepEqual(got, []string{".spec.params.k"}) {
		t.Errorf("removed %v, want .spec.params.k", got)
	}
	// One guarded patch: no empty apply to be refused first.
	if n := requests.writes.Load() - before; n != 1 {
		t.Errorf("%d writes, want 1", n)
	}
	live := get(t, a.Client, intent)
	spec, _, _ := unstructured.NestedMap(live.Object, "spec")
	if want := map[string]interface{}{"other": "x", "params": map[string]interface{}{}}; !reflect.DeepEqual(spec, want) {
		t.Errorf("spec = %v, want %v", spec, want)
	}
	if got, want := owners(t, live), map[string][]string{".spec.other": {"base/Apply"}, ".spec.params": {"base/Apply"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("owners = %v, want %v", got, want)
	}
}

// Properties of the test CRDs' spec.
var (
	stringProp    = apiextensionsv1.JSONSchemaProps{Type: "string"}
	stringMapProp = apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &stringProp}}
)

// installCRD creates a namespaced CRD of kind in group, served in
// versions (the first stored, no conversion webhook) with the spec
// properties spec, and waits until it is served and known to the test's
// Schema.
func installCRD(t *testing.T, group, kind string, versions []string, spec map[string]apiextensionsv1.JSONSchemaProps) {
	t.Helper()
	plural := strings.ToLower(kind) + "s"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
		},
	}
	for i, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: i == 0,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type:       "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: spec}},
			}},
		})
	}
	createCRD(t, crd)
}

// createCRD creates crd and waits until each of its versions is served
// and known to the test's Schema.
func createCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx := context.Background()
	cs := apiextensionsclient.NewForConfigOrDie(cfg)
	if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		probe := &unstructured.Unstructured{}
		probe.SetAPIVersion(crd.Spec.Group + "/" + v.Name)
		probe.SetKind(crd.Spec.Names.Kind)
		for deadline := time.Now().Add(30 * time.Second); ; {
			c, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			established := false
			if err == nil {
				for _, cond := range c.Status.Conditions {
					established = established || cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue
				}
			}
			if established {
				if _, err := schema.ToTyped(probe); err == nil {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("CRD %s not served in %s: %v", crd.Name, v.Name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// An apply that drops the last key of a map another manager owns, on a
// custom resource: the apiserver refuses it (structured-merge-diff leaves
// the map null; kubernetes/kubernetes issues 103011, 117447). Apply
// removes the key first, in one guarded JSON patch, and the map stays,
// empty and base's. Before, a FieldPatch that dropped such a key from its
// patch ended InvalidPatch and sent the refused apply on every reconcile
// (test/invariants seed 400141).
func TestApplyDropsLastKeyOfAnotherManagersMap(t *testing.T) {
	ctx := context.Background()
	installCRD(t, "apply.fieldops.dev", "Knob", []string{"v1"}, map[string]apiextensionsv1.JSONSchemaProps{"other": stringProp, "mine": stringProp, "params": stringMapProp})
	a, requests := newApplier(t)
	const knob = `{"apiVersion": "apply.fieldops.dev/v1", "kind": "Knob", "metadata": {"name": "k", "namespace": "default"}, "spec": %s}`
	applyAs(t, a.Client, "base", sprintf(knob, `{"other": "x", "params": {}}`))
	opts := ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionForce)}
	if _, err := a.Apply(ctx, obj(t, sprintf(knob, `{"mine": "1", "params": {"k": "2"}}`)), opts); err != nil {
		t.Fatal(err)
	}
	before := requests.writes.Load()
	res, err := a.Apply(ctx, obj(t, sprintf(knob, `{"mine": "1"}`)), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Wrote() {
		t.Errorf("action %s, want a write", res.Action)
	}
	// The removal (Drop) before the apply; nothing is left to apply after
	// it, and no apply is sent to be refused.
	if n := requests.writes.Load() - before; n != 1 {
		t.Errorf("%d writes, want 1", n)
	}
	live := get(t, a.Client, obj(t, sprintf(knob, `{}`)))
	spec, _, _ := unstructured.NestedMap(live.Object, "spec")
	if want := map[string]interface{}{"other": "x", "mine": "1", "params": map[string]interface{}{}}; !reflect.DeepEqual(spec, want) {
		t.Errorf("spec = %v, want %v", spec, want)
	}
	if got, want := owners(t, live), map[string][]string{".spec.other": {"base/Apply"}, ".spec.params": {"base/Apply"}, ".spec.mine": {"fp/Apply"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("owners = %v, want %v", got, want)
	}
	before = requests.writes.Load()
	if res, err := a.Apply(ctx, obj(t, sprintf(knob, `{"mine": "1"}`)), opts); err != nil || res.Wrote() {
		t.Errorf("the same apply again: %s, %v; want no write", res.Action, err)
	}
	if n := requests.writes.Load() - before; n != 0 {
		t.Errorf("the same apply again: %d writes, want 0", n)
	}
}

// Managed fields entries of another version (a CRD served in two, an
// HPA's autoscaling/v1 and v2) cannot be converted locally: the decision
// leaves them out. The same apply again sends nothing (it sent one every
// time before: test/invariants seed 3000031), and a conflict with such an
// entry is still found, by the apiserver.
func TestApplyWithEntriesOfAnotherVersion(t *testing.T) {
	ctx := context.Background()
	installCRD(t, "versions.fieldops.dev", "Dial", []string{"v1", "v2"}, map[string]apiextensionsv1.JSONSchemaProps{"other": stringProp, "mine": stringProp})
	a, requests := newApplier(t)
	const dial = `{"apiVersion": "versions.fieldops.dev/%s", "kind": "Dial", "metadata": {"name": "d", "namespace": "default"}, "spec": %s}`
	applyAs(t, a.Client, "base", sprintf(dial, "v2", `{"other": "x"}`))
	opts := ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionFail)}
	if res, err := a.Apply(ctx, obj(t, sprintf(dial, "v1", `{"mine": "1"}`)), opts); err != nil || !res.Wrote() {
		t.Fatalf("first apply: %s, %v", res.Action, err)
	}
	before := requests.writes.Load()
	if res, err := a.Apply(ctx, obj(t, sprintf(dial, "v1", `{"mine": "1"}`)), opts); err != nil || res.Wrote() {
		t.Errorf("the same apply again: %s, %v; want no write", res.Action, err)
	}
	if n := requests.writes.Load() - before; n != 0 {
		t.Errorf("the same apply again: %d writes, want 0", n)
	}
	_, err := a.Apply(ctx, obj(t, sprintf(dial, "v1", `{"mine": "1", "other": "y"}`)), opts)
	var conflict *ownershipcore.ConflictError
	if !errors.As(err, &conflict) || len(conflict.Conflicts) != 1 || conflict.Conflicts[0].Manager != "base" {
		t.Errorf("a field of base's v2 entry: %v, want a conflict with base", err)
	}
	// Yield, with one conflict seen locally (helm's v1 entry) and one only
	// the apiserver sees (base's v2 entry): both are yielded, in two
	// rounds, and the rest applied.
	applyAs(t, a.Client, "helm", sprintf(dial, "v1", `{"mine": "h"}`))
	yield := ownershipcore.ApplyOptions{FieldManager: "fp2", Conflicts: ownershipcore.Static(ownershipcore.DecisionYield)}
	res, err := a.Apply(ctx, obj(t, sprintf(dial, "v1", `{"mine": "z", "other": "y"}`)), yield)
	if err != nil || len(res.Yielded) != 2 {
		t.Errorf("yield to helm (v1) and base (v2): yielded %v, %v; want both", res.Yielded, err)
	}
}

// When every entry is of another version, the local decision has no
// managed fields left: it must not take the object for one never applied
// (the field manager then invents a "before-first-apply" owner of every
// field). An empty intent sends nothing, however often; a conflict names
// the real owner (test/invariants seed 3000197, a FieldPatch in v2 whose
// merge patch changed nothing sent an apply on every reconcile).
func TestApplyWithOnlyEntriesOfAnotherVersion(t *testing.T) {
	ctx := context.Background()
	installCRD(t, "onlyversions.fieldops.dev", "Knob", []string{"v1", "v2"}, map[string]apiextensionsv1.JSONSchemaProps{"other": stringProp, "mine": stringProp})
	a, requests := newApplier(t)
	const knob = `{"apiVersion": "onlyversions.fieldops.dev/%s", "kind": "Knob", "metadata": {"name": "k", "namespace": "default"}, "spec": %s}`
	applyAs(t, a.Client, "base", sprintf(knob, "v1", `{"other": "x"}`))
	opts := ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionFail)}
	before := requests.writes.Load()
	for i := 0; i < 2; i++ {
		empty := `{"apiVersion": "onlyversions.fieldops.dev/v2", "kind": "Knob", "metadata": {"name": "k", "namespace": "default"}}`
		if res, err := a.Apply(ctx, obj(t, empty), opts); err != nil || res.Wrote() {
			t.Fatalf("an empty intent in v2: %s, %v; want nothing written", res.Action, err)
		}
	}
	if n := requests.writes.Load() - before; n != 0 {
		t.Errorf("an empty intent in v2, twice: %d writes, want 0", n)
	}
	_, err := a.Apply(ctx, obj(t, sprintf(knob, "v2", `{"other": "y"}`)), opts)
	var conflict *ownershipcore.ConflictError
	if !errors.As(err, &conflict) || len(conflict.Conflicts) != 1 || conflict.Conflicts[0].Manager != "base" {
		t.Errorf("a field of base's v1 entry, applied in v2: %v, want one conflict with base", err)
	}
	if res, err := a.Apply(ctx, obj(t, sprintf(knob, "v2", `{"mine": "1"}`)), opts); err != nil || !res.Wrote() {
		t.Fatalf("a field of no one, in v2: %s, %v; want it applied", res.Action, err)
	}
}

// The same drop when another manager wrote in another version: the local
// result leaves its entry out, so the key goes first only because fp owns
// it alone on the object (test/invariants seed 400141 with a v2 writer).
// When the map's owner itself wrote in the other version, the local result
// drops the map instead of leaving it null: the keys to remove first are
// then found from ownership (the apply was refused before).
func TestApplyDropsLastKeyWithAnEntryOfAnotherVersion(t *testing.T) {
	ctx := context.Background()
	installCRD(t, "versions.apply.fieldops.dev", "Lever", []string{"v1", "v2"}, map[string]apiextensionsv1.JSONSchemaProps{"other": stringProp, "params": stringMapProp})
	a, _ := newApplier(t)
	const lever = `{"apiVersion": "versions.apply.fieldops.dev/%s", "kind": "Lever", "metadata": {"name": "%s", "namespace": "default"}, "spec": %s}`
	for _, tc := range []struct{ name, baseVersion string }{{"l", "v1"}, {"l2", "v2"}} {
		applyAs(t, a.Client, "base", sprintf(lever, tc.baseVersion, tc.name, `{"params": {}}`))
		applyAs(t, a.Client, "helm", sprintf(lever, "v2", tc.name, `{"other": "x"}`))
		opts := ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionForce)}
		if _, err := a.Apply(ctx, obj(t, sprintf(lever, "v1", tc.name, `{"params": {"k": "2", "j": "1"}}`)), opts); err != nil {
			t.Fatal(err)
		}
		if res, err := a.Apply(ctx, obj(t, sprintf(lever, "v1", tc.name, `{}`)), opts); err != nil {
			t.Fatalf("base in %s: drop params.k and params.j: %s, %v", tc.baseVersion, res.Action, err)
		}
		live := get(t, a.Client, obj(t, sprintf(lever, "v1", tc.name, `{}`)))
		spec, _, _ := unstructured.NestedMap(live.Object, "spec")
		if want := map[string]interface{}{"other": "x", "params": map[string]interface{}{}}; !reflect.DeepEqual(spec, want) {
			t.Errorf("base in %s: spec = %v, want %v", tc.baseVersion, spec, want)
		}
		if got := owners(t, live); !reflect.DeepEqual(got[".spec.params"], []string{"base/Apply"}) || len(got[".spec.params.k"]) != 0 {
			t.Errorf("base in %s: owners = %v, want .spec.params base's and no owner of params.k", tc.baseVersion, got)
		}
	}
}
