/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package tenancy_test runs fieldops as the default install does
// (--default-service-account=fieldops-tenant, --no-cross-namespace-refs)
// and checks what a ManagedWorkload may hold beyond its namespace.
package tenancy_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/controllers/workload"
	"github.com/fieldops/fieldops/test/testkit"
)

var (
	k8s client.Client
	kit testkit.Kit
)

func TestMain(m *testing.M) {
	os.Exit(testkit.RunSuite(m, testkit.SuiteOptions{Setup: func(o *controllers.Options) {
		o.DefaultServiceAccount, o.NoCrossNamespaceRefs = "fieldops-tenant", true
	}}, func(s *testkit.Suite) { k8s, kit = s.Client, s.Kit }))
}

// tenant makes ns with its fieldops-tenant account, allowed to write
// ConfigMaps there and, when clusterScoped, PriorityClasses.
func tenant(t *testing.T, ns string, clusterScoped bool) {
	t.Helper()
	ctx := context.Background()
	kit.Namespace(t, ns)
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "patch", "delete"}}}
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "fieldops-tenant", Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: ns}, Rules: rules},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "fieldops-tenant", Namespace: ns}}},
	}
	if clusterScoped {
		objs = append(objs,
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-priorityclasses"},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{"scheduling.k8s.io"}, Resources: []string{"priorityclasses"}, Verbs: []string{"get", "create", "patch", "delete"}}}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-priorityclasses"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ns + "-priorityclasses"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "fieldops-tenant", Namespace: ns}}})
	}
	for _, o := range objs {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}

// workloadOf creates the ManagedWorkload app of ns holding docs and waits
// until it is reconciled at its generation; it returns the reason of each
// inventory entry by kind.
func workloadOf(t *testing.T, ns string, docs ...string) map[string]v1alpha1.InventoryEntry {
	t.Helper()
	mw := &v1alpha1.ManagedWorkload{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}}
	for _, d := range docs {
		b, err := yaml.YAMLToJSON([]byte(d))
		if err != nil {
			t.Fatal(err)
		}
		mw.Spec.Resources = append(mw.Spec.Resources, runtime.RawExtension{Raw: b})
	}
	if err := k8s.Create(context.Background(), mw); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kit.DeleteAndWait(t, mw) })
	testkit.Eventually(t, "workload "+ns+"/app reconciled", func() (bool, string) {
		kit.Get(t, mw)
		c := meta.FindStatusCondition(mw.Status.Conditions, "Ready")
		if c == nil || c.ObservedGeneration != mw.Generation || len(mw.Status.Inventory) != len(docs) {
			return false, fmt.Sprintf("%+v", mw.Status.Conditions)
		}
		return c.Reason == workload.ReasonApplied || c.Reason == workload.ReasonObjectsFailed, c.Reason + ": " + c.Message
	})
	out := map[string]v1alpha1.InventoryEntry{}
	for _, e := range mw.Status.Inventory {
		out[e.Kind] = e
	}
	return out
}

// Under --no-cross-namespace-refs a namespaced workload holds a
// cluster-scoped object when its account may write it (RBAC decides, as
// for a Flux Kustomization acting as its account), is refused it with
// reason Forbidden naming the account when it may not, and never holds
// an object of another namespace. Before, every cluster-scoped object was
// refused (ForbiddenObject), whatever the account might do.
func TestClusterScopedObjectsByRBAC(t *testing.T) {
	t.Parallel()
	const cm = "{apiVersion: v1, kind: ConfigMap, metadata: {name: settings}, data: {a: b}}"
	pc := func(name string) string {
		return fmt.Sprintf("{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: %s}, value: 1000}", name)
	}
	t.Run("allowed", func(t *testing.T) {
		t.Parallel()
		tenant(t, "scope-allowed", true)
		inv := workloadOf(t, "scope-allowed", cm, pc("scope-allowed"))
		if e := inv["PriorityClass"]; e.Reason != "" {
			t.Errorf("PriorityClass entry %s: %s, want applied", e.Reason, e.Message)
		}
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: "scope-allowed"}, &schedulingv1.PriorityClass{}); err != nil {
			t.Errorf("the PriorityClass the account may write: %v", err)
		}
	})
	t.Run("denied by RBAC", func(t *testing.T) {
		t.Parallel()
		tenant(t, "scope-denied", false)
		inv := workloadOf(t, "scope-denied", cm, pc("scope-denied"))
		e := inv["PriorityClass"]
		if e.Reason != workload.ReasonForbidden || !strings.Contains(e.Message, "system:serviceaccount:scope-denied:fieldops-tenant") {
			t.Errorf("PriorityClass entry %s: %s, want Forbidden naming the account", e.Reason, e.Message)
		}
		if e := inv["ConfigMap"]; e.Reason != "" {
			t.Errorf("ConfigMap entry %s: %s, want applied", e.Reason, e.Message)
		}
	})
	t.Run("another namespace", func(t *testing.T) {
		t.Parallel()
		tenant(t, "scope-other", true)
		inv := workloadOf(t, "scope-other", "{apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: default}, data: {a: b}}")
		if e := inv["ConfigMap"]; e.Reason != workload.ReasonForbiddenObject {
			t.Errorf("ConfigMap of another namespace: %s: %s, want ForbiddenObject", e.Reason, e.Message)
		}
	})
}
