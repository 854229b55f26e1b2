/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/internal/bundle"
	"github.com/fieldops/fieldops/internal/tenancy"
)

// installKinds are the kinds a cluster's admission and authorization are
// made of, at the version the test lists them.
var installKinds = map[schema.GroupKind]string{
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        "v1",
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: "v1",
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          "v1",
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   "v1",
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   "v1",
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     "v1",
	{Group: rbacv1.GroupName, Kind: "ClusterRole"}:                                    "v1",
	{Group: rbacv1.GroupName, Kind: "ClusterRoleBinding"}:                             "v1",
	{Group: rbacv1.GroupName, Kind: "Role"}:                                           "v1",
	{Group: rbacv1.GroupName, Kind: "RoleBinding"}:                                    "v1",
	{Kind: "ServiceAccount"}: "v1",
}

func installKey(o client.Object, kind string) string {
	return kind + " " + objectName(o)
}

// checkInstalled: the local cluster's admission and RBAC objects are
// config/default's (with config/admission, its documented option for
// Kubernetes 1.36+), rendered here with kustomize's Go API as `kubectl
// apply -k` renders them, and the onboarding of namespace default. Every
// admission object of the cluster counts; of RBAC, those named fieldops*
// (the cluster's own bootstrap roles and accounts, and the samples',
// are not the installation's).
func checkInstalled(t *testing.T, c client.Client, root string) {
	t.Helper()
	want := map[string]bool{
		"ServiceAccount default/" + tenancy.DefaultServiceAccount:        true,
		"RoleBinding default/" + tenancy.DefaultServiceAccount + "-edit": true,
	}
	for _, dir := range []string{"config/default", "config/admission"} {
		objs, err := bundle.Render(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			gk := o.GroupVersionKind().GroupKind()
			if _, ok := installKinds[gk]; ok {
				want[installKey(o, gk.Kind)] = true
			} else if gk.Group == "admissionregistration.k8s.io" || gk.Group == rbacv1.GroupName {
				t.Errorf("%s has a %s, which this test does not list", dir, gk)
			}
		}
	}
	got := map[string]bool{}
	for gk, version := range installKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gk.WithVersion(version).GroupVersion().WithKind(gk.Kind + "List"))
		if err := c.List(context.Background(), list); err != nil {
			t.Fatalf("list %s: %v", gk, err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			k := installKey(o, gk.Kind)
			if gk.Group == "admissionregistration.k8s.io" || strings.HasPrefix(o.GetName(), "fieldops") || want[k] {
				got[k] = true
			}
		}
	}
	for k := range want {
		if !got[k] {
			t.Errorf("the local cluster lacks %s", k)
		}
	}
	for k := range got {
		if !want[k] {
			t.Errorf("the local cluster has %s, which config/default does not install", k)
		}
	}
}

// checkOnboarding: fieldops-local onboarded namespace default, as the
// guide says, and said so; a later start changes nothing there; a first
// FieldPatch there works; one in a namespace not onboarded is Forbidden
// and says how to onboard it; and the account policy is enforced.
func checkOnboarding(t *testing.T, c client.Client, cfg *rest.Config, out string) {
	t.Helper()
	ctx := context.Background()
	if want := "onboarded namespace default: ServiceAccount fieldops-tenant bound to ClusterRole edit"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	rb := &rbacv1.RoleBinding{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "fieldops-tenant-edit"}, rb); err != nil {
		t.Fatal(err)
	}
	if rb.RoleRef.Name != "edit" || len(rb.Subjects) != 1 || rb.Subjects[0].Name != "fieldops-tenant" {
		t.Errorf("RoleBinding fieldops-tenant-edit binds %v to %s", rb.Subjects, rb.RoleRef.Name)
	}
	msg, err := onboardDefault(ctx, c, tenancy.Options{DefaultServiceAccount: tenancy.DefaultServiceAccount})
	if err != nil || !strings.Contains(msg, "onboarded already") {
		t.Errorf("onboarding again: %q, %v; want onboarded already", msg, err)
	}
	again := &rbacv1.RoleBinding{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(rb), again); err != nil || again.ResourceVersion != rb.ResourceVersion {
		t.Errorf("onboarding again wrote the RoleBinding (resourceVersion %s, was %s): %v", again.ResourceVersion, rb.ResourceVersion, err)
	}

	const value = "local-value-42"
	first := fieldPatch(t, c, "default", value)
	ready := waitReady(t, c, first, func(c *metav1.Condition) bool { return c.Status == metav1.ConditionTrue })
	t.Logf("first FieldPatch in default: %s: %s", ready.Reason, ready.Message)

	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "not-onboarded"}}); err != nil {
		t.Fatal(err)
	}
	lone := fieldPatch(t, c, "not-onboarded", value)
	forbidden := waitReady(t, c, lone, func(c *metav1.Condition) bool { return c.Reason == "Forbidden" })
	for _, want := range []string{"acting as ServiceAccount not-onboarded/fieldops-tenant", "onboard namespace not-onboarded: " + tenancy.OnboardingGuide} {
		if !strings.Contains(forbidden.Message, want) {
			t.Errorf("Forbidden message %q lacks %q", forbidden.Message, want)
		}
	}
	if strings.Contains(forbidden.Message, value) {
		t.Errorf("Forbidden message %q holds the patch's value", forbidden.Message)
	}
	checkAccountPolicy(t, c, cfg)
}

// fieldPatch creates a ConfigMap in ns and a FieldPatch naming no
// account that sets one of its keys to value.
func fieldPatch(t *testing.T, c client.Client, ns, value string) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "first", Namespace: ns}, Data: map[string]string{"kept": "yes"}}); err != nil {
		t.Fatal(err)
	}
	fp := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "fieldops.dev/v1alpha1", "kind": "FieldPatch",
		"metadata": map[string]interface{}{"name": "first", "namespace": ns},
		"spec": map[string]interface{}{
			"target": map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "name": "first"},
			"patch":  map[string]interface{}{"data": map[string]interface{}{"greeting": value}},
		},
	}}
	if err := c.Create(ctx, fp); err != nil {
		t.Fatal(err)
	}
	return fp
}

// waitReady waits until o's Ready condition, of its current generation,
// satisfies ok, and returns it.
func waitReady(t *testing.T, c client.Client, o *unstructured.Unstructured, ok func(*metav1.Condition) bool) *metav1.Condition {
	t.Helper()
	var ready *metav1.Condition
	poll(t, fmt.Sprintf("%s %s/%s Ready", o.GetKind(), o.GetNamespace(), o.GetName()), func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			return false, err
		}
		var st struct {
			Conditions []metav1.Condition `json:"conditions"`
		}
		m, _, _ := unstructured.NestedMap(o.Object, "status")
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st); err != nil {
			return false, err
		}
		ready = meta.FindStatusCondition(st.Conditions, "Ready")
		return ready != nil && ready.ObservedGeneration == o.GetGeneration() && ok(ready), nil
	})
	return ready
}

// checkAccountPolicy: a holder of fieldops-fieldpatch-editor alone may
// not create a FieldPatch acting as an account it may not impersonate
// (config/policy's account policy, which the local cluster lacked).
func checkAccountPolicy(t *testing.T, c client.Client, cfg *rest.Config) {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ci-fieldpatch-editor", Namespace: "default"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "fieldops-fieldpatch-editor"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "ci"}},
	}); err != nil {
		t.Fatal(err)
	}
	ciCfg := rest.CopyConfig(cfg)
	ciCfg.Impersonate = rest.ImpersonationConfig{UserName: "ci"}
	ci, err := client.New(ciCfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	poll(t, "the account policy refusing ci's FieldPatch", func(ctx context.Context) (bool, error) {
		fp := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "fieldops.dev/v1alpha1", "kind": "FieldPatch",
			"metadata": map[string]interface{}{"name": "ci", "namespace": "default"},
			"spec": map[string]interface{}{
				"target": map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "name": "first"},
				"patch":  map[string]interface{}{"data": map[string]interface{}{"ci": "yes"}},
			},
		}}
		err := ci.Create(ctx, fp, client.DryRunAll)
		if err == nil {
			return false, fmt.Errorf("ci created a FieldPatch acting as default/fieldops-tenant")
		}
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "may not impersonate"), nil
	})
}
