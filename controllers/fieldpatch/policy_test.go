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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func configMapData(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	d, _, _ := unstructured.NestedStringMap(live(t, obj(t, fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: %s}}", name, ns))).Object, "data")
	return d
}

// Issue 17 part 1: forceOver takes the fields of the managers it names
// even under conflictPolicy Fail; a conflict with any other manager still
// fails the whole apply, naming that manager, and nothing is written.
func TestForceOverUnderFail(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "force-over")
	applyAs(t, "ci-bot", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: %s}, data: {a: ci}}", ns))
	applyAs(t, "helm", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: %s}, data: {b: helm}}", ns))
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: both, namespace: `+ns+`}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: cfg}
  conflictPolicy: Fail
  forceOver: [{manager: "ci-*", operation: Apply}]
  patch: {data: {a: mine, b: mine}}
`)
	waitReason(t, fp, "Conflict")
	if c := readyCondition(fp); !strings.Contains(c.Message, `"helm"`) || strings.Contains(c.Message, "ci-bot") {
		t.Fatalf("Ready = %q, want the conflict with helm alone (ci-bot is forced over)", c.Message)
	}
	if d := configMapData(t, ns, "cfg"); d["a"] != "ci" || d["b"] != "helm" {
		t.Fatalf("data = %v: a failed apply wrote", d)
	}

	// Only ci-bot's field: forced, although the policy is Fail.
	eventually(t, "patch of a only", func() (bool, string) {
		get(t, fp)
		fp.Spec.Patch.Raw = []byte(`{"data":{"a":"mine"}}`)
		err := k8s.Update(context.Background(), fp)
		return err == nil, fmt.Sprint(err)
	})
	waitReason(t, fp, "Applied")
	if d := configMapData(t, ns, "cfg"); d["a"] != "mine" || d["b"] != "helm" {
		t.Fatalf("data = %v, want a forced over ci-bot, b left to helm", d)
	}
	// The record lists what the patch took: ci-bot's .data.a. helm's
	// .data.b, recorded before the failed apply, left the patch untaken.
	eventually(t, "the record of what the patch took", func() (bool, string) {
		get(t, fp)
		ok := len(fp.Status.PreviousOwners) == 1 && fp.Status.PreviousOwners[0].Manager == "ci-bot" && fmt.Sprint(fp.Status.PreviousOwners[0].Fields) == "[.data.a]"
		return ok, fmt.Sprintf("%+v", fp.Status.PreviousOwners)
	})
	// Deletion gives .data.a back to ci-bot; helm keeps .data.b.
	deleteAndWait(t, fp)
	o := owners(t, live(t, obj(t, fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: %s}}", ns))))
	if fmt.Sprint(o[".data.a"]) != "[ci-bot/Apply]" || fmt.Sprint(o[".data.b"]) != "[helm/Apply]" {
		t.Fatalf("owners after deletion %v, want .data.a back with ci-bot and .data.b with helm", o)
	}
}

// Issue 17 part 1: a field a yieldTo manager takes after the patch
// applied is that manager's: no repair, no contest, and the patch reports
// it no longer owns it. A manager not named is still repaired.
func TestYieldToLeavesTakenFields(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "yield-to")
	applyAs(t, "owner", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: %s}, data: {a: owner, b: owner}}", ns))
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: tune, namespace: `+ns+`}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: cfg}
  yieldTo: [{manager: "vpa-*"}]
  patch: {data: {a: mine, b: mine}}
`)
	waitReason(t, fp, "Applied")
	path := "/namespaces/" + ns + "/configmaps/cfg"
	writes := requests.Writes(path)

	applyAs(t, "vpa-updater", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: %s}, data: {a: vpa}}", ns))
	eventually(t, "the patch to see it no longer owns .data.a", func() (bool, string) {
		get(t, fp)
		return fmt.Sprint(fp.Status.ManagedFields) == "[.data.b]", fmt.Sprint(fp.Status.ManagedFields)
	})
	if d := configMapData(t, ns, "cfg"); d["a"] != "vpa" {
		t.Fatalf("data = %v: a field taken by a yieldTo manager was repaired", d)
	}
	if w := requests.Writes(path) - writes; w != 0 {
		t.Fatalf("%d writes to the ConfigMap after vpa-updater took a yielded field", w)
	}
	if c := readyCondition(fp); c.Reason != "Applied" || fp.Status.ContestedBy != "" {
		t.Fatalf("Ready = %s %q, contestedBy %q; want Applied", c.Reason, c.Message, fp.Status.ContestedBy)
	}

	// Another manager takes b: repaired as before.
	applyAs(t, "argo", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: %s}, data: {b: argo}}", ns))
	hasEvent(t, ns, "tune", "DriftRepaired", "argo")
	eventually(t, "b repaired", func() (bool, string) {
		d := configMapData(t, ns, "cfg")
		return d["b"] == "mine", fmt.Sprint(d)
	})
}

// Issue 17 part 2: a contest that outlasts spec.contestTimeout turns the
// patch Stalled (kstatus Failed) with reason ContestTimeout naming the
// contesting manager, so `kubectl wait` and health checks stop waiting;
// once the manager stops, the repair holds and the patch is Ready again.
// (contestTimeout is a quarter of the suite's backoff unit: the timeout
// comes before the backed-off repair.)
func TestContestTimeoutStalls(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "contest-timeout")
	d := applyAs(t, "helm", fmt.Sprintf(hpaDeployment, ns))
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: `+ns+`}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  contestTimeout: `+(contestBase/4).String()+`
  patch: {spec: {replicas: 4}}
`)
	waitReason(t, fp, "Applied")
	scale := func(n int) {
		t.Helper()
		if err := k8s.Patch(ctx, d, client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))), client.FieldOwner("hpa")); err != nil {
			t.Fatal(err)
		}
	}
	scale(10)
	hasEvent(t, ns, "pin", "DriftRepaired", "hpa")
	eventually(t, "the first repair", func() (bool, string) {
		n, _, _ := unstructured.NestedInt64(live(t, d).Object, "spec", "replicas")
		return n == 4, fmt.Sprint(n)
	})
	scale(11) // again: a contest, the next repair backed off
	waitReason(t, fp, "ContestTimeout")
	get(t, fp)
	stalled := meta.FindStatusCondition(fp.Status.Conditions, "Stalled")
	if stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != "ContestTimeout" || !strings.Contains(stalled.Message, `"hpa"`) {
		t.Fatalf("Stalled = %+v, want True, ContestTimeout, naming hpa", stalled)
	}
	if fp.Status.ContestedBy != "hpa" || fp.Status.ContestedSince == nil {
		t.Fatalf("contestedBy %q since %v, want hpa with a start", fp.Status.ContestedBy, fp.Status.ContestedSince)
	}
	hasEvent(t, ns, "pin", "ContestTimeout", "hpa")

	// hpa stops; the backed-off repair comes and holds: Ready again.
	waitReason(t, fp, "Applied")
	get(t, fp)
	if s := meta.FindStatusCondition(fp.Status.Conditions, "Stalled"); s != nil && s.Status == metav1.ConditionTrue {
		t.Fatalf("Stalled = %+v after the contest ended", s)
	}
	if fp.Status.ContestedBy != "" || fp.Status.ContestedSince != nil {
		t.Fatalf("contestedBy %q since %v after the contest ended", fp.Status.ContestedBy, fp.Status.ContestedSince)
	}
}
