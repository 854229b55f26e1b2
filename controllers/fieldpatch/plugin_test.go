/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/test/testkit"
)

// apiDeployment applies the Deployment api as helm, then sets its
// replicas as the Update manager replicasOwner.
func apiDeployment(t *testing.T, ns, replicasOwner string, replicas int) *unstructured.Unstructured {
	t.Helper()
	d := applyAs(t, "helm", fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: %s}
spec:
  replicas: 3
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: api, image: "api:1.0"}]
`, ns))
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if err := k8s.Patch(context.Background(), d, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(replicasOwner)); err != nil {
		t.Fatal(err)
	}
	return d
}

// Under the yield-to-autoscalers plugin (a real subprocess), a patch
// contesting spec.replicas with the "hpa" Update manager and the pod
// template with an Apply manager yields the replicas and forces the rest.
func TestConflictPluginYieldsToAutoscaler(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "plugin-yield")
	d := apiDeployment(t, ns, "hpa", 7)
	fp := fieldPatch(t, fmt.Sprintf(`
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: %s}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: api}
  conflictPolicy: Plugin
  conflictPlugin: yield-to-autoscalers
  patch:
    spec:
      replicas: 1
      template:
        spec:
          containers: [{name: api, image: "api:2.0"}]
`, ns))
	waitReason(t, fp, "Applied")
	l := live(t, d)
	if r, _, _ := unstructured.NestedInt64(l.Object, "spec", "replicas"); r != 7 {
		t.Fatalf("replicas %d: not yielded to hpa", r)
	}
	testkit.Eventually(t, "image forced", func() (bool, string) {
		cs, _, _ := unstructured.NestedSlice(live(t, d).Object, "spec", "template", "spec", "containers")
		img := cs[0].(map[string]interface{})["image"]
		return img == "api:2.0", fmt.Sprint(img)
	})
	own := owners(t, live(t, d))
	if got := own[".spec.replicas"]; len(got) != 1 || got[0] != "hpa/Update" {
		t.Fatalf(".spec.replicas owned by %v", got)
	}
	if got := own[`.spec.template.spec.containers[name="api"].image`]; len(got) != 1 || got[0] != "fieldops-fieldpatch/"+ns+"/pin/Apply" {
		t.Fatalf("image owned by %v", got)
	}
}

// A conflict plugin that answers outside the protocol (misbehave returns
// an unknown decision for the manager "bad-decision") leaves the
// conflicts to conflictPluginFallback and is reported: a PluginFailure
// condition, a PluginFailed event and fieldops_plugin_failures_total.
func TestConflictPluginFailureIsReported(t *testing.T) {
	ns := namespace(t, "plugin-failure")
	failures := testutil.ToFloat64(metrics.PluginFailuresTotal.WithLabelValues("misbehave", "malformed"))
	d := apiDeployment(t, ns, "bad-decision", 5)
	fp := fieldPatch(t, fmt.Sprintf(`
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: %s}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: api}
  conflictPolicy: Plugin
  conflictPlugin: misbehave
  conflictPluginFallback: Yield
  patch: {spec: {replicas: 1}}
`, ns))
	waitReason(t, fp, "Applied")
	c := meta.FindStatusCondition(fp.Status.Conditions, "PluginFailure")
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "PluginFailed" || !strings.Contains(c.Message, "conflictPluginFallback") {
		t.Fatalf("PluginFailure condition = %+v, want True PluginFailed naming the fallback; conditions %+v", c, fp.Status.Conditions)
	}
	hasEvent(t, ns, "pin", "PluginFailed", "misbehave")
	if r, _, _ := unstructured.NestedInt64(live(t, d).Object, "spec", "replicas"); r != 5 {
		t.Errorf("replicas = %d, want 5: the fallback Yield leaves them to bad-decision", r)
	}
	if got := testutil.ToFloat64(metrics.PluginFailuresTotal.WithLabelValues("misbehave", "malformed")) - failures; got < 1 {
		t.Errorf("fieldops_plugin_failures_total{plugin=misbehave,reason=malformed} grew by %v", got)
	}
	// The failure is reported once, not rewritten on every reconcile:
	// after the reconciles under way (a first nudge), a reconcile (a
	// second nudge) leaves the FieldPatch as the nudge left it.
	reconciled(t, fp)
	reconciled(t, fp)
	rv := fp.ResourceVersion // the nudge's answer
	get(t, fp)
	if fp.ResourceVersion != rv {
		t.Errorf("the FieldPatch keeps being written while the plugin fails (resourceVersion %s → %s)", rv, fp.ResourceVersion)
	}
	if c := meta.FindStatusCondition(fp.Status.Conditions, "PluginFailure"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("PluginFailure condition gone while the plugin still fails: %+v", fp.Status.Conditions)
	}
}
