/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/ownershipcore"
)

// A conflict inside a list item is yielded on its own path, not on a
// sibling's: the conflict's path was looked up in a map of the intent's
// paths that aliased one buffer (fieldpath.Set.Iterate reuses its path),
// so the Yield of a container's args removed the container's key instead,
// and every apply of the rest was refused as invalid, one write per
// reconcile for ever (found by test/invariants, seed 7110).
func TestYieldInsideListItem(t *testing.T) {
	ctx := context.Background()
	a, _ := newApplier(t)
	applyAs(t, a.Client, "helm", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"yield-args","namespace":"default"},
"spec":{"replicas":1,"selector":{"matchLabels":{"app":"yield-args"}},"template":{"metadata":{"labels":{"app":"yield-args"}},
"spec":{"containers":[{"name":"app","image":"nginx:1.27","args":["--b","--c"]}]}}}}`)
	intent := obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"yield-args","namespace":"default"},
"spec":{"template":{"spec":{"containers":[{"name":"app","args":["--a"],"env":[{"name":"X","value":"1"}]}]}}}}`)
	res, err := a.Apply(ctx, intent, ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionYield)})
	if err != nil {
		t.Fatalf("apply with Yield: %v", err)
	}
	var yielded []string
	for _, c := range res.Yielded {
		yielded = append(yielded, ownershipcore.FormatPath(c.Path))
	}
	if want := []string{`.spec.template.spec.containers[name="app"].args`}; !reflect.DeepEqual(yielded, want) {
		t.Fatalf("yielded %v, want %v", yielded, want)
	}
	live := get(t, a.Client, intent)
	cs, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("containers = %v, want the one container", cs)
	}
	c := cs[0].(map[string]interface{})
	if !reflect.DeepEqual(c["args"], []interface{}{"--b", "--c"}) || c["env"] == nil {
		t.Fatalf("container = %v, want helm's args and the env var", c)
	}
	// The next reconcile's apply changes nothing and sends nothing.
	res, err = a.Apply(ctx, intent, ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionYield), Live: live})
	if err != nil || res.Action != ownershipcore.ActionUnchanged {
		t.Fatalf("second apply: %v %v, want Unchanged", res.Action, err)
	}
}
