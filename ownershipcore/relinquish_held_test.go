/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/ownershipcore"
)

// A list item the relinquishing manager owns alone (an env var it
// applied) that holds a field of another manager (its value, which "ops"
// set with an Update and "mw" applied too): relinquish leaves the item
// and the value; ops keeps its value, and no other entry changes (the
// item's key stays without an owner). The apiserver's empty apply removed
// the item and ops's value with it (test/invariants seed 2000201).
func TestRelinquishKeepsItemHoldingAnotherManagersField(t *testing.T) {
	ctx := context.Background()
	a, _ := newApplier(t)
	const dep = `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "held", "namespace": "default"}, "spec": %s}`
	applyAs(t, a.Client, "base", sprintf(dep, `{"replicas": 1, "selector": {"matchLabels": {"app": "held"}}, "template": {"metadata": {"labels": {"app": "held"}}, "spec": {"containers": [{"name": "app", "image": "nginx:1"}]}}}`))
	applyAs(t, a.Client, "fp", sprintf(dep, `{"template": {"spec": {"containers": [{"name": "app", "env": [{"name": "A", "value": "2"}]}]}}}`))
	target := obj(t, sprintf(dep, `{}`))
	if err := a.Client.Patch(ctx, target, client.RawPatch(types.StrategicMergePatchType, []byte(`{"spec": {"template": {"spec": {"containers": [{"name": "app", "env": [{"name": "A", "value": "1"}]}]}}}}`)), client.FieldOwner("ops")); err != nil {
		t.Fatal(err)
	}
	applyAs(t, a.Client, "mw", sprintf(dep, `{"template": {"spec": {"containers": [{"name": "app", "env": [{"name": "A", "value": "1"}]}]}}}`))
	for _, manager := range []string{"fp", "mw"} {
		if _, err := a.Relinquish(ctx, obj(t, sprintf(dep, `{}`)), manager); err != nil {
			t.Fatalf("relinquish %s: %v", manager, err)
		}
	}
	live := get(t, a.Client, target)
	containers, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	if got := fmt.Sprint(containers[0].(map[string]interface{})["env"]); got != "[map[name:A value:1]]" {
		t.Errorf("env = %s, want A=1 kept", got)
	}
	const a1 = `.spec.template.spec.containers[name="app"].env[name="A"]`
	got := owners(t, live)
	if !reflect.DeepEqual(got[a1+".value"], []string{"ops/Update"}) {
		t.Errorf("%s is owned by %v, want ops/Update", a1+".value", got[a1+".value"])
	}
	if len(got[a1+".name"]) != 0 {
		t.Errorf("%s is owned by %v, want no owner (ops's entry unchanged)", a1+".name", got[a1+".name"])
	}
	for _, m := range []string{"fp", "mw"} {
		if ownershipcore.HasManager(live, m) {
			t.Errorf("%s keeps an entry", m)
		}
	}
}
