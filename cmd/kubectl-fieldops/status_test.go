/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/test/testkit"
)

func readyCondition(status metav1.ConditionStatus, reason, message string) []metav1.Condition {
	return []metav1.Condition{{Type: "Ready", Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.Now()}}
}

// create writes obj and then its status (there is no manager in this
// suite: the statuses are the ones the controllers write, set by hand).
func create(t *testing.T, obj client.Object, setStatus func()) {
	t.Helper()
	ctx := context.Background()
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	setStatus()
	if err := k8s.Status().Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
}

func patchSpec(target v1alpha1.TargetReference, patch string) v1alpha1.FieldPatchSpec {
	return v1alpha1.FieldPatchSpec{Target: target, Patch: runtime.RawExtension{Raw: []byte(patch)}}
}

func TestStatus(t *testing.T) {
	for _, ns := range []string{"payments", "platform"} {
		createNamespace(t, ns)
	}
	fp := &v1alpha1.FieldPatch{ObjectMeta: metav1.ObjectMeta{Name: "aws-node-proxy", Namespace: "platform"},
		Spec: patchSpec(v1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "aws-node"}, `{"spec":{}}`)}
	create(t, fp, func() {
		fp.Status.Conditions = readyCondition(metav1.ConditionTrue, "Applied", "2 fields applied to DaemonSet platform/aws-node")
		fp.Status.FieldCount = 2
	})
	pinned := &v1alpha1.FieldPatch{ObjectMeta: metav1.ObjectMeta{Name: "pin-replicas", Namespace: "payments", Labels: map[string]string{"team": "payments"}},
		Spec: patchSpec(v1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, `{"spec":{"replicas":4}}`)}
	create(t, pinned, func() {
		pinned.Status.Conditions = readyCondition(metav1.ConditionFalse, "Contested", `field manager "hpa" keeps taking back patched fields; repairs are backed off`)
		pinned.Status.FieldCount = 1
		pinned.Status.ContestedBy = "hpa"
	})
	cfp := &v1alpha1.ClusterFieldPatch{ObjectMeta: metav1.ObjectMeta{Name: "coredns-safe-to-evict"},
		Spec: patchSpec(v1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "coredns", Namespace: "kube-system"}, `{"spec":{}}`)}
	create(t, cfp, func() {
		cfp.Status.Conditions = readyCondition(metav1.ConditionFalse, "Conflict", `1 conflict(s): .spec.template.metadata.annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"] owned by "helm" (Apply)`)
	})
	mw := &v1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "payments"}}
	create(t, mw, func() {
		mw.Status.Conditions = readyCondition(metav1.ConditionFalse, "ObjectsFailed", "1 of 2 objects failed")
		mw.Status.Applied, mw.Status.Failed, mw.Status.Mode = 1, 1, "ServerSideApply"
		mw.Status.Inventory = []v1alpha1.InventoryEntry{
			{Index: 0, APIVersion: "apps/v1", Kind: "Deployment", Namespace: "payments", Name: "web", Reason: "Conflict", Message: `Deployment payments/web: apply failed with 1 conflict(s): conflict with "kubectl-edit" (Update): .spec.replicas (conflictPolicy Fail)`},
			{Index: 1, APIVersion: "v1", Kind: "Service", Namespace: "payments", Name: "web", Action: "Unchanged"},
		}
	})
	three := int32(3)
	ps := &v1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "kafka", Namespace: "payments", Labels: map[string]string{"team": "payments"}},
		Spec: v1alpha1.PodSetSpec{Replicas: &three, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kafka"}},
			Template: v1alpha1.PodSetTemplate{Metadata: v1alpha1.PodSetTemplateMetadata{Labels: map[string]string{"app": "kafka"}}}}}
	create(t, ps, func() {
		ps.Status.Conditions = readyCondition(metav1.ConditionFalse, "Progressing", "restarting pods for revision 5d8f")
		ps.Status.Replicas, ps.Status.ReadyReplicas, ps.Status.UpdatedReplicas = 3, 2, 1
	})
	fresh := &v1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "payments"},
		Spec: v1alpha1.PodSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "new"}},
			Template: v1alpha1.PodSetTemplate{Metadata: v1alpha1.PodSetTemplateMetadata{Labels: map[string]string{"app": "new"}}}}}
	create(t, fresh, func() {})

	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"status-all.txt", []string{"status", "-A"}},
		{"status-payments.json", []string{"status", "-n", "payments", "-o", "json"}},
		{"status-payments.yaml", []string{"status", "-n", "payments", "-o", "yaml"}},
		{"status-team.txt", []string{"status", "-A", "-l", "team=payments", "--color", "always"}},
	} {
		out, stderr, err := plugin(t, c.args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, stderr)
		}
		golden(t, c.golden, out)
	}

	// kubectl's printers: -o wide, name, jsonpath, go-template.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "-n", "payments", "-o", "name", "-l", "team=payments"}, "fieldpatch.fieldops.dev/pin-replicas\npodset.fieldops.dev/kafka\n"},
		{[]string{"status", "-n", "payments", "-o", "jsonpath={range .items[*]}{.kind}/{.name}={.reason}{\"\\n\"}{end}", "-l", "team=payments"}, "FieldPatch/pin-replicas=Contested\nPodSet/kafka=Progressing\n"},
		{[]string{"status", "-n", "payments", "-o", "go-template={{range .items}}{{.name}} {{.ready}}{{\"\\n\"}}{{end}}", "-l", "team=payments"}, "pin-replicas False\nkafka False\n"},
	} {
		out, stderr, err := plugin(t, c.args...)
		if err != nil || out != c.want {
			t.Errorf("%v: %v %q, want %q (stderr %q)", c.args, err, out, c.want, stderr)
		}
	}
	out, stderr, err := plugin(t, "status", "-n", "payments", "-o", "wide", "-l", "team=payments")
	if err != nil || !strings.Contains(out, "MESSAGE") || !strings.Contains(out, `field manager "hpa" keeps taking back patched fields; repairs are backed off`) {
		t.Errorf("status -o wide: %v\n%s%s", err, out, stderr)
	}
	// Nothing matches: kubectl's note on standard error, success.
	out, stderr, err = plugin(t, "status", "-n", "payments", "-l", "nothing=here")
	if err != nil || out != "" || stderr != "No resources found in payments namespace.\n" {
		t.Errorf("status -l nothing=here: %v stdout %q stderr %q", err, out, stderr)
	}
	out, stderr, err = plugin(t, "status", "-A", "-l", "nothing=here", "-o", "name")
	if err != nil || out != "" || stderr != "No resources found\n" {
		t.Errorf("status -A -l nothing=here -o name: %v stdout %q stderr %q", err, out, stderr)
	}
	out, _, err = plugin(t, "status", "-A", "-l", "nothing=here", "-o", "json")
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Errorf("status -o json with no object: %v %q, want []", err, out)
	}

	createNamespace(t, "empty")
	out, stderr, err = plugin(t, "status", "-n", "empty")
	// ClusterFieldPatches are listed in every namespace's view.
	if err != nil || out == "" {
		t.Errorf("status -n empty: %v %q %q", err, out, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "-o", "table"}, `--output "table": want one of wide, json, yaml`},
		{[]string{"status", "-o", "jsonpath={.items[}"}, `--output "jsonpath={.items[}"`},
		{[]string{"status", "--color", "yes"}, `--color "yes": want auto, always, never`},
		{[]string{"status", "-l", "a=(b"}, `--selector: `},
	} {
		if _, _, err := plugin(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// status -A lists the kinds the apiserver serves when one fieldops CRD is
// missing, with a warning naming the missing kind, instead of no rows.
func TestStatusMissingCRD(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "missing-crd")
	fp := &v1alpha1.FieldPatch{ObjectMeta: metav1.ObjectMeta{Name: "still-listed", Namespace: "missing-crd"},
		Spec: patchSpec(v1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, `{"spec":{}}`)}
	create(t, fp, func() { fp.Status.Conditions = readyCondition(metav1.ConditionTrue, "Applied", "1 field applied") })

	crd := &apiextv1.CustomResourceDefinition{}
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "fieldops.dev_podsets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, crd); err != nil {
		t.Fatal(err)
	}
	// No manager runs here: drop the finalizers of the PodSets other
	// tests made, so that the CRD's deletion completes.
	var pss v1alpha1.PodSetList
	if err := k8s.List(ctx, &pss); err != nil {
		t.Fatal(err)
	}
	for i := range pss.Items {
		if len(pss.Items[i].Finalizers) > 0 {
			if err := k8s.Patch(ctx, &pss.Items[i], client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := k8s.Delete(ctx, crd.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		restored := crd.DeepCopy()
		if err := k8s.Create(ctx, restored); err != nil {
			t.Errorf("restore the PodSet CRD: %v", err)
			return
		}
		if err := envtest.WaitForCRDs(restConfig, []*apiextv1.CustomResourceDefinition{crd}, envtest.CRDInstallOptions{MaxTime: 30 * time.Second, PollInterval: 50 * time.Millisecond}); err != nil {
			t.Errorf("restore the PodSet CRD: %v", err)
		}
	})
	testkit.Eventually(t, "PodSet CRD gone", func() (bool, string) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(crd), &apiextv1.CustomResourceDefinition{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})

	out, stderr, err := plugin(t, "status", "-A")
	if err != nil {
		t.Fatalf("status -A: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "still-listed") {
		t.Errorf("status -A lists no FieldPatch while the PodSet CRD is missing:\n%s", out)
	}
	if want := "Warning: PodSet is not served by the apiserver"; !strings.Contains(stderr, want) {
		t.Errorf("status -A: stderr %q, want %q", stderr, want)
	}
}

func TestExpiresIn(t *testing.T) {
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	for at, want := range map[time.Time]string{
		now.Add(90 * time.Minute): "expires in 90m",
		now.Add(20 * time.Second): "expires in 20s",
		now:                       "expired",
		now.Add(-time.Hour):       "expired",
	} {
		if got := expiresIn(at, now); got != want {
			t.Errorf("expiresIn(%s) = %q, want %q", at.Sub(now), got, want)
		}
	}
}

// Issue 31: status shows a selector patch's counts, its first targets not
// applied, the managers contesting its fields, and (-o json) every target.
func TestStatusSelector(t *testing.T) {
	createNamespace(t, "selectors")
	one := int32(0)
	fp := &v1alpha1.FieldPatch{ObjectMeta: metav1.ObjectMeta{Name: "proxy", Namespace: "selectors"},
		Spec: v1alpha1.FieldPatchSpec{Patch: runtime.RawExtension{Raw: []byte(`{"data":{"proxy":"http://proxy:3128"}}`)},
			TargetSelector: &v1alpha1.TargetSelector{APIVersion: "v1", Kind: "ConfigMap", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"proxy": "yes"}}}}}
	create(t, fp, func() {
		fp.Status.Conditions = readyCondition(metav1.ConditionFalse, "TargetsNotApplied", "1 of 3 matching ConfigMap not applied")
		fp.Status.FieldCount = 2
		fp.Status.Targets = &v1alpha1.TargetsStatus{Matched: 3, Applied: 2, Contested: 1,
			NotApplied: []v1alpha1.TargetProblem{{Namespace: "selectors", Name: "c", Reason: "Contested", Message: `field manager "sidecar-injector" keeps taking back patched fields`}},
			Records: []v1alpha1.TargetRecord{
				{Namespace: "selectors", Name: "a", UID: "u-a", Fields: 1, Ledger: &one},
				{Namespace: "selectors", Name: "b", UID: "u-b", Fields: 1},
				{Namespace: "selectors", Name: "c", UID: "u-c", ContestedBy: "sidecar-injector"},
			},
			Ledgers: []v1alpha1.TargetLedger{{PreviousOwners: []v1alpha1.PreviousOwner{{Manager: "helm", Operation: "Apply", APIVersion: "v1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:proxy":{}}}`)}}}},
		}
	})
	out, stderr, err := plugin(t, "status", "-n", "selectors")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"ConfigMap proxy=yes: 3 matched, 2 applied, 2 fields, 1 contested; not applied: selectors/c (Contested)", "sidecar-injector", "TargetsNotApplied"} {
		if !strings.Contains(out, want) {
			t.Errorf("status: no %q in\n%s", want, out)
		}
	}
	out, stderr, err = plugin(t, "status", "-n", "selectors", "-o", "jsonpath={range .items[0].targets[*]}{.name}={.state}/{.fields}/{.contested};{end}")
	if want := "a=Applied/1/;b=Applied/1/;c=Contested//sidecar-injector;"; err != nil || out != want {
		t.Errorf("status targets: %v %q, want %q (%s)", err, out, want, stderr)
	}
}
