package workload_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

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
	kit.HasEvent(t, ns, "mixed", workload.ReasonRejected, "99999")
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
	mw.Spec.ConflictPolicy = "Yield"
	if err := k8s.Create(context.Background(), mw); err == nil || !strings.Contains(err.Error(), "conflictPolicy") {
		t.Errorf("conflictPolicy Yield: admission error %v", err)
	}
}

func TestInvalidIgnorePath(t *testing.T) {
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
