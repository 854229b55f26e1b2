/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/ownershipcore"
)

// snapshot is a Reader that returns one object read from the apiserver, so
// the benchmark measures the local decision, not a round trip.
type snapshot struct{ obj *unstructured.Unstructured }

func (s snapshot) Get(_ context.Context, _ client.ObjectKey, out client.Object, _ ...client.GetOption) error {
	s.obj.DeepCopyInto(out.(*unstructured.Unstructured))
	return nil
}

func (s snapshot) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// BenchmarkNoOpDecision measures Applier.Apply on a typical Deployment whose
// intent already holds: the apiserver's field manager runs locally and no
// request is sent (target: 0 writes).
func BenchmarkNoOpDecision(b *testing.B) {
	ctx := context.Background()
	a, count := newApplier(b)
	applyAs(b, a.Client, "vendor", deployment("bench"))
	intent := obj(b, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: bench, namespace: default}
spec:
  template:
    spec:
      containers:
      - name: app
        env: [{name: HTTP_PROXY, value: "http://proxy:3128"}]
`)
	opts := ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionForce)}
	if _, err := a.Apply(ctx, intent, opts); err != nil {
		b.Fatal(err)
	}
	local := &ownershipcore.Applier{Client: a.Client, Reader: snapshot{get(b, a.Client, intent)}, Schema: schema}
	count.writes.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := local.Apply(ctx, intent, opts)
		if err != nil || res.Action != ownershipcore.ActionUnchanged {
			b.Fatalf("%v %v", res.Action, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(count.writes.Load())/float64(b.N), "writes/op")
}
