/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/workload"
)

// Defect 2: two workloads that set one field to different values (Force)
// do not write in turn: the one whose field was taken reports Contested,
// naming the other workload, and the target sees a bounded number of
// writes, even after further reconciles of both.
func TestWorkloadsDoNotFight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := kit.Namespace(t, "nofight")
	cm := func(v string) string {
		return fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: settings}, data: {mode: %q}}", v)
	}
	path := "/namespaces/" + ns + "/configmaps/settings"
	start := requests.Writes(path)
	a := newWorkload(t, ns, "a", cm("fast"))
	waitReason(t, a, workload.ReasonApplied)
	b := newWorkload(t, ns, "b", cm("slow"))
	waitReason(t, b, workload.ReasonApplied)
	waitReason(t, a, workload.ReasonContested)
	if c := meta.FindStatusCondition(a.Status.Conditions, "Ready"); c == nil || !strings.Contains(c.Message, "ManagedWorkload "+ns+"/b") {
		t.Fatalf("Ready of a = %+v, want Contested naming ManagedWorkload %s/b", c, ns)
	}
	kit.HasEvent(t, ns, "a", workload.ReasonContested, ns+"/b")
	// Reconcile both again: still no write.
	for _, mw := range []*v1alpha1.ManagedWorkload{a, b} {
		if err := k8s.Patch(ctx, mw, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"touch":"1"}}}`))); err != nil {
			t.Fatal(err)
		}
	}
	kit.HasEvent(t, ns, "a", workload.ReasonContested, "b")
	waitReason(t, b, workload.ReasonApplied)
	if n := requests.Writes(path) - start; n > 6 {
		t.Fatalf("%d writes to the shared ConfigMap, want at most 6", n)
	}
	if d, _, _ := unstructured.NestedStringMap(kit.Live(t, ref("v1", "ConfigMap", ns, "settings")).Object, "data"); d["mode"] != "slow" {
		t.Fatalf("data = %v, want b's value to hold", d)
	}
}
