/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

// chainTarget makes the ConfigMap of a chain test: helm applies
// data.k=helm and data.other=o.
func chainTarget(t *testing.T, ns string) *unstructured.Unstructured {
	t.Helper()
	return applyAs(t, "helm", fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: chain, namespace: %s}, data: {k: "helm", other: "o"}}`, ns))
}

// chainPatch creates FieldPatch name in ns setting data.k of the chain
// ConfigMap to value, acting as account (the manager when empty).
func chainPatch(t *testing.T, ns, name, value, account string) *v1alpha1.FieldPatch {
	t.Helper()
	sa := ""
	if account != "" {
		sa = "\n  serviceAccountName: " + account
	}
	return fieldPatch(t, fmt.Sprintf(`
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: %s, namespace: %s}
spec:%s
  target: {apiVersion: v1, kind: ConfigMap, name: chain}
  patch: {data: {k: %q}}
`, name, ns, sa, value))
}

// wantDataK checks the chain ConfigMap's data.k: its value and its owners
// ("manager/Operation"; none when want is nil), and that no fieldops entry
// is left.
func wantDataK(t *testing.T, cm *unstructured.Unstructured, value string, want []string) {
	t.Helper()
	wantDataKOneOf(t, cm, []string{value}, want)
}

// wantDataKOneOf is wantDataK with data.k any of values.
func wantDataKOneOf(t *testing.T, cm *unstructured.Unstructured, values []string, want []string) {
	t.Helper()
	l := live(t, cm)
	data := stringMap(l, "data")
	ok := false
	for _, v := range values {
		ok = ok || data["k"] == v
	}
	if !ok || data["other"] != "o" {
		t.Errorf("data = %v, want k one of %v and other=o", data, values)
	}
	if got := owners(t, l)[".data.k"]; !reflect.DeepEqual(got, want) {
		t.Errorf(".data.k owners = %v, want %v", got, want)
	}
	noFieldopsEntry(t, l)
}

// hasOwnerVia waits until fp's status lists manager as a previous owner
// through via.
func hasOwnerVia(t *testing.T, fp client.Object, manager, via string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s recorded %s via %s", fp.GetName(), manager, via), func() (bool, string) {
		get(t, fp)
		var seen []string
		for _, p := range fp.(v1alpha1.Patcher).PatchStatus().PreviousOwners {
			if p.Manager == manager && p.Via == via {
				return true, ""
			}
			seen = append(seen, p.Manager+" via "+p.Via)
		}
		return false, fmt.Sprint(seen)
	})
}

// The issue "A deleted FieldPatch stays a field's owner forever": patch a
// takes data.k from helm, patch b takes it from a (a reports Contested) and
// records a as its previous owner, with helm through a. Whichever is
// deleted first, helm owns data.k again at the end, with the value the
// patches left (a hand-back moves ownership, not values: b's, or a's when
// b went first and a repaired its field before its own deletion), helm
// still owns the field no patch touched (data.other), no fieldops entry is
// left, and helm takes its own value back with an apply that needs no
// force. The field never goes to the field manager of a deleted patch
// (an entry nobody would relinquish).
func TestChainBackToPreviousOwner(t *testing.T) {
	t.Parallel()
	for _, first := range []string{"a", "b"} {
		t.Run("delete "+first+" first", func(t *testing.T) {
			ns := namespace(t, "fp-chain-"+first)
			cm := chainTarget(t, ns)
			a := chainPatch(t, ns, "a", "from-a", "")
			waitReason(t, a, "Applied")
			b := chainPatch(t, ns, "b", "from-b", "")
			waitReason(t, b, "Applied")
			waitReason(t, a, "Contested")
			hasOwnerVia(t, b, "helm", "fieldops-fieldpatch/"+ns+"/a")
			values := []string{"from-b"}
			if first == "a" {
				deleteAndWait(t, a)
				deleteAndWait(t, b)
			} else {
				deleteAndWait(t, b)
				deleteAndWait(t, a)
				values = append(values, "from-a")
			}
			wantDataKOneOf(t, cm, values, []string{"helm/Apply"})
			if got := owners(t, live(t, cm))[".data.other"]; !reflect.DeepEqual(got, []string{"helm/Apply"}) {
				t.Errorf(".data.other owners = %v, want helm's", got)
			}
			again := obj(t, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: chain, namespace: %s}, data: {k: "helm", other: "o"}}`, ns))
			if err := k8s.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(again), client.FieldOwner("helm")); err != nil {
				t.Fatalf("helm's apply without force: %v", err)
			}
		})
	}
}

// A ClusterFieldPatch in the chain: b takes data.k from the
// ClusterFieldPatch a, which took it from helm; a goes first, and b's
// deletion hands data.k to helm.
func TestChainThroughClusterFieldPatch(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "fp-chain-cluster")
	cm := chainTarget(t, ns)
	a := &v1alpha1.ClusterFieldPatch{}
	if err := yaml.UnmarshalStrict([]byte(fmt.Sprintf(`
apiVersion: fieldops.dev/v1alpha1
kind: ClusterFieldPatch
metadata: {name: %s-a}
spec:
  target: {apiVersion: v1, kind: ConfigMap, namespace: %s, name: chain}
  patch: {data: {k: from-a}}
`, ns, ns)), a); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), a) })
	waitReason(t, a, "Applied")
	b := chainPatch(t, ns, "b", "from-b", "")
	waitReason(t, b, "Applied")
	hasOwnerVia(t, b, "helm", "fieldops-clusterfieldpatch/"+ns+"-a")
	deleteAndWait(t, a)
	deleteAndWait(t, b)
	wantDataK(t, cm, "from-b", []string{"helm/Apply"})
}

// A previous owner that removed the field while the chain held it gets
// nothing back: helm removes data.k (a JSON patch) after a is gone, b puts
// it back (a field b now adds), and b's deletion removes it.
func TestChainOwnerThatRemovedTheFieldGetsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "fp-chain-removed")
	cm := chainTarget(t, ns)
	a := chainPatch(t, ns, "a", "from-a", "")
	waitReason(t, a, "Applied")
	b := chainPatch(t, ns, "b", "from-b", "")
	waitReason(t, b, "Applied")
	hasOwnerVia(t, b, "helm", "fieldops-fieldpatch/"+ns+"/a")
	deleteAndWait(t, a)
	if err := k8s.Patch(ctx, live(t, cm), client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/data/k"}]`)), client.FieldOwner("helm")); err != nil {
		t.Fatal(err)
	}
	hasEvent(t, ns, "b", "DriftRepaired", "another actor removed")
	eventually(t, "b's record without helm", func() (bool, string) {
		get(t, b)
		return len(b.Status.PreviousOwners) == 0, fmt.Sprint(b.Status.PreviousOwners)
	})
	deleteAndWait(t, b)
	l := live(t, cm)
	if data := stringMap(l, "data"); data["k"] != "" || data["other"] != "o" {
		t.Fatalf("data = %v, want k removed (helm removed it) and other=o", data)
	}
	noFieldopsEntry(t, l)
}

// A tenant patch whose account may not read the FieldPatch it takes a
// field from inherits no record: it says so (a Forbidden event), and when
// that patch goes first, the field stays without an owner at the tenant
// patch's deletion, as before there were chains.
func TestChainUnreadableByTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "fp-chain-tenant")
	// cm-only may read and patch ConfigMaps, and nothing else.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "cm-only", Namespace: ns}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm-only", Namespace: ns}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "patch", "update"},
	}}}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "cm-only", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "cm-only"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "cm-only", Namespace: ns}},
	}
	for _, o := range []client.Object{sa, role, rb} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cm := chainTarget(t, ns)
	a := chainPatch(t, ns, "a", "from-a", "")
	waitReason(t, a, "Applied")
	b := chainPatch(t, ns, "b", "from-b", "cm-only")
	waitReason(t, b, "Applied")
	hasEvent(t, ns, "b", "Forbidden", "cannot read the previous owners recorded by FieldPatch "+ns+"/a")
	get(t, b)
	for _, p := range b.Status.PreviousOwners {
		if p.Via != "" {
			t.Errorf("b inherited %s via %s without the right to read a", p.Manager, p.Via)
		}
	}
	deleteAndWait(t, a)
	deleteAndWait(t, b)
	wantDataK(t, cm, "from-b", nil)
}
