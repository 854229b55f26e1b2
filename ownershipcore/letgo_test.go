/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/fieldops/fieldops/ownershipcore"
)

// LetGo: a patch that took .data.a from base and added .data.x is
// given back in one request: .data.a goes back to base (HandBack) or stays
// without an owner (Relinquish) with the patched value, .data.x goes, and
// no entry of the patch is left; other fields and owners are untouched.
func TestGiveBackInOneRequest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		plan   func(previous ownershipcore.ManagedFields, taken *fieldpath.Set) ownershipcore.LetGo
		owners map[string][]string
	}{
		{"hand back", func(previous ownershipcore.ManagedFields, _ *fieldpath.Set) ownershipcore.LetGo {
			return ownershipcore.LetGo{Previous: previous, Relinquish: true}
		}, map[string][]string{".data.a": {"base/Apply"}, ".data.b": {"base/Apply"}}},
		{"relinquish", func(_ ownershipcore.ManagedFields, taken *fieldpath.Set) ownershipcore.LetGo {
			return ownershipcore.LetGo{Release: taken, Relinquish: true}
		}, map[string][]string{".data.b": {"base/Apply"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			a, requests := newApplier(t)
			name := "one-step-" + map[string]string{"hand back": "hb", "relinquish": "rq"}[tc.name]
			f := forcedPatch(t, a, "base", sprintf(configMap, name, `{"a":"1","b":"2"}`), sprintf(configMap, name, `{"a":"patched","x":"added"}`), ".data.a")
			intent := f.intent
			before := requests.writes.Load()
			_, out, err := a.LetGo(ctx, intent, f.applied, "fp", tc.plan(f.previous, f.taken))
			if err != nil {
				t.Fatal(err)
			}
			if n := requests.writes.Load() - before; n != 1 {
				t.Errorf("%d writes, want 1", n)
			}
			if got := ownershipcore.FormatSet(out.Moved.Union(out.Released)); !reflect.DeepEqual(got, []string{".data.a"}) {
				t.Errorf("moved %v, want .data.a", got)
			}
			live := get(t, a.Client, intent)
			data, _, _ := unstructured.NestedStringMap(live.Object, "data")
			if want := map[string]string{"a": "patched", "b": "2"}; !reflect.DeepEqual(data, want) {
				t.Errorf("data = %v, want %v", data, want)
			}
			if got := owners(t, live); !reflect.DeepEqual(got, tc.owners) {
				t.Errorf("owners = %v, want %v", got, tc.owners)
			}
		})
	}
}

// A stale copy (another manager wrote since) costs one refused patch and a
// fresh read: the give-back is computed again from the object as it is
// now, and the other manager's new field stays.
func TestLetGoFromStaleCopy(t *testing.T) {
	ctx := context.Background()
	a, requests := newApplier(t)
	f := forcedPatch(t, a, "base", sprintf(configMap, "one-step-stale", `{"a":"1"}`), sprintf(configMap, "one-step-stale", `{"a":"patched","x":"added"}`), ".data.a")
	intent, previous := f.intent, f.previous
	applyAs(t, a.Client, "other", sprintf(configMap, "one-step-stale", `{"o":"3"}`))
	before := requests.writes.Load()
	if _, _, err := a.LetGo(ctx, intent, f.applied, "fp", ownershipcore.LetGo{Previous: previous, Relinquish: true}); err != nil {
		t.Fatal(err)
	}
	if n := requests.writes.Load() - before; n != 2 {
		t.Errorf("%d writes, want the refused patch and one more", n)
	}
	live := get(t, a.Client, intent)
	data, _, _ := unstructured.NestedStringMap(live.Object, "data")
	if want := map[string]string{"a": "patched", "o": "3"}; !reflect.DeepEqual(data, want) {
		t.Errorf("data = %v, want %v", data, want)
	}
	want := map[string][]string{".data.a": {"base/Apply"}, ".data.o": {"other/Apply"}}
	if got := owners(t, live); !reflect.DeepEqual(got, want) {
		t.Errorf("owners = %v, want %v", got, want)
	}
}

const imageDeployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"%s","namespace":"default"},
"spec":{"replicas":1,"selector":{"matchLabels":{"app":"%[1]s"}},"template":{"metadata":{"labels":{"app":"%[1]s"}},
"spec":{"containers":[{"name":"app","image":"nginx:1.27"}]}}}}`

// A Deployment: the patch took replicas from helm, added an env var to
// helm's container and set imagePullPolicy, which the apiserver defaults
// again once removed. One patch gives replicas back and removes the env
// var; the defaulted imagePullPolicy comes back with no owner. No entry of
// the patch is left, helm keeps every field it had, and the container
// stays.
func TestLetGoDefaultedField(t *testing.T) {
	ctx := context.Background()
	a, requests := newApplier(t)
	f := forcedPatch(t, a, "helm", sprintf(imageDeployment, "one-step-defaults"),
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"one-step-defaults","namespace":"default"},
"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"app","imagePullPolicy":"Always","env":[{"name":"HTTP_PROXY","value":"http://proxy:3128"}]}]}}}}`, ".spec.replicas")
	intent, previous, helmBefore := f.intent, f.previous, owners(t, f.base)
	before := requests.writes.Load()
	if _, _, err := a.LetGo(ctx, intent, f.applied, "fp", ownershipcore.LetGo{Previous: previous, Relinquish: true}); err != nil {
		t.Fatal(err)
	}
	if n := requests.writes.Load() - before; n > 2 {
		t.Errorf("%d writes, want at most 2", n)
	}
	live := get(t, a.Client, intent)
	after := owners(t, live)
	for p, ms := range after {
		for _, m := range ms {
			if strings.HasPrefix(m, "fp/") {
				t.Errorf("fp still owns %s (%s)", p, m)
			}
		}
	}
	for p, ms := range helmBefore {
		if slices.Contains(ms, "helm/Apply") && !slices.Contains(after[p], "helm/Apply") {
			t.Errorf("helm lost %s", p)
		}
	}
	if r, _, _ := unstructured.NestedInt64(live.Object, "spec", "replicas"); r != 3 {
		t.Errorf("replicas = %d, want 3 (the value stays with its owner)", r)
	}
	cs, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("containers = %v", cs)
	}
	c := cs[0].(map[string]interface{})
	if _, has := c["env"]; has {
		t.Errorf("env = %v, want it removed", c["env"])
	}
	if c["imagePullPolicy"] != "IfNotPresent" || c["image"] != "nginx:1.27" {
		t.Errorf("container = %v, want helm's image and the default pull policy", c)
	}
}

// forced is a patch forced by the field manager "fp" over another's object.
type forced struct {
	base, intent, applied *unstructured.Unstructured  // as owner applied it; fp's intent; the apply's answer
	previous              ownershipcore.ManagedFields // owner's record as previous owner of taken
	taken                 *fieldpath.Set
}

// forcedPatch applies base as owner, then intent as fp with Force, taking
// the fields at taken (in the ownership core's path form) from owner.
func forcedPatch(t *testing.T, a *ownershipcore.Applier, owner, base, intent string, taken ...string) forced {
	t.Helper()
	b := applyAs(t, a.Client, owner, base)
	set, err := ownershipcore.ParsePathSet(taken)
	if err != nil {
		t.Fatal(err)
	}
	previous, err := ownershipcore.PreviousOwners(b, set, "fp")
	if err != nil {
		t.Fatal(err)
	}
	in := obj(t, intent)
	res, err := a.Apply(context.Background(), in, ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionForce)})
	if err != nil {
		t.Fatal(err)
	}
	return forced{base: b, intent: in, applied: res.Object, previous: previous, taken: set}
}

// An apply that renames a Deployment's only container (the applier owns
// the list alone): what the intent drops is removed by the apply itself,
// in one request with the new item, never first on its own (the object
// without any container is invalid: spec.template.spec.containers is
// required).
func TestApplyRenamesTheOnlyContainer(t *testing.T) {
	ctx := context.Background()
	a, requests := newApplier(t)
	const dep = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"rename","namespace":"default"},
"spec":{"replicas":1,"selector":{"matchLabels":{"app":"rename"}},"template":{"metadata":{"labels":{"app":"rename"}},
"spec":{"containers":[{"name":"%s","image":"nginx:1.27"}]}}}}`
	opts := ownershipcore.ApplyOptions{FieldManager: "mw"}
	if _, err := a.Apply(ctx, obj(t, sprintf(dep, "app")), opts); err != nil {
		t.Fatal(err)
	}
	before := requests.writes.Load()
	res, err := a.Apply(ctx, obj(t, sprintf(dep, "web")), opts)
	if err != nil {
		t.Fatalf("rename the only container: %v", err)
	}
	if !res.Wrote() {
		t.Errorf("action %s, want a write", res.Action)
	}
	if n := requests.writes.Load() - before; n != 1 {
		t.Errorf("%d writes, want 1 (the apply)", n)
	}
	live := get(t, a.Client, obj(t, sprintf(dep, "web")))
	cs, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 || cs[0].(map[string]interface{})["name"] != "web" {
		t.Errorf("containers = %v, want web alone", cs)
	}
}
