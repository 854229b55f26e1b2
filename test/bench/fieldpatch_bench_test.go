/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

const patches = 200

// BenchmarkConverge200FieldPatches converges 200 FieldPatches (one
// ConfigMap each) and reports the manager's API requests per steady-state
// reconcile (target 0) and, per change of a patched field by another
// manager, the writes to the target (target 1: the repair) and all requests
// (the repair, the status write of lastAppliedTime, and the event).
func BenchmarkConverge200FieldPatches(b *testing.B) {
	ctx := context.Background()
	c, requests := env(b)

	for i := 0; i < b.N; i++ {
		ns := fmt.Sprintf("fieldpatch-bench-%d-%d", b.N, i)
		nsObj := &unstructured.Unstructured{}
		nsObj.SetAPIVersion("v1")
		nsObj.SetKind("Namespace")
		nsObj.SetName(ns)
		if err := c.Create(ctx, nsObj); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for j := 0; j < patches; j++ {
			cm := &unstructured.Unstructured{Object: map[string]interface{}{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]interface{}{"name": fmt.Sprintf("cm-%d", j), "namespace": ns},
				"data":     map[string]interface{}{"owner": "helm"},
			}}
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(cm), client.FieldOwner("helm")); err != nil {
				b.Fatal(err)
			}
			fp := &v1alpha1.FieldPatch{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fp-%d", j), Namespace: ns},
				Spec: v1alpha1.FieldPatchSpec{
					Target: v1alpha1.TargetReference{APIVersion: "v1", Kind: "ConfigMap", Name: fmt.Sprintf("cm-%d", j)},
				},
			}
			fp.Spec.Patch.Raw = []byte(`{"data":{"patched":"yes"}}`)
			if err := c.Create(ctx, fp); err != nil {
				b.Fatal(err)
			}
		}
		waitAllReady(b, ctx, c, ns)
		b.ReportMetric(time.Since(start).Seconds(), "converge-s")

		// Steady state: touch every FieldPatch (an annotation triggers a
		// reconcile) and count the manager's requests.
		time.Sleep(2 * time.Second)
		before := requests.n.Load()
		for j := 0; j < patches; j++ {
			fp := &v1alpha1.FieldPatch{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fp-%d", j), Namespace: ns}}
			if err := c.Patch(ctx, fp, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"bench/touch":"1"}}}`))); err != nil {
				b.Fatal(err)
			}
		}
		time.Sleep(5 * time.Second)
		b.ReportMetric(float64(requests.n.Load()-before)/patches, "requests/steady-reconcile")

		// One change per target by another manager: one repair each.
		before = requests.n.Load()
		beforeTarget := requests.targetWrites.Load()
		for j := 0; j < patches; j++ {
			cm := &unstructured.Unstructured{}
			cm.SetAPIVersion("v1")
			cm.SetKind("ConfigMap")
			cm.SetNamespace(ns)
			cm.SetName(fmt.Sprintf("cm-%d", j))
			if err := c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(`{"data":{"patched":"no"}}`)), client.FieldOwner("intruder")); err != nil {
				b.Fatal(err)
			}
		}
		time.Sleep(5 * time.Second)
		b.ReportMetric(float64(requests.n.Load()-before)/patches, "requests/change")
		b.ReportMetric(float64(requests.targetWrites.Load()-beforeTarget)/patches, "target-writes/change")
	}
}

func waitAllReady(b *testing.B, ctx context.Context, c client.Client, ns string) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		var l v1alpha1.FieldPatchList
		if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		ready := 0
		for _, fp := range l.Items {
			if meta.IsStatusConditionTrue(fp.Status.Conditions, "Ready") {
				ready++
			}
		}
		if ready == patches {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Fatal("FieldPatches did not converge in 5 minutes")
}
