/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/test/testkit"
)

// tenantNamespace makes a namespace with ServiceAccount sa bound to the
// built-in ClusterRole admin there (a namespace admin) and ServiceAccount
// ci with no rights.
func tenantNamespace(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	ns := namespace(t, name)
	for _, sa := range []string{"sa", "ci"} {
		if err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "sa-admin", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: testkit.TenantAdminRole(t, k8s)},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "sa", Namespace: ns}},
	}
	if err := k8s.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	return ns
}

func tenantPatch(t *testing.T, ns, name, account, target, typ, patch string) *v1alpha1.FieldPatch {
	t.Helper()
	return fieldPatch(t, fmt.Sprintf(`
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: %s, namespace: %s}
spec:
  serviceAccountName: %s
  target: %s
  type: %s
  patch: %s
`, name, ns, account, target, typ, patch))
}

// Escalations 1 and 2 of issue 16: a namespace admin's FieldPatch can
// neither raise its quota nor widen a Role past its own rights, because
// every write impersonates its ServiceAccount.
func TestTenantCannotEscalate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := tenantNamespace(t, "fp-tenant-esc")
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}}}
	if err := k8s.Create(ctx, quota); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "grow", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
	if err := k8s.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	q := tenantPatch(t, ns, "quota", "sa", `{apiVersion: v1, kind: ResourceQuota, name: q}`, "Apply", `{spec: {hard: {pods: "1000"}}}`)
	g := tenantPatch(t, ns, "grow", "sa", `{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, name: grow}`, "Apply",
		`{rules: [{apiGroups: ["*"], resources: ["*"], verbs: [create, delete, get, list, patch, watch]}]}`)
	// Escalation 5: ci (no rights of its own, as with only
	// fieldops-fieldpatch-editor) adds itself to a RoleBinding.
	b := tenantPatch(t, ns, "bind", "ci", `{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, name: sa-admin}`, "JSON",
		`[{op: add, path: /subjects/-, value: {kind: ServiceAccount, name: ci, namespace: `+ns+`}}]`)
	for _, tc := range []struct {
		fp      *v1alpha1.FieldPatch
		account string
	}{{q, "sa"}, {g, "sa"}, {b, "ci"}} {
		waitReason(t, tc.fp, "Forbidden")
		if c := readyCondition(tc.fp); !strings.Contains(c.Message, "system:serviceaccount:"+ns+":"+tc.account) {
			t.Errorf("%s: message %q does not name the account", tc.fp.Name, c.Message)
		}
		hasEvent(t, ns, tc.fp.Name, "Forbidden", "ServiceAccount "+ns+"/"+tc.account)
	}
	var rb rbacv1.RoleBinding
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sa-admin"}, &rb); err != nil || len(rb.Subjects) != 1 {
		t.Fatalf("RoleBinding subjects = %+v (err %v), want only sa", rb.Subjects, err)
	}
	get(t, quota)
	if p := quota.Spec.Hard[corev1.ResourcePods]; p.String() != "2" {
		t.Fatalf("quota pods = %s, want 2", p.String())
	}
	get(t, role)
	if len(role.Rules) != 1 || role.Rules[0].Resources[0] != "configmaps" {
		t.Fatalf("role rules = %+v, want unchanged", role.Rules)
	}
	// Deleting a patch that never wrote succeeds.
	deleteAndWait(t, q)
	deleteAndWait(t, g)
	deleteAndWait(t, b)
}

// A tenant patches what its account may patch: applied, and handed back
// on deletion through the same account.
func TestTenantPatchesWhatItMay(t *testing.T) {
	t.Parallel()
	ns := tenantNamespace(t, "fp-tenant-ok")
	cm := applyAs(t, "base", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"`+ns+`"},"data":{"a":"1"}}`)
	fp := tenantPatch(t, ns, "tune", "sa", `{apiVersion: v1, kind: ConfigMap, name: app}`, "Apply", `{data: {a: "2", x: "3"}}`)
	waitReason(t, fp, "Applied")
	deleteAndWait(t, fp)
	l := live(t, cm)
	if d := stringMap(l, "data"); d["a"] != "2" || d["x"] != "" {
		t.Fatalf("data = %v, want a handed back with its value and x removed", d)
	}
	noFieldopsEntry(t, l)
}

// Escalation 4: no target value reaches status or events, whether the
// account may read the Secret (the apiserver rejects the copied value as a
// label) or not (Forbidden).
func TestSecretValueNeverEchoed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := tenantNamespace(t, "fp-tenant-secret")
	const password = "hunter2/secret value!"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "api-key", Namespace: ns}, StringData: map[string]string{"password": password}}
	if err := k8s.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	leak := `[{op: add, path: /metadata/labels, value: {}}, {op: copy, from: /data/password, path: /metadata/labels/leak}]`
	for _, tc := range []struct{ name, account, reason string }{
		{"as-ci", "ci", "Forbidden"},
		{"as-manager", `""`, "InvalidPatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fp := tenantPatch(t, ns, tc.name, tc.account, `{apiVersion: v1, kind: Secret, name: api-key}`, "JSON", leak)
			eventually(t, "a failure reason", func() (bool, string) {
				get(t, fp)
				c := readyCondition(fp)
				return c.Status == metav1.ConditionFalse && c.Reason != "", c.Reason + ": " + c.Message
			})
			get(t, fp)
			st, _ := json.Marshal(fp.Status)
			for _, v := range []string{password, "aHVudGVyMi9zZWNyZXQgdmFsdWUh"} { // the value and its base64
				if strings.Contains(string(st), v) {
					t.Fatalf("status quotes the Secret's value: %s", st)
				}
				for _, e := range events(t, ns, tc.name) {
					if strings.Contains(e, v) {
						t.Fatalf("event quotes the Secret's value: %s", e)
					}
				}
			}
			if tc.account == "ci" {
				waitReason(t, fp, "Forbidden")
			}
			var s corev1.Secret
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(secret), &s); err != nil {
				t.Fatal(err)
			}
			if _, ok := s.Labels["leak"]; ok {
				t.Fatal("the value was copied into a label")
			}
		})
	}
}

// Escalation 7: fieldops's own CRDs and RBAC are refused as targets.
func TestOwnObjectsAreForbiddenTargets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, target string }{
		{"own-crd", `{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, name: fieldpatches.fieldops.dev}`},
		{"own-rbac", `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, name: fieldops-manager-role}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfp := &v1alpha1.ClusterFieldPatch{}
			cfp.Name = tc.name
			if err := json.Unmarshal([]byte(`{"patch":{"metadata":{"labels":{"x":"y"}}}}`), &cfp.Spec); err != nil {
				t.Fatal(err)
			}
			u := obj(t, "spec: {target: "+tc.target+"}")
			raw, _ := json.Marshal(u.Object["spec"].(map[string]interface{})["target"])
			if err := json.Unmarshal(raw, &cfp.Spec.Target); err != nil {
				t.Fatal(err)
			}
			if err := k8s.Create(context.Background(), cfp); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = k8s.Delete(context.Background(), cfp) })
			waitReason(t, cfp, "ForbiddenTarget")
		})
	}
}
