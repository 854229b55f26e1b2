/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/ownershipcore"
)

const configMap = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s","namespace":"default"},"data":%s}`

// Release then Relinquish: the taken field keeps its value with no owner,
// the added one leaves, no entry of ours is left (deletionPolicy
// Relinquish of a FieldPatch).
func TestReleaseKeepsTakenValues(t *testing.T) {
	ctx := context.Background()
	a, _ := newApplier(t)
	applyAs(t, a.Client, "base", sprintf(configMap, "release", `{"a":"1","b":"2"}`))
	intent := obj(t, sprintf(configMap, "release", `{"a":"patched","x":"added"}`))
	if _, err := a.Apply(ctx, intent, ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionForce)}); err != nil {
		t.Fatal(err)
	}
	taken, err := ownershipcore.ParsePathSet([]string{".data.a"})
	if err != nil {
		t.Fatal(err)
	}
	if released, err := a.Release(ctx, intent, "fp", taken); err != nil || released.Empty() {
		t.Fatalf("release: %v %v", released, err)
	}
	if _, err := a.Relinquish(ctx, intent, "fp"); err != nil {
		t.Fatal(err)
	}
	live := get(t, a.Client, intent)
	data, _, _ := unstructured.NestedStringMap(live.Object, "data")
	if want := map[string]string{"a": "patched", "b": "2"}; !reflect.DeepEqual(data, want) {
		t.Fatalf("data = %v, want %v", data, want)
	}
	for p, ms := range owners(t, live) {
		for _, m := range ms {
			if m == "fp/Apply" || m == "fp/Update" {
				t.Errorf("fp still owns %s", p)
			}
		}
	}
}

// An apply conditional on a UID never recreates a deleted object, and a
// hand-back or relinquish of a replaced object touches nothing.
func TestUIDGuards(t *testing.T) {
	ctx := context.Background()
	a, _ := newApplier(t)
	live := applyAs(t, a.Client, "base", sprintf(configMap, "guarded", `{"a":"1"}`))
	uid := get(t, a.Client, live).GetUID()
	intent := obj(t, sprintf(configMap, "guarded", `{"x":"1"}`))
	if _, err := a.Apply(ctx, intent, ownershipcore.ApplyOptions{FieldManager: "fp", UID: uid}); err != nil {
		t.Fatal(err)
	}
	if err := a.Client.Delete(ctx, live); err != nil {
		t.Fatal(err)
	}
	// The reader is not a cache here, so the local check sees the object
	// gone; the request itself is guarded too (the stale-cache race).
	intent = obj(t, sprintf(configMap, "guarded", `{"x":"2"}`))
	if _, err := a.Apply(ctx, intent, ownershipcore.ApplyOptions{FieldManager: "fp", UID: uid}); !errors.Is(err, ownershipcore.ErrTargetGone) {
		t.Fatalf("apply to a deleted object: %v, want ErrTargetGone", err)
	}
	body := intent.DeepCopy()
	body.SetUID(uid)
	err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(body), client.FieldOwner("fp"))
	if !apierrors.IsConflict(err) {
		t.Fatalf("raw apply with a stale uid: %v, want a 409", err)
	}
	if err := a.Client.Get(ctx, client.ObjectKeyFromObject(intent), &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap"}}); !apierrors.IsNotFound(err) {
		t.Fatalf("the deleted ConfigMap exists again: %v", err)
	}
	// Recreated by its owner: our guarded calls do nothing to the new one.
	applyAs(t, a.Client, "base", sprintf(configMap, "guarded", `{"a":"1"}`))
	ref := intent.DeepCopy()
	ref.SetUID(uid)
	if res, err := a.Relinquish(ctx, ref, "fp"); err != nil || res.Action != ownershipcore.ActionUnchanged {
		t.Fatalf("relinquish of a replaced object: %v %v", res.Action, err)
	}
	if moved, err := a.HandBack(ctx, ref, "fp", nil); err != nil || !moved.Empty() {
		t.Fatalf("hand-back of a replaced object: moved %v, %v; want nothing", ownershipcore.FormatSet(moved), err)
	}
}
