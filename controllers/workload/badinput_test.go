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

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/workload"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/test/testkit"
)

// f. Bad objects get a reason in their inventory entry and an event; the
// valid objects are still applied.
func TestBadObjects(t *testing.T) {
	ns := kit.Namespace(t, "bad-input")
	mw := newWorkload(t, ns, "mixed",
		"{apiVersion: example.com/v1, kind: Nope, metadata: {name: x}}",
		"{apiVersion: v1, kind: ConfigMap, data: {k: v}}",
		"{apiVersion: v1, kind: ConfigMap, metadata: {name: dup}, data: {k: v}}",
		"{apiVersion: v1, kind: ConfigMap, metadata: {name: dup}, data: {k: w}}",
		"{apiVersion: v1, kind: Service, metadata: {name: bad-port}, spec: {ports: [{port: 99999}]}}",
		"{apiVersion: v1, kind: ConfigMap, metadata: {name: ok}, data: {k: v}}",
	)
	waitReason(t, mw, workload.ReasonObjectsFailed)
	want := map[int]string{
		0: workload.ReasonUnknownKind,
		1: workload.ReasonInvalidObject,
		2: "",
		3: workload.ReasonDuplicateObject,
		4: workload.ReasonRejected,
		5: "",
	}
	testkit.Eventually(t, "every object reconciled", func() (bool, string) {
		kit.Get(t, mw)
		return len(mw.Status.Inventory) == len(want), "inventory incomplete"
	})
	for i, reason := range want {
		e := entry(t, mw, i)
		if e.Reason != reason {
			t.Errorf("resources[%d]: reason %q (%s), want %q", i, e.Reason, e.Message, reason)
		}
		if reason == "" && (e.UID == "" || e.Action != "Created" && e.Action != "Unchanged") {
			t.Errorf("resources[%d] not applied: %+v", i, e)
		}
	}
	if mw.Status.Applied != 2 || mw.Status.Failed != 4 {
		t.Errorf("applied %d failed %d, want 2 and 4", mw.Status.Applied, mw.Status.Failed)
	}
	kit.HasEvent(t, ns, "mixed", workload.ReasonUnknownKind, "example.com/v1, Kind=Nope")
	kit.HasEvent(t, ns, "mixed", workload.ReasonInvalidObject, "metadata.name is required")
	kit.HasEvent(t, ns, "mixed", workload.ReasonDuplicateObject, "already resources[2]")
	// The apiserver's reason, not the rejected value (issue 15, defect 9).
	kit.HasEvent(t, ns, "mixed", workload.ReasonRejected, "spec.ports[0].port: Invalid value (omitted): must be between 1 and 65535")
	if got := testutil.ToFloat64(metrics.ApplyTotal.WithLabelValues(metrics.ControllerWorkload, "Service", workload.ActionFailed)); got < 1 {
		t.Errorf("fieldops_apply_total{kind=Service,action=Failed} = %v", got)
	}
	if got := testutil.ToFloat64(metrics.ApplyTotal.WithLabelValues(metrics.ControllerWorkload, "ConfigMap", "Created")); got < 2 {
		t.Errorf("fieldops_apply_total{kind=ConfigMap,action=Created} = %v", got)
	}
	if !kit.Exists(t, ref("v1", "ConfigMap", ns, "ok")) || !kit.Exists(t, ref("v1", "ConfigMap", ns, "dup")) {
		t.Fatal("valid objects were not applied")
	}
	kit.DeleteAndWait(t, mw)
}

// Admission refuses what cannot be an object at all.
func TestAdmission(t *testing.T) {
	t.Parallel()
	ns := kit.Namespace(t, "bad-input")
	for name, c := range map[string]struct{ doc, want string }{
		"no-kind":       {"{apiVersion: v1, metadata: {name: x}}", "kind: Required value"},
		"no-apiversion": {"{kind: ConfigMap, metadata: {name: x}}", "apiVersion: Required value"},
	} {
		mw := &v1alpha1.ManagedWorkload{}
		mw.Name, mw.Namespace = name, ns
		mw.Spec.Resources = resources(t, c.doc)
		err := k8s.Create(context.Background(), mw)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: admission error %v", name, err)
		}
	}
	mw := &v1alpha1.ManagedWorkload{}
	mw.Name, mw.Namespace = "bad-policy", ns
	mw.Spec.ConflictPolicy = "Plugin"
	if err := k8s.Create(context.Background(), mw); err == nil || !strings.Contains(err.Error(), "conflictPolicy") {
		t.Errorf("conflictPolicy Plugin: admission error %v", err)
	}
	mw.Spec.ConflictPolicy = ""
	mw.Spec.YieldTo = []v1alpha1.ManagerSelector{{Manager: "hpa", Operation: "Patch"}}
	if err := k8s.Create(context.Background(), mw); err == nil || !strings.Contains(err.Error(), "operation") {
		t.Errorf("yieldTo operation Patch: admission error %v", err)
	}
	mw.Spec.YieldTo = []v1alpha1.ManagerSelector{{Manager: ""}}
	if err := k8s.Create(context.Background(), mw); err == nil || !strings.Contains(err.Error(), "manager") {
		t.Errorf("yieldTo with an empty manager: admission error %v", err)
	}
}

func TestInvalidIgnorePath(t *testing.T) {
	t.Parallel()
	ns := kit.Namespace(t, "bad-input")
	mw := &v1alpha1.ManagedWorkload{}
	mw.Name, mw.Namespace = "bad-ignore", ns
	mw.Spec.IgnorePaths = []string{".spec[unclosed"}
	mw.Spec.Resources = resources(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: never}, data: {k: v}}")
	if err := k8s.Create(context.Background(), mw); err != nil {
		t.Fatal(err)
	}
	waitReason(t, mw, workload.ReasonInvalidIgnorePath)
	kit.HasEvent(t, ns, "bad-ignore", workload.ReasonInvalidIgnorePath, "unclosed")
	if kit.Exists(t, ref("v1", "ConfigMap", ns, "never")) {
		t.Fatal("applied despite an invalid ignore path")
	}
	kit.DeleteAndWait(t, mw)
}

// Issue 15, defect 15: an object that can never be applied as it is
// (duplicate list-map keys, refused locally without a request; a float
// where an int32 belongs, refused by the apiserver) is Rejected without
// retry, its message readable and without values (defect 9); the other
// objects are applied.
func TestUnappliableObjectIsRejected(t *testing.T) {
	ns := kit.Namespace(t, "bad-terminal")
	kit.ApplyAs(t, "helm", fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: shared, namespace: %s}
spec:
  selector: {matchLabels: {app: shared}}
  template:
    metadata: {labels: {app: shared}}
    spec: {containers: [{name: app, image: "nginx:1.27"}]}
`, ns))
	failed := metrics.ApplyTotal.WithLabelValues(metrics.ControllerWorkload, "Deployment", workload.ActionFailed)
	mw := newWorkload(t, ns, "terminal",
		"{apiVersion: apps/v1, kind: Deployment, metadata: {name: shared}, spec: {template: {spec: {containers: [{name: app, env: [{name: DUP, value: s3cr3t-one}, {name: DUP, value: s3cr3t-two}]}]}}}}",
		"{apiVersion: apps/v1, kind: Deployment, metadata: {name: float}, spec: {replicas: 1.5, selector: {matchLabels: {app: f}}, template: {metadata: {labels: {app: f}}, spec: {containers: [{name: app, image: nginx}]}}}}",
		"{apiVersion: v1, kind: ConfigMap, metadata: {name: fine}, data: {k: v}}",
	)
	waitReason(t, mw, workload.ReasonObjectsFailed)
	testkit.Eventually(t, "every object reconciled", func() (bool, string) {
		kit.Get(t, mw)
		return len(mw.Status.Inventory) == 3, "inventory incomplete"
	})
	for i, want := range map[int]string{
		0: `Deployment bad-terminal/shared: apply Deployment bad-terminal/shared: invalid intent: the object does not fit the schema of apps/v1 Deployment: .spec.template.spec.containers[name="app"].env: duplicate entries for key [name="DUP"]`,
		1: "Deployment bad-terminal/float: the apiserver rejected the object: apply Deployment bad-terminal/float: the object does not fit the Go type of apps/v1 Deployment: expected int32, got number",
	} {
		e := entry(t, mw, i)
		if e.Reason != workload.ReasonRejected || e.Message != want {
			t.Errorf("resources[%d]: %s %q, want %s %q", i, e.Reason, e.Message, workload.ReasonRejected, want)
		}
	}
	if e := entry(t, mw, 2); e.Reason != "" || e.UID == "" {
		t.Errorf("resources[2] not applied: %+v", e)
	}
	if s := meta.FindStatusCondition(mw.Status.Conditions, "Stalled"); s == nil || s.Status != "True" {
		t.Errorf("Stalled = %+v, want True: nothing to retry", s)
	}
	if c := meta.FindStatusCondition(mw.Status.Conditions, "Ready"); c == nil || strings.Contains(c.Message, "s3cr3t") || strings.Contains(c.Message, "1.5") {
		t.Errorf("Ready = %+v leaks a value", c)
	}
	kit.HasEvent(t, ns, "terminal", workload.ReasonRejected, `duplicate entries for key [name="DUP"]`)
	kit.HasEvent(t, ns, "terminal", workload.ReasonRejected, "expected int32, got number")

	// No retry: once a reconcile after a nudge has finished and none is
	// running, no reconcile so far asked to run again (no retried error,
	// no requeue), so nothing comes back by itself; one more reconcile
	// costs one attempt of each refused object (and one refused request
	// for the float) and no more.
	reconciled(t, mw)
	settled := kit.Reconciles.Idle(t, "managedworkload", mw)
	if settled.Retries != 0 {
		t.Errorf("%d reconciles asked for a retry after Rejected, want none (last: %s)", settled.Retries, settled.Last)
	}
	attempts, shared, float := testutil.ToFloat64(failed), objectWrites(ns, "deployments", "shared"), objectWrites(ns, "deployments", "float")
	if shared != 0 {
		t.Errorf("%d writes to the Deployment refused locally, want none", shared)
	}
	reconciled(t, mw)
	after := kit.Reconciles.Idle(t, "managedworkload", mw)
	n := after.Finished - settled.Finished
	if got := testutil.ToFloat64(failed) - attempts; got != float64(2*n) {
		t.Errorf("%v failed applies in %d reconcile(s), want %d (one per refused object, no retry)", got, n, 2*n)
	}
	if got := objectWrites(ns, "deployments", "float") - float; got != n {
		t.Errorf("%d writes to the float Deployment in %d reconcile(s), want %d (no retry)", got, n, n)
	}
	if got := objectWrites(ns, "deployments", "shared"); got != 0 {
		t.Errorf("%d writes to the Deployment refused locally, want none", got)
	}
	if after.Retries != 0 {
		t.Errorf("%d reconciles asked for a retry, want none (last: %s)", after.Retries, after.Last)
	}
	kit.DeleteAndWait(t, mw)
}
