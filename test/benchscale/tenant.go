/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// tenantAccount is the ServiceAccount each FieldPatch acts as with -tenant:
// the default install's (--default-service-account=fieldops-tenant).
const tenantAccount = "fieldops-tenant"

// grantTenant creates ns's tenantAccount and lets it read, list, watch and
// patch the Deployments of ns (a Role and its RoleBinding), as a
// namespace's admin does for the default install.
func (b *bench) grantTenant(ctx context.Context, ns string) error {
	meta := metav1.ObjectMeta{Namespace: ns, Name: tenantAccount}
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: meta},
		&rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"apps"}, Resources: []string{"deployments"},
			Verbs: []string{"get", "list", "watch", "patch", "update"},
		}}},
		&rbacv1.RoleBinding{ObjectMeta: meta,
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: tenantAccount},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: tenantAccount}},
		},
	} {
		if err := b.c.Create(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// rightsFlag is how the manager's FieldPatches act: as the manager (its
// watches serve their targets), or with -tenant as the default install
// runs them, each as its namespace's tenantAccount (targets read through
// an impersonating client).
func (b *bench) rightsFlag() string {
	if b.o.tenant {
		return "--default-service-account=" + tenantAccount
	}
	return "--manager-rights-namespaces=*"
}
