/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package accountwebhook

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Which account a request must be allowed to impersonate, as the policy
// fieldops-account-impersonation decides it, for config/default's
// manager (fieldops-tenant) and config/manager-rights' (every namespace
// acting with the manager's rights). An object naming none is checked as
// every account of its namespace (Name empty), whatever the default
// account's name: the policy does not know it.
func TestAccountToCheck(t *testing.T) {
	tenant := Options{DefaultServiceAccount: "fieldops-tenant"}
	rights := Options{DefaultServiceAccount: "fieldops-tenant", ManagerRightsNamespaces: []string{"*"}}
	narrow := Options{DefaultServiceAccount: "fieldops-tenant", ManagerRightsNamespaces: []string{"kube-system"}}
	fp := func(spec string) string {
		return `{"apiVersion":"fieldops.dev/v1alpha1","kind":"FieldPatch","metadata":{"name":"p","namespace":"team"},"spec":` + spec + `}`
	}
	cfp := func(spec string) string {
		return `{"apiVersion":"fieldops.dev/v1alpha1","kind":"ClusterFieldPatch","metadata":{"name":"p"},"spec":` + spec + `}`
	}
	mw := `{"apiVersion":"fieldops.dev/v1alpha1","kind":"ManagedWorkload","metadata":{"name":"w","namespace":"team"},"spec":{"serviceAccountName":"ops","resources":[]}}`
	const target = `"target":{"apiVersion":"v1","kind":"ConfigMap","name":"c"},"patch":{"data":{"a":"1"}}`
	for _, tc := range []struct {
		name      string
		op        admissionv1.Operation
		kind      string
		sub       string
		obj, old  string
		opts      Options
		want      Account
		wantCheck bool
		err       bool
	}{
		{name: "create naming none acts as the default account: every account checked", op: admissionv1.Create, kind: "FieldPatch", obj: fp(`{` + target + `}`), opts: tenant, want: Account{"team", ""}, wantCheck: true},
		{name: "another default account: the same check", op: admissionv1.Create, kind: "FieldPatch", obj: fp(`{` + target + `}`), opts: Options{DefaultServiceAccount: "robot"}, want: Account{"team", ""}, wantCheck: true},
		{name: "no default account: naming none is not checked", op: admissionv1.Create, kind: "FieldPatch", obj: fp(`{` + target + `}`), opts: Options{}},
		{name: "create naming an account", op: admissionv1.Create, kind: "FieldPatch", obj: fp(`{"serviceAccountName":"ops",` + target + `}`), opts: tenant, want: Account{"team", "ops"}, wantCheck: true},
		{name: "manager rights everywhere: naming none is not checked", op: admissionv1.Create, kind: "FieldPatch", obj: fp(`{` + target + `}`), opts: rights},
		{name: "manager rights everywhere: naming one is", op: admissionv1.Create, kind: "FieldPatch", obj: fp(`{"serviceAccountName":"ops",` + target + `}`), opts: rights, want: Account{"team", "ops"}, wantCheck: true},
		{name: "manager rights in a list: the default account still checked", op: admissionv1.Create, kind: "FieldPatch", obj: fp(`{` + target + `}`), opts: narrow, want: Account{"team", ""}, wantCheck: true},
		{name: "ManagedWorkload", op: admissionv1.Create, kind: "ManagedWorkload", obj: mw, opts: tenant, want: Account{"team", "ops"}, wantCheck: true},
		{name: "ClusterFieldPatch naming none", op: admissionv1.Create, kind: "ClusterFieldPatch", obj: cfp(`{` + target + `}`), opts: tenant},
		{name: "ClusterFieldPatch naming one", op: admissionv1.Create, kind: "ClusterFieldPatch", obj: cfp(`{"serviceAccountName":"ops","serviceAccountNamespace":"team",` + target + `}`), opts: tenant, want: Account{"team", "ops"}, wantCheck: true},
		{name: "ClusterFieldPatch naming no namespace: every namespace", op: admissionv1.Create, kind: "ClusterFieldPatch", obj: cfp(`{"serviceAccountName":"ops",` + target + `}`), opts: tenant, want: Account{"", "ops"}, wantCheck: true},
		{name: "update keeping spec (a finalizer, a label)", op: admissionv1.Update, kind: "FieldPatch", obj: fp(`{"serviceAccountName":"ops",` + target + `}`), old: fp(`{` + target + `,"serviceAccountName":"ops"}`), opts: tenant},
		{name: "update changing the account", op: admissionv1.Update, kind: "FieldPatch", obj: fp(`{"serviceAccountName":"ops",` + target + `}`), old: fp(`{` + target + `}`), opts: tenant, want: Account{"team", "ops"}, wantCheck: true},
		{name: "update changing spec but not the account", op: admissionv1.Update, kind: "FieldPatch", obj: fp(`{"suspend":true,` + target + `}`), old: fp(`{` + target + `}`), opts: tenant, want: Account{"team", ""}, wantCheck: true},
		{name: "status", op: admissionv1.Update, kind: "FieldPatch", sub: "status", obj: fp(`{"serviceAccountName":"ops",` + target + `}`), old: fp(`{` + target + `}`), opts: tenant},
		{name: "delete", op: admissionv1.Delete, kind: "FieldPatch", old: fp(`{` + target + `}`), opts: tenant},
		{name: "PodSet", op: admissionv1.Create, kind: "PodSet", obj: `{"kind":"PodSet","metadata":{"namespace":"team"},"spec":{}}`, opts: tenant},
		{name: "not JSON", op: admissionv1.Create, kind: "FieldPatch", obj: `{`, opts: tenant, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Kind: metav1.GroupVersionKind{Group: Group, Version: "v1alpha1", Kind: tc.kind}, Operation: tc.op, SubResource: tc.sub, Namespace: "team",
				Object: runtime.RawExtension{Raw: []byte(tc.obj)}, OldObject: runtime.RawExtension{Raw: []byte(tc.old)},
			}}
			got, _, check, err := AccountToCheck(req, tc.opts)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want one: %v", err, tc.err)
			}
			if got != tc.want || check != tc.wantCheck {
				t.Errorf("AccountToCheck = %v %v, want %v %v", got, check, tc.want, tc.wantCheck)
			}
		})
	}
}

func TestDeniedMessage(t *testing.T) {
	for _, tc := range []struct {
		account Account
		want    string
	}{
		{Account{"team", "ops"}, "this FieldPatch acts as ServiceAccount team/ops, and you may not impersonate it (RBAC: impersonate on serviceaccounts)"},
		{Account{"team", ""}, "this FieldPatch names no serviceAccountName and acts as the default ServiceAccount of namespace team (--default-service-account), and you may not impersonate every ServiceAccount of team: name one you may impersonate (RBAC: impersonate on serviceaccounts)"},
	} {
		if got := DeniedMessage("FieldPatch", tc.account); got != tc.want {
			t.Errorf("DeniedMessage(%v) = %q, want %q", tc.account, got, tc.want)
		}
	}
}
