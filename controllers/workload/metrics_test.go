/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/workload"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/test/testkit"
)

// gauge is the value of the series of family name with exactly labels in
// the manager's registry (what /metrics serves), and whether it exists.
func gauge(t testing.TB, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}

// fieldops_apply_total counts writes, not reconciles: an object created
// once counts Created once however often the workload is reconciled
// after, a spec change counts one Configured, and an apply that changes
// nothing counts nothing. The controller label is controller-runtime's
// own name of the controller.
func TestApplyTotalCountsWrites(t *testing.T) {
	ns := kit.Namespace(t, "apply-total")
	// LimitRange: no other test of the package applies one.
	count := func(action string) float64 {
		return testutil.ToFloat64(metrics.ApplyTotal.WithLabelValues(metrics.ControllerWorkload, "LimitRange", action))
	}
	created, configured, unchanged := count("Created"), count("Configured"), count("Unchanged")
	mw := newWorkloadNoWait(t, ns, "limits", "{apiVersion: v1, kind: LimitRange, metadata: {name: limits}, spec: {limits: [{type: Container, default: {cpu: 500m}}]}}")
	waitReason(t, mw, workload.ReasonApplied)
	for range 3 {
		reconciled(t, mw)
	}
	if got := count("Created") - created; got != 1 {
		t.Errorf("fieldops_apply_total{action=Created} grew by %v over 4 reconciles of one creation, want 1", got)
	}
	if got := count("Unchanged") - unchanged; got != 0 {
		t.Errorf("fieldops_apply_total{action=Unchanged} grew by %v, want 0: no-op applies are not counted", got)
	}
	update(t, mw, func(mw *v1alpha1.ManagedWorkload) {
		mw.Spec.Resources = resources(t, "{apiVersion: v1, kind: LimitRange, metadata: {name: limits}, spec: {limits: [{type: Container, default: {cpu: 250m}}]}}")
	})
	waitReason(t, mw, workload.ReasonApplied)
	reconciled(t, mw)
	reconciled(t, mw)
	if got := count("Configured") - configured; got != 1 {
		t.Errorf("fieldops_apply_total{action=Configured} grew by %v over one spec change, want 1", got)
	}
	if got := count("Created") - created; got != 1 {
		t.Errorf("fieldops_apply_total{action=Created} grew by %v, want 1", got)
	}
	if _, ok := gauge(t, "controller_runtime_reconcile_total", map[string]string{"controller": metrics.ControllerWorkload, "result": "success"}); !ok {
		t.Errorf("controller-runtime has no controller %q: the controller label of fieldops_apply_total differs from controller_runtime_reconcile_total's", metrics.ControllerWorkload)
	}
}

// fieldops_objects counts the workloads by Ready status and reason, from
// the manager's cache: a workload with an object that can never be
// applied is counted under ObjectsFailed, a fine one under Applied.
func TestObjectsGauge(t *testing.T) {
	ns := kit.Namespace(t, "objects-gauge")
	fine := newWorkloadNoWait(t, ns, "fine", "{apiVersion: v1, kind: ConfigMap, metadata: {name: fine}, data: {k: v}}")
	bad := newWorkloadNoWait(t, ns, "bad", "{apiVersion: v1, kind: ConfigMap, metadata: {name: bad}, data: {k: 1.5}}")
	waitReason(t, fine, workload.ReasonApplied)
	waitReason(t, bad, workload.ReasonObjectsFailed)
	// The gauge reads the cache, which may lag the test's reads.
	testkit.Eventually(t, "fieldops_objects of both workloads", func() (bool, string) {
		applied, ok1 := gauge(t, "fieldops_objects", map[string]string{"kind": "ManagedWorkload", "ready": "True", "stalled": "False", "reason": workload.ReasonApplied})
		failed, ok2 := gauge(t, "fieldops_objects", map[string]string{"kind": "ManagedWorkload", "ready": "False", "stalled": "True", "reason": workload.ReasonObjectsFailed})
		if !ok2 {
			failed, ok2 = gauge(t, "fieldops_objects", map[string]string{"kind": "ManagedWorkload", "ready": "False", "stalled": "False", "reason": workload.ReasonObjectsFailed})
		}
		return ok1 && ok2 && applied >= 1 && failed >= 1, fmt.Sprintf("Applied %v (%v), ObjectsFailed %v (%v)", applied, ok1, failed, ok2)
	})
}
