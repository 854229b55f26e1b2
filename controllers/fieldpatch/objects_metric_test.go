/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"fmt"
	"testing"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// objectsSeries is fieldops_objects{kind, ready, stalled, reason} in the
// manager's registry (what /metrics serves), 0 when the series is absent.
func objectsSeries(t *testing.T, kind, ready, stalled, reason string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"kind": kind, "ready": ready, "stalled": stalled, "reason": reason}
	for _, f := range families {
		if f.GetName() != "fieldops_objects" {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// A FieldPatch stuck in InvalidPatch (a spec error: no apply, no
// reconcile error) or UnknownKind shows in fieldops_objects, which
// FieldopsObjectNotReady alerts on: by kind and reason, Stalled.
func TestStuckPatchesInObjectsMetric(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "fp-objects-metric")
	applyAs(t, "helm", fmt.Sprintf(hpaDeployment, ns))
	for _, tc := range []struct{ name, target, patch, reason string }{
		{"invalid", `{apiVersion: apps/v1, kind: Deployment, name: web}`, `{}`, "InvalidPatch"},
		{"unknown-kind", `{apiVersion: example.com/v1, kind: Gizmo, name: g}`, `{spec: {}}`, "UnknownKind"},
	} {
		fp := fieldPatch(t, fmt.Sprintf(`
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: %s, namespace: %s}
spec:
  target: %s
  patch: %s
`, tc.name, ns, tc.target, tc.patch))
		waitReason(t, fp, tc.reason)
		stalled := "True"
		if tc.reason == "UnknownKind" {
			stalled = "False" // retried: the CRD may come
		}
		// The gauge reads the manager's cache, which may lag the test's read.
		eventually(t, "fieldops_objects{kind=FieldPatch,reason="+tc.reason+"}", func() (bool, string) {
			v := objectsSeries(t, "FieldPatch", "False", stalled, tc.reason)
			if v == 0 && stalled == "False" {
				v = objectsSeries(t, "FieldPatch", "False", "True", tc.reason)
			}
			return v >= 1, fmt.Sprintf("%v", v)
		})
	}
}
