/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/names"
	"github.com/fieldops/fieldops/internal/tenancy"
	"github.com/fieldops/fieldops/test/testkit"
)

// The plan and the controller agree where they once disagreed (issue
// 38): each test plans a patch, creates it, and checks that the
// controller did what the plan said.

// createWaitReason creates the patch of y and waits until its Ready
// condition has reason for its generation; the test deletes it.
func createWaitReason(t *testing.T, y, reason string) *v1alpha1.FieldPatch {
	t.Helper()
	fp := &v1alpha1.FieldPatch{}
	if err := yaml.UnmarshalStrict([]byte(y), fp); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(context.Background(), fp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testkit.Kit{Client: k8s}.DeleteAndWait(t, fp) })
	testkit.Eventually(t, "FieldPatch "+fp.GetName()+" reason "+reason, func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fp), fp); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(fp.Status.Conditions, "Ready")
		if c == nil {
			return false, "no Ready condition"
		}
		return c.Reason == reason && c.ObservedGeneration == fp.GetGeneration(), c.Reason + ": " + c.Message
	})
	return fp
}

// A patch that names an account acts as it: the plan impersonates it
// (the caller may: kubeconfig's user is a cluster administrator), so a
// target the account may read but not write plans as Forbidden, the
// reason the controller then waits with. Main planned it with the
// caller's rights, as Configured.
func testPlanActsAsTheAccount(t *testing.T) {
	ns := "plan-account"
	d := deploymentAs(t, ns)
	readerAccount(t, ns, "reader")
	y := `apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: plan-account}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  serviceAccountName: reader
  patch: {spec: {replicas: 3}}
`
	plans := planJSON(t, planFile(t, y))
	if len(plans) != 1 {
		t.Fatalf("plans: %+v", plans)
	}
	p := plans[0]
	if p.Action != actionForbidden || p.Reason != "Forbidden" || p.ActingAs != "ServiceAccount plan-account/reader" {
		t.Fatalf("plan as the account: action %q reason %q acting as %q (%s), want Forbidden as ServiceAccount plan-account/reader", p.Action, p.Reason, p.ActingAs, p.Message)
	}
	if !strings.Contains(p.Message, "acting as ServiceAccount plan-account/reader") || !strings.Contains(p.Message, tenancy.OnboardingGuide) {
		t.Errorf("message %q does not name the account and how to onboard the namespace, as the controller's does", p.Message)
	}
	fp := createWaitReason(t, y, p.Reason)
	if c := meta.FindStatusCondition(fp.Status.Conditions, "Ready"); c.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %s, want False", c.Status)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(d.GroupVersionKind())
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(d), live); err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(live.Object, "spec", "replicas"); r != 2 {
		t.Errorf("replicas = %d: the account wrote what it may not", r)
	}

	// A caller who may not impersonate the account is planned with their
	// own rights, and told so.
	out, errOut, err := pluginIn(t, "", "plan", "-f", planFile(t, y), "-o", "json", "--kubeconfig", limitedKubeconfig(t, ns))
	if err != nil && !strings.Contains(err.Error(), "would fail") {
		t.Fatalf("plan as a user who may not impersonate: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, "which you may not impersonate") || strings.Contains(out, `"actingAs"`) {
		t.Errorf("plan by a user who may not impersonate the account does not say it used the user's rights:\n%s", out)
	}
}

// readerAccount creates the ServiceAccount name in ns, allowed to read
// Deployments there and nothing else.
func readerAccount(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}},
	} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}

// limitedKubeconfig is a kubeconfig of a user who may read and create
// FieldPatches and read Deployments in ns, and not impersonate.
func limitedKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	const user = "plan-limited"
	for _, o := range []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"fieldpatches"}, Verbs: []string{"get", "list", "create"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: user},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: user}}},
	} {
		if err := k8s.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	path := testkit.Kubeconfig(t, controlPlane, envtest.User{Name: user})
	return path
}

// A FieldPatch that takes a field from a selector patch inherits that
// patch's record of the target (whom it took the field from), in the
// plan as in the controller. Main's plan read a selector patch's status
// as a single-target one and showed no chain.
func testPlanSelectorChain(t *testing.T) {
	ns := "plan-selector-chain"
	createNamespace(t, ns)
	target := applyAs(t, "helm", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: %s, labels: {proxy: 'yes'}}, data: {owned: helm}}", ns))
	sel := &v1alpha1.FieldPatch{}
	createPatcherReady(t, fmt.Sprintf(`apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: by-label, namespace: %s}
spec:
  targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {proxy: "yes"}}}
  patch: {data: {owned: selector}}
`, ns), sel)
	y := fmt.Sprintf(`apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: one, namespace: %s}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: c}
  patch: {data: {owned: one}}
`, ns)
	plans := planJSON(t, planFile(t, y))
	if len(plans) != 1 || plans[0].Action != "Configured" {
		t.Fatalf("plan: %+v", plans)
	}
	bySelector := names.FieldPatch(false, ns, "by-label")
	var got []string
	for _, o := range plans[0].Patch.PreviousOwners {
		got = append(got, fmt.Sprintf("%s via %q: %s", o.Manager, o.Via, strings.Join(leaves(t, o), ",")))
	}
	want := []string{bySelector + ` via "": .data.owned`, `helm via "` + bySelector + `": .data.owned`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("planned previous owners:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	comparePlan(t, plans[0], createAndWaitReady(t, y), target)
}

// A patch in v1 of a kind whose conversion webhook renames fields (v1's
// spec.params is v2's spec.settings) would force a field helm applied in
// v2: the controller refuses the take (reason Conflict, naming the
// owner's version), and so does the plan. Main's plan, whose dry run
// skipped the controller's check, said Configured.
func testPlanRefusesForceAcrossVersions(t *testing.T) {
	ctx := context.Background()
	ns := "plan-convert"
	createNamespace(t, ns)
	const group = "convert.plan.fieldops.dev"
	crd := testkit.RenamingCRD(t, group, "Dial", map[string]apiextensionsv1.JSONSchemaProps{"note": {Type: "string"}})
	if err := k8s.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), crd) })
	dial := func(version, name, spec string) string {
		return `{"apiVersion": "` + group + `/` + version + `", "kind": "Dial", "metadata": {"name": "` + name + `", "namespace": "` + ns + `"}, "spec": ` + spec + `}`
	}
	for _, v := range []string{"v1", "v2"} {
		testkit.Eventually(t, "Dial served in "+v, func() (bool, string) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(dial(v, "probe", `{}`)), &u.Object); err != nil {
				t.Fatal(err)
			}
			err := k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("probe"), client.ForceOwnership)
			return err == nil, fmt.Sprint(err)
		})
	}
	applyAs(t, "helm", dial("v2", "d", `{"settings": {"k": "2", "j": "1"}}`))
	y := fmt.Sprintf(`apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: d, namespace: %s}
spec:
  target: {apiVersion: %s/v1, kind: Dial, name: d}
  conflictPolicy: Force
  patch: {spec: {params: {k: "3"}, note: "n"}}
`, ns, group)
	// The kind may be missing from the apiserver's OpenAPI for a moment
	// after its CRD (the plan then says UnknownKind).
	var p Plan
	testkit.Eventually(t, "plan refuses the take", func() (bool, string) {
		plans := planJSON(t, planFile(t, y))
		p = plans[0]
		return p.Reason == "Conflict", p.Action + " " + p.Reason + ": " + p.Message
	})
	if p.Action != "Conflicted" || !strings.Contains(p.Message, "will not force .spec.settings.k") || !strings.Contains(p.Message, group+"/v2") {
		t.Errorf("plan: %s %s: %s", p.Action, p.Reason, p.Message)
	}
	fp := createWaitReason(t, y, p.Reason)
	c := meta.FindStatusCondition(fp.Status.Conditions, "Ready")
	if want := strings.TrimPrefix(p.Message, "the patch would stall (reason Conflict): "); c.Message != want {
		t.Errorf("the controller's message\n%s\nthe plan's\n%s", c.Message, want)
	}
}
