/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/ownershipcore"
)

// Fields written with Update by a legacy manager and an older shared one
// move into one Apply entry; values stay; a second call does nothing; the
// next apply of a smaller intent removes what it left out.
func TestUpgradeManagers(t *testing.T) {
	ctx := context.Background()
	a, _ := newApplier(t)
	cm := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: upgrade, namespace: default}, data: {a: "1", b: "2"}}`)
	if err := a.Client.Create(ctx, cm, client.FieldOwner("operator-v1")); err != nil {
		t.Fatal(err)
	}
	shared := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: upgrade, namespace: default}, data: {c: "3"}}`)
	if err := a.Client.Patch(ctx, shared, client.Merge, client.FieldOwner("shared-controller")); err != nil {
		t.Fatal(err)
	}
	before := get(t, a.Client, cm)
	from := []string{"operator-v1", "shared-controller"}
	if !ownershipcore.NeedsUpgrade(before, from) || ownershipcore.NeedsUpgrade(before, []string{"someone-else"}) {
		t.Fatal("NeedsUpgrade is wrong about the Update entries")
	}

	done, err := a.UpgradeManagers(ctx, cm, from, "workload")
	if err != nil || !done {
		t.Fatalf("upgrade: %v %v", done, err)
	}
	after := get(t, a.Client, cm)
	entries := after.GetManagedFields()
	if len(entries) != 1 || entries[0].Manager != "workload" || entries[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("managed fields after the upgrade: %+v", entries)
	}
	for _, k := range []string{"a", "b", "c"} {
		if got := owners(t, after)[`.data.`+k]; len(got) != 1 || got[0] != "workload/Apply" {
			t.Errorf(".data.%s owned by %v", k, got)
		}
	}
	if d := after.Object["data"]; len(d.(map[string]interface{})) != 3 {
		t.Fatalf("values changed: %v", d)
	}
	if again, err := a.UpgradeManagers(ctx, cm, from, "workload"); err != nil || again {
		t.Fatalf("second upgrade: %v %v, want a no-op", again, err)
	}

	intent := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: upgrade, namespace: default}, data: {a: "1"}}`)
	if _, err := a.Apply(ctx, intent, ownershipcore.ApplyOptions{FieldManager: "workload"}); err != nil {
		t.Fatal(err)
	}
	if d := get(t, a.Client, cm).Object["data"]; len(d.(map[string]interface{})) != 1 {
		t.Fatalf("data after applying only a: %v", d)
	}
}
