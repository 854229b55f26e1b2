/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package testkit

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TenantAdminRole creates (once) and names a ClusterRole with the rights
// the built-in "admin" role gives in a namespace for the kinds the tenant
// tests use. The built-in role gets its rules from aggregation, which the
// kube-controller-manager does; the test control plane runs none, so its
// "admin" is empty. Like admin, it may manage Roles and RoleBindings
// (within its own rights: RBAC's escalation check applies) and read, but
// not change, ResourceQuotas.
func TenantAdminRole(t testing.TB, c client.Client) string {
	t.Helper()
	const name = "fieldops-test-tenant-admin"
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets", "services", "serviceaccounts", "pods"}, Verbs: all},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments", "daemonsets", "statefulsets"}, Verbs: all},
			{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings"}, Verbs: all},
			{APIGroups: []string{""}, Resources: []string{"resourcequotas", "limitranges"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	if err := c.Create(context.Background(), role); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
}
