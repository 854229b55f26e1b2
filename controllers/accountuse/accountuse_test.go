/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package accountuse_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/accountuse"
	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/test/testkit"
)

var (
	k8s client.Client
	kit testkit.Kit
)

// TestMain runs the suite on the local cluster with its controller
// manager: namespace deletion is its namespace controller's work.
func TestMain(m *testing.M) {
	os.Exit(testkit.RunSuite(m, testkit.SuiteOptions{ControlPlane: localcp.Options{Cluster: &localcp.ClusterOptions{}}},
		func(s *testkit.Suite) { k8s, kit = s.Client, s.Kit }))
}

// account is a tenant's setup: a ConfigMap helm owns, and the account
// patcher allowed to read and patch it (a Role and its RoleBinding).
func account(t *testing.T, ns string) (sa, role, binding client.Object, target *unstructured.Unstructured) {
	t.Helper()
	kit.Namespace(t, ns)
	target = kit.ApplyAs(t, "helm", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":%q},"data":{"a":"helm"}}`, ns))
	sa = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "patcher", Namespace: ns}}
	role = &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "patcher", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "patch"}}}}
	binding = &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "patcher", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "patcher"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "patcher", Namespace: ns}}}
	for _, o := range []client.Object{sa, role, binding} {
		if err := k8s.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	return sa, role, binding, target
}

// patch creates a FieldPatch acting as patcher that sets data.a, and
// waits until it is Ready.
func patch(t *testing.T, ns string) *v1alpha1.FieldPatch {
	t.Helper()
	fp := &v1alpha1.FieldPatch{}
	createReady(t, fp, fmt.Sprintf(`{apiVersion: fieldops.dev/v1alpha1, kind: FieldPatch, metadata: {name: p, namespace: %s},
  spec: {target: {apiVersion: v1, kind: ConfigMap, name: c}, serviceAccountName: patcher, patch: {data: {a: patched}}}}`, ns))
	return fp
}

// createReady creates the patch obj from y and waits until it is Ready.
func createReady(t *testing.T, obj v1alpha1.Patcher, y string) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(y), obj); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, fmt.Sprintf("%T %s Ready", obj, obj.GetName()), func() (bool, string) {
		kit.Get(t, obj)
		c := meta.FindStatusCondition(obj.PatchStatus().Conditions, "Ready")
		if c == nil {
			return false, "no Ready"
		}
		return c.Status == metav1.ConditionTrue, c.Reason + ": " + c.Message
	})
}

// protected waits until every object carries the in-use finalizer (want)
// or none does.
func protected(t *testing.T, want bool, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		testkit.Eventually(t, fmt.Sprintf("%T %s in-use finalizer %v", o, o.GetName(), want), func() (bool, string) {
			err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), o)
			if apierrors.IsNotFound(err) {
				return !want, "gone"
			}
			if err != nil {
				return false, err.Error()
			}
			return slices.Contains(o.GetFinalizers(), accountuse.Finalizer) == want, fmt.Sprint(o.GetFinalizers())
		})
	}
}

// gone waits until every object is deleted.
func gone(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		testkit.Eventually(t, fmt.Sprintf("%T %s gone", o, o.GetName()), func() (bool, string) {
			err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), o)
			why := fmt.Sprintf("%v; finalizers %v", err, o.GetFinalizers())
			if p, ok := o.(v1alpha1.Patcher); ok {
				why += fmt.Sprintf("; conditions %+v", p.PatchStatus().Conditions)
			}
			return apierrors.IsNotFound(err), why
		})
	}
}

// handedBack checks that data.a is helm's value again, helm's field.
func handedBack(t *testing.T, target *unstructured.Unstructured) {
	t.Helper()
	live := kit.Live(t, target)
	if v, _, _ := unstructured.NestedString(live.Object, "data", "a"); v != "patched" {
		t.Errorf("data.a = %q after the hand-back, want the value the patch left", v)
	}
	owners, err := ownershipcore.Owners(live)
	if err != nil {
		t.Fatal(err)
	}
	if got := owners.ByPath()[".data.a"]; !slices.Equal(got, []string{"helm/Apply"}) {
		t.Errorf("data.a owned by %v after the hand-back, want helm's", got)
	}
}

func del(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := k8s.Delete(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}

// Deleting a FieldPatch together with the account it acts as ends clean
// in any order: the account, its RoleBinding and its Role stay (in-use
// protection) until the patch has handed its fields back with the
// account's rights, then go. Before the protection, deleting the account
// or its rights first left the patch stuck on its finalizer (Forbidden).
func TestDeletionInAnyOrder(t *testing.T) {
	t.Parallel()
	for _, first := range []string{"account", "binding", "role", "patch"} {
		t.Run(first+" first", func(t *testing.T) {
			t.Parallel()
			ns := "inuse-" + first
			sa, role, binding, target := account(t, ns)
			fp := patch(t, ns)
			protected(t, true, sa, role, binding)
			switch first {
			case "account":
				del(t, sa, fp, binding, role)
			case "binding":
				del(t, binding, role, sa, fp)
			case "role":
				del(t, role, fp, sa, binding)
			case "patch":
				del(t, fp)
				protected(t, false, sa, role, binding)
				del(t, sa, binding, role)
			}
			gone(t, fp, sa, role, binding)
			handedBack(t, target)
		})
	}
}

// Deleting the whole namespace (the patch, its account and its target
// with it) ends with the namespace gone: nothing is left stuck on a
// finalizer.
func TestNamespaceDeletion(t *testing.T) {
	t.Parallel()
	ns := "inuse-namespace"
	sa, role, binding, _ := account(t, ns)
	fp := patch(t, ns)
	protected(t, true, sa, role, binding)
	del(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	// The namespace controller deletes the contents, then waits for their
	// finalizers, looking again with a backoff of its own.
	testkit.Within(t, 2*time.Minute, "namespace "+ns+" gone", func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKey{Name: ns}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	gone(t, fp, sa, role, binding)
}

// Objects that no fieldops object acts as are left alone, and the
// protection follows the patch: naming another account moves it.
func TestOnlyAccountsInUse(t *testing.T) {
	t.Parallel()
	ns := "inuse-only"
	sa, role, binding, _ := account(t, ns)
	other := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bystander", Namespace: ns}}
	if err := k8s.Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	fp := patch(t, ns)
	protected(t, true, sa, role, binding)
	protected(t, false, other)
	kit.Get(t, fp)
	fp.Spec.ServiceAccountName = "bystander"
	if err := k8s.Update(context.Background(), fp); err != nil {
		t.Fatal(err)
	}
	protected(t, true, other)
	protected(t, false, sa, role, binding)
}

// A ClusterFieldPatch acts where its targets are: the RoleBinding (and
// its Role) that grants its account rights in the target's namespace,
// another than the account's own, is held as the account is; one where
// it has no target (here, the account's own namespace) is not. Deleted
// first, with the account, it stays until the patch has handed its
// fields back with the account's rights, then goes. A ClusterRoleBinding
// naming the account is never held, nor a RoleBinding of the manager's
// own namespace (the suite's manager has none: nothing to show), nor one
// naming another account.
func TestClusterFieldPatchBindingsElsewhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const accounts, targets = "inuse-cfp-accounts", "inuse-cfp-targets"
	kit.Namespace(t, accounts)
	kit.Namespace(t, targets)
	target := kit.ApplyAs(t, "helm", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"`+targets+`"},"data":{"a":"helm"}}`)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: accounts}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: targets},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "patch"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: targets},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "robot"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "robot", Namespace: accounts}}}
	bystander := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bystander", Namespace: targets},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "robot"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "bystander", Namespace: accounts}}}
	nothing := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "inuse-cfp-nothing"}}
	// A binding of the account where the patch has no target.
	home := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "robot-home", Namespace: accounts},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: nothing.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "robot", Namespace: accounts}}}
	clusterBinding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "inuse-cfp-robot"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: nothing.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "robot", Namespace: accounts}}}
	for _, o := range []client.Object{sa, role, binding, bystander, nothing, home, clusterBinding} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, o := range []client.Object{clusterBinding, nothing} {
			_ = k8s.Delete(context.Background(), o)
		}
	})
	cfp := &v1alpha1.ClusterFieldPatch{}
	createReady(t, cfp, `{apiVersion: fieldops.dev/v1alpha1, kind: ClusterFieldPatch, metadata: {name: inuse-cfp},
  spec: {target: {apiVersion: v1, kind: ConfigMap, name: c, namespace: `+targets+`},
    serviceAccountName: robot, serviceAccountNamespace: `+accounts+`, patch: {data: {a: patched}}}}`)
	protected(t, true, sa, binding, role)
	protected(t, false, bystander, clusterBinding, home)

	del(t, binding, role, sa)
	for _, o := range []client.Object{binding, role, sa} {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(o), o)
		if err != nil || o.GetDeletionTimestamp() == nil || !slices.Contains(o.GetFinalizers(), accountuse.Finalizer) {
			t.Fatalf("%T %s while the patch acts as the account: %v, finalizers %v; want it marked for deletion and held", o, o.GetName(), err, o.GetFinalizers())
		}
	}
	del(t, cfp)
	gone(t, cfp, binding, role, sa)
	handedBack(t, target)
}

// A shard protects the accounts its own objects use with a finalizer of
// its own, so that shards never remove each other's; the main instance
// (every object, or those naming no shard) uses the plain one.
func TestFinalizerFor(t *testing.T) {
	if got := accountuse.FinalizerFor(""); got != accountuse.Finalizer {
		t.Errorf("no selector: %q", got)
	}
	if got := accountuse.FinalizerFor(v1alpha1.UnshardedSelector); got != accountuse.Finalizer {
		t.Errorf("the main instance beside shards: %q", got)
	}
	a, b := accountuse.FinalizerFor(v1alpha1.ShardLabel+"=a"), accountuse.FinalizerFor(v1alpha1.ShardLabel+"=b")
	if a == b || a == accountuse.Finalizer || len(a) > 63 || !strings.HasPrefix(a, accountuse.Finalizer+"-") {
		t.Errorf("shard finalizers %q and %q: want two distinct fieldops.dev/in-use-<hash> names", a, b)
	}
}

// A namespace being deleted does not wait for a ClusterFieldPatch that
// acts in it: its RoleBinding there naming the patch's account is let go
// (the patch's target there goes with the namespace), while the patch
// and its account stay.
func TestClusterFieldPatchLetsANamespaceGo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const accounts, elsewhere = "inuse-cfpns-accounts", "inuse-cfpns-elsewhere"
	kit.Namespace(t, accounts)
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: elsewhere}}); err != nil {
		t.Fatal(err)
	}
	kit.ApplyAs(t, "helm", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"`+elsewhere+`"},"data":{"a":"helm"}}`)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: accounts}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: elsewhere},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "patch"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: elsewhere},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "robot"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "robot", Namespace: accounts}}}
	for _, o := range []client.Object{sa, role, binding} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cfp := &v1alpha1.ClusterFieldPatch{}
	createReady(t, cfp, `{apiVersion: fieldops.dev/v1alpha1, kind: ClusterFieldPatch, metadata: {name: inuse-cfpns},
  spec: {target: {apiVersion: v1, kind: ConfigMap, name: c, namespace: `+elsewhere+`},
    serviceAccountName: robot, serviceAccountNamespace: `+accounts+`, patch: {data: {a: patched}}}}`)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), cfp) })
	protected(t, true, sa, binding, role)

	del(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: elsewhere}})
	testkit.Within(t, 2*time.Minute, "namespace "+elsewhere+" gone", func() (bool, string) {
		err := k8s.Get(ctx, client.ObjectKey{Name: elsewhere}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	protected(t, true, sa)
	kit.Get(t, cfp)
}
