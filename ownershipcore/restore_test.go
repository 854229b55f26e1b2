/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"reflect"
	"testing"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/fieldops/fieldops/ownershipcore"
)

// A Restore interrupted after its first write (the apply of the previous
// values; a kill -9 before the hand-back and the finalizer's removal) is
// finished by the next LetGo: the values are restored once (that LetGo's
// restore apply changes nothing), the fields go back to their previous
// owner, and the object is as it was before the patch.
func TestRestoreInterruptedAfterItsFirstWrite(t *testing.T) {
	ctx := context.Background()
	a, count := newApplier(t)
	before := applyAs(t, a.Client, "helm", `{apiVersion: v1, kind: ConfigMap, metadata: {name: restore-interrupted, namespace: default}, data: {replicas: "3", other: helm}}`)
	live := get(t, a.Client, before)
	helm, err := ownershipcore.Owners(live)
	if err != nil {
		t.Fatal(err)
	}
	values, err := a.Model().PreviousValues(live, mustPaths(t, ".data.replicas"))
	if err != nil {
		t.Fatal(err)
	}
	applyAs(t, a.Client, "fp", `{apiVersion: v1, kind: ConfigMap, metadata: {name: restore-interrupted, namespace: default}, data: {replicas: "10", added: "yes"}}`)
	target := get(t, a.Client, before)
	target.SetManagedFields(nil)

	if _, restored, sent, err := ownershipcore.RestoreOnly(a, ctx, target, nil, "fp", values); err != nil || len(ownershipcore.FormatSet(restored)) != 1 || !sent {
		t.Fatalf("first write: restored %v (sent %v), %v", ownershipcore.FormatSet(restored), sent, err)
	}
	// The crash: the hand-back never ran. The next deletion attempt:
	writes := count.writes.Load()
	_, out, err := a.LetGo(ctx, target, nil, "fp", ownershipcore.LetGo{Restore: values, Previous: helm, Relinquish: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := count.writes.Load() - writes; n != 1 {
		t.Errorf("the finishing LetGo sent %d writes, want 1 (the values are restored already)", n)
	}
	if out.RestoreSent {
		t.Error("the finishing LetGo says it sent the restore's apply; the values were restored already")
	}
	after := get(t, a.Client, before)
	if got, want := after.Object["data"], map[string]interface{}{"replicas": "3", "other": "helm"}; !reflect.DeepEqual(got, want) {
		t.Errorf("data %v, want %v", got, want)
	}
	if got, want := owners(t, after), owners(t, live); !reflect.DeepEqual(got, want) {
		t.Errorf("owners %v, want %v as before the patch", got, want)
	}
	if got := ownershipcore.FormatSet(out.Moved); !reflect.DeepEqual(got, []string{".data.replicas"}) {
		t.Errorf("handed back %v, want [.data.replicas]", got)
	}
}

func mustPaths(t *testing.T, paths ...string) *fieldpath.Set {
	t.Helper()
	s, err := ownershipcore.ParsePathSet(paths)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
