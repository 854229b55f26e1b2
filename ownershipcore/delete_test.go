/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/fieldops/fieldops/ownershipcore"
)

// pruneIfAlone is a workload's prune decision: delete when no manager but
// ours co-owns the object's content.
func pruneIfAlone(t *testing.T, decisions *int, ours ...string) ownershipcore.DeleteDecision {
	return func(live *unstructured.Unstructured) (bool, error) {
		*decisions++
		others, err := ownershipcore.CoOwners(live, sets.New(ours...))
		t.Logf("decision %d on resourceVersion %s: co-owners %v", *decisions, live.GetResourceVersion(), others)
		return len(others) == 0, err
	}
}

// Another field manager writes a field of the object between the prune
// decision and the deletion: the deletion, guarded by the decided state's
// UID and resourceVersion, is refused; the decision runs again on the
// fresh object, finds a co-owner, and the object stays with that field.
func TestDeleteRedecidesAfterAWriteInBetween(t *testing.T) {
	ctx := context.Background()
	a, _ := newApplier(t)
	live := get(t, a.Client, applyAs(t, a.Client, "workload", sprintf(configMap, "pruned-race", `{"a":"1"}`)))
	wrote := 0
	defer ownershipcore.SetBeforeDelete(func(ctx context.Context, _ *unstructured.Unstructured) {
		if wrote++; wrote == 1 {
			applyAs(t, a.Client, "other", sprintf(configMap, "pruned-race", `{"theirs":"1"}`))
		}
	})()
	decisions := 0
	res, err := a.Delete(ctx, live, live, pruneIfAlone(t, &decisions, "workload"), ownershipcore.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ownershipcore.ActionUnchanged || res.Object == nil || decisions != 2 {
		t.Fatalf("Delete: action %s, object %v, %d decisions; want Unchanged, the fresh object, 2 decisions", res.Action, res.Object != nil, decisions)
	}
	after := get(t, a.Client, live)
	if got := after.Object["data"].(map[string]interface{})["theirs"]; got != "1" {
		t.Errorf("data.theirs = %v after the refused deletion, want 1 (the other manager's write)", got)
	}
	if got := owners(t, after)[".data.theirs"]; len(got) != 1 || got[0] != "other/Apply" {
		t.Errorf("owners of data.theirs %v, want [other/Apply]", got)
	}
}

// With no write in between, the deletion decided on is sent once.
func TestDeleteWhenDecided(t *testing.T) {
	ctx := context.Background()
	a, _ := newApplier(t)
	live := get(t, a.Client, applyAs(t, a.Client, "workload", sprintf(configMap, "pruned", `{"a":"1"}`)))
	decisions := 0
	res, err := a.Delete(ctx, live, nil, pruneIfAlone(t, &decisions, "workload"), ownershipcore.DeleteOptions{})
	if err != nil || res.Action != ownershipcore.ActionDeleted || decisions != 1 {
		t.Fatalf("Delete: %s, %v after %d decisions; want Deleted after 1", res.Action, err, decisions)
	}
	gone, err := a.GetFresh(ctx, live)
	if err != nil || gone != nil {
		t.Fatalf("after the deletion: %v, %v; want it gone", gone, err)
	}
	res, err = a.Delete(ctx, live, nil, pruneIfAlone(t, &decisions, "workload"), ownershipcore.DeleteOptions{})
	if err != nil || res.Action != ownershipcore.ActionUnchanged || res.Object != nil {
		t.Fatalf("Delete of a missing object: %s, %v, %v; want Unchanged, no object", res.Action, res.Object, err)
	}
}

// The object is replaced under the same name between the decision and
// the deletion: the deletion, guarded by the decided state's UID, is
// refused, and the decision (made for the object of that UID) keeps the
// new object.
func TestDeleteKeepsAReplacedObject(t *testing.T) {
	ctx := context.Background()
	a, _ := newApplier(t)
	live := get(t, a.Client, applyAs(t, a.Client, "workload", sprintf(configMap, "replaced", `{"a":"1"}`)))
	uid := live.GetUID()
	replaced := false
	defer ownershipcore.SetBeforeDelete(func(ctx context.Context, decided *unstructured.Unstructured) {
		if replaced {
			return
		}
		replaced = true
		if err := a.Client.Delete(ctx, decided.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		applyAs(t, a.Client, "workload", sprintf(configMap, "replaced", `{"a":"2"}`))
	})()
	decisions := 0
	sameObject := func(u *unstructured.Unstructured) (bool, error) {
		decisions++
		return u.GetUID() == uid, nil
	}
	res, err := a.Delete(ctx, live, live, sameObject, ownershipcore.DeleteOptions{})
	if err != nil || res.Action != ownershipcore.ActionUnchanged || decisions != 2 {
		t.Fatalf("Delete: %s, %v after %d decisions; want Unchanged after 2", res.Action, err, decisions)
	}
	if now := get(t, a.Client, live); now.GetUID() == uid || now.Object["data"].(map[string]interface{})["a"] != "2" {
		t.Errorf("after the refused deletion: uid %s, data %v; want the new object, with a=2", now.GetUID(), now.Object["data"])
	}
}
