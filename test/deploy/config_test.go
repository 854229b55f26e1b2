/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package deploy

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Every kustomization under config/ renders, and the apiserver accepts
// every object it renders (server-side dry run).
func TestConfigRendersAndIsAccepted(t *testing.T) {
	for _, dir := range []string{
		"config/default",
		"config/policy",
		"config/admission",
		"config/prometheus",
		"config/grafana",
		"config/network-policy",
		"config/samples",
		"test/deploy/testdata/with-plugins",
		"test/deploy/testdata/with-manager-rights",
		"test/deploy/testdata/with-shards",
	} {
		t.Run(dir, func(t *testing.T) {
			objs := render(t, dir)
			install(t, objs)
			dryRun(t, dir, objs, "")
		})
	}
}

// The manager Deployment is what the issue and Kubebuilder's layout ask
// for, and its pod is admitted under the restricted Pod Security Standard
// its Namespace enforces.
func TestManagerDeployment(t *testing.T) {
	objs := render(t, "config/default")
	install(t, objs)
	u := find(objs, "Deployment", "fieldops-controller-manager")
	if u == nil {
		t.Fatal("config/default has no Deployment fieldops-controller-manager")
	}
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
		t.Fatal(err)
	}
	ns := find(objs, "Namespace", "fieldops-system")
	if ns == nil || ns.GetLabels()["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("Namespace fieldops-system does not enforce the restricted Pod Security Standard: %v", ns)
	}
	c := d.Spec.Template.Spec.Containers[0]
	for _, arg := range []string{"--leader-elect", "--metrics-bind-address=:8443", "--health-probe-bind-address=:8081"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("manager args %v lack %s", c.Args, arg)
		}
	}
	if c.LivenessProbe == nil || c.ReadinessProbe == nil {
		t.Error("manager has no liveness or readiness probe")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("manager resources %v lack CPU and memory requests or a memory limit", c.Resources)
	}
	if d.Spec.Template.Spec.ServiceAccountName != "fieldops-controller-manager" {
		t.Errorf("serviceAccountName %q", d.Spec.Template.Spec.ServiceAccountName)
	}

	// A pod made from the template, dry-run created in the namespace:
	// Pod Security admission rejects anything short of restricted.
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "manager-restricted-check", Namespace: "fieldops-system", Labels: d.Spec.Template.Labels},
		Spec:       *d.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.ServiceAccountName = "default"
	if err := k8s.Create(context.Background(), pod, client.DryRunAll); err != nil {
		t.Errorf("the manager's pod is not admitted in fieldops-system: %v", err)
	}
	// Pod Security admission is on: the same pod without its container
	// security context is refused.
	loose := pod.DeepCopy()
	loose.Spec.Containers[0].SecurityContext = nil
	if err := k8s.Create(context.Background(), loose, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "restricted") {
		t.Errorf("a pod without a security context: %v, want a PodSecurity refusal", err)
	}

	// The same pod with the plugins component.
	objs = render(t, "test/deploy/testdata/with-plugins")
	u = find(objs, "Deployment", "fieldops-controller-manager")
	d = &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
		t.Fatal(err)
	}
	pod.Spec = *d.Spec.Template.Spec.DeepCopy()
	pod.Spec.ServiceAccountName = "default"
	if err := k8s.Create(context.Background(), pod, client.DryRunAll); err != nil {
		t.Errorf("the manager's pod with plugins is not admitted in fieldops-system: %v", err)
	}
	if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--metrics-bind-address=:8443") {
		t.Errorf("the plugins component changes the metrics address: %v", d.Spec.Template.Spec.Containers[0].Args)
	}
}

// The RBAC is split as documented: the manager's generated ClusterRole,
// leader election in its namespace, metrics authn/authz, a metrics reader,
// and tenant roles aggregated into the built-in roles.
func TestRBAC(t *testing.T) {
	objs := render(t, "config/default")
	for _, want := range []struct{ kind, name string }{
		{"ClusterRole", "fieldops-manager-role"},
		{"ClusterRoleBinding", "fieldops-manager-rolebinding"},
		{"Role", "fieldops-leader-election-role"},
		{"RoleBinding", "fieldops-leader-election-rolebinding"},
		{"ClusterRole", "fieldops-metrics-auth-role"},
		{"ClusterRole", "fieldops-metrics-reader"},
		{"ClusterRole", "fieldops-fieldpatch-editor"},
		{"ClusterRole", "fieldops-fieldpatch-viewer"},
		{"ClusterRole", "fieldops-podset-editor"},
		{"ClusterRole", "fieldops-podset-viewer"},
		{"ClusterRole", "fieldops-managedworkload-viewer"},
		{"ClusterRole", "fieldops-managedworkload-editor"},
		{"ValidatingAdmissionPolicy", "fieldops-account-impersonation"},
		{"ValidatingAdmissionPolicyBinding", "fieldops-account-impersonation"},
		{"ValidatingAdmissionPolicy", "fieldops-patch-limits"},
		{"ValidatingAdmissionPolicyBinding", "fieldops-patch-limits"},
		{"Service", "fieldops-controller-manager-metrics-service"},
		{"NetworkPolicy", "fieldops-allow-metrics-traffic"},
	} {
		if find(objs, want.kind, want.name) == nil {
			t.Errorf("config/default has no %s %s", want.kind, want.name)
		}
	}
	aggregated := map[string][]string{
		"fieldops-fieldpatch-editor":      {"admin", "edit"},
		"fieldops-managedworkload-editor": {"admin", "edit"},
		"fieldops-fieldpatch-viewer":      {"admin", "edit", "view"},
		"fieldops-podset-editor":          {"admin", "edit"},
		"fieldops-podset-viewer":          {"admin", "edit", "view"},
	}
	for name, to := range aggregated {
		labels := find(objs, "ClusterRole", name).GetLabels()
		for _, role := range []string{"admin", "edit", "view"} {
			got := labels["rbac.authorization.k8s.io/aggregate-to-"+role] == "true"
			if got != slices.Contains(to, role) {
				t.Errorf("%s aggregated to %s: %v, want %v", name, role, got, !got)
			}
		}
	}
	// No tenant may edit ClusterFieldPatches through an aggregated role:
	// one naming no account acts with the manager's rights.
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" || o.GetName() == "fieldops-manager-role" {
			continue
		}
		for _, r := range rules(t, o) {
			if slices.Contains(r.Resources, "clusterfieldpatches") &&
				(slices.Contains(r.Verbs, "create") || slices.Contains(r.Verbs, "update") || slices.Contains(r.Verbs, "patch")) &&
				strings.HasPrefix(o.GetName(), "fieldops-") {
				t.Errorf("%s lets tenants write %v", o.GetName(), r.Resources)
			}
		}
	}
}

// Nothing config/default installs needs a kind newer than Kubernetes
// 1.30: the MutatingAdmissionPolicy (1.36) is in config/admission, which
// an overlay adds.
func TestDefaultNeedsKubernetes130(t *testing.T) {
	newer := map[string]bool{"MutatingAdmissionPolicy": true, "MutatingAdmissionPolicyBinding": true}
	for _, o := range render(t, "config/default") {
		if newer[o.GetKind()] || strings.HasSuffix(o.GetAPIVersion(), "alpha1") || strings.HasSuffix(o.GetAPIVersion(), "beta1") {
			if o.GetKind() != "CustomResourceDefinition" {
				t.Errorf("config/default has %s %s (%s), which Kubernetes 1.30 does not serve", o.GetKind(), o.GetName(), o.GetAPIVersion())
			}
		}
	}
	if find(render(t, "config/admission"), "MutatingAdmissionPolicy", "fieldops-finalizers") == nil {
		t.Error("config/admission has no MutatingAdmissionPolicy fieldops-finalizers")
	}
}
