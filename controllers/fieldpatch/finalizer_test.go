/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/controllers/fieldpatch"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
)

// At the end of a foreground deletion (Argo CD deletes an Application's
// objects so) the garbage collector removes its foregroundDeletion
// finalizer; a copy read before that still holds it. Our finalizer is
// removed from such a copy without putting foregroundDeletion back,
// which the apiserver refuses on an object being deleted (found by
// test/gitops TestArgoDelivery).
func TestRemoveFinalizerFromStaleCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "fin-stale")
	const other = "example.com/gc"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: ns, Finalizers: []string{other, fieldpatch.Finalizer}}}
	if err := k8s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	stale := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), stale); err != nil {
		t.Fatal(err)
	}
	// The other finalizer goes on the apiserver, after the copy was read.
	remove := client.RawPatch(types.JSONPatchType, []byte(`[{"op":"test","path":"/metadata/finalizers/0","value":"`+other+`"},{"op":"remove","path":"/metadata/finalizers/0"}]`))
	if err := k8s.Patch(ctx, stale.DeepCopy(), remove); err != nil {
		t.Fatal(err)
	}
	// What a plain merge patch from the copy does: refused.
	plain := stale.DeepCopy()
	plain.Finalizers = []string{other}
	if err := k8s.Patch(ctx, plain, client.MergeFrom(stale)); err == nil {
		t.Fatal("a merge patch from the stale copy was accepted; the case this test is about no longer arises")
	}
	if _, err := skeleton.RemoveFinalizer(ctx, k8s, k8s, stale, fieldpatch.Finalizer); err != nil {
		t.Fatalf("RemoveFinalizer from the stale copy: %v", err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after the last finalizer went: %v, want the ConfigMap gone", err)
	}
}
