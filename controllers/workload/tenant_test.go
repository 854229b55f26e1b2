/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/workload"
	"github.com/fieldops/fieldops/test/testkit"
)

// Escalation 3 of issue 16: a namespace admin's workload creates what its
// account may create and is refused the rest, per object, with a reason
// naming the account; it never binds itself to a ClusterRole.
func TestTenantWorkloadStaysInItsRights(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := kit.Namespace(t, "tenant")
	if err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "sa-admin", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: testkit.TenantAdminRole(t, k8s)},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "sa", Namespace: ns}},
	}); err != nil {
		t.Fatal(err)
	}
	crb := "tenant-takeover-" + ns
	mw := &v1alpha1.ManagedWorkload{}
	mw.Name, mw.Namespace = "app", ns
	mw.Spec.ServiceAccountName = "sa"
	mw.Spec.Resources = resources(t,
		"{apiVersion: v1, kind: ConfigMap, metadata: {name: settings}, data: {a: b}}",
		"{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding, metadata: {name: "+crb+"}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}, subjects: [{kind: ServiceAccount, name: sa, namespace: "+ns+"}]}",
	)
	if err := k8s.Create(ctx, mw); err != nil {
		t.Fatal(err)
	}
	waitReason(t, mw, workload.ReasonObjectsFailed)
	var forbidden, applied bool
	for _, e := range mw.Status.Inventory {
		switch e.Kind {
		case "ClusterRoleBinding":
			forbidden = e.Reason == workload.ReasonForbidden && strings.Contains(e.Message, "system:serviceaccount:"+ns+":sa")
		case "ConfigMap":
			applied = e.Reason == ""
		}
	}
	if !forbidden || !applied {
		t.Fatalf("inventory = %+v; want the ConfigMap applied and the ClusterRoleBinding Forbidden naming the account", mw.Status.Inventory)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Name: crb}, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
		t.Fatalf("ClusterRoleBinding exists (err %v)", err)
	}
	kit.DeleteAndWait(t, mw)
}
