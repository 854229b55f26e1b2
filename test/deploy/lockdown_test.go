/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package deploy

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/cmd/manager/app"
	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/test/testkit"
)

// The overlays that use the lockdown component, alone and with the
// plugins component in either order.
var lockdownOverlays = []string{
	"test/deploy/testdata/with-lockdown",
	"test/deploy/testdata/with-plugins-and-lockdown",
	"test/deploy/testdata/with-lockdown-and-plugins",
}

const (
	flagDefaultAccount = "--default-service-account=fieldops-tenant"
	flagNoCrossNS      = "--no-cross-namespace-refs"
)

// managerArgs are the manager container's args of a rendered Deployment.
func managerArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	u := find(objs, "Deployment", "fieldops-controller-manager")
	if u == nil {
		t.Fatal("no Deployment fieldops-controller-manager")
	}
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Name != "manager" {
		t.Fatalf("first container is %q, not manager", c.Name)
	}
	return c.Args
}

// The lockdown component renders alone and with the plugins component in
// either order, the apiserver accepts every object, and the manager
// carries both lockdown flags once, besides its own and the plugins'.
func TestLockdownComponent(t *testing.T) {
	// config/default leaves the tenancy flags to their defaults, which
	// are lockdown's (cmd/manager/app: TestTenancyFlags); the component spells
	// them out.
	base := managerArgs(t, render(t, "config/default"))
	for _, f := range []string{flagDefaultAccount, flagNoCrossNS} {
		if slices.Contains(base, f) {
			t.Errorf("config/default already has %s: it is the flag's default, spelled out by the lockdown component", f)
		}
	}
	for _, dir := range lockdownOverlays {
		t.Run(dir, func(t *testing.T) {
			objs := render(t, dir)
			install(t, objs)
			dryRun(t, dir, objs, "")
			args := managerArgs(t, objs)
			want := append(slices.Clone(base), flagDefaultAccount, flagNoCrossNS)
			if strings.Contains(dir, "plugins") {
				want = append(want, "--feature-gates=ExternalPlugins=true", "--plugin-config=/etc/fieldops/plugins.yaml")
			}
			for _, w := range want {
				if n := count(args, w); n != 1 {
					t.Errorf("manager args %v hold %s %d times, want once", args, w, n)
				}
			}
			if len(args) != len(want) {
				t.Errorf("manager args %v, want %v in some order", args, want)
			}
			checkPolicyNamesNoAccount(t, objs, strings.TrimPrefix(flagDefaultAccount, "--default-service-account="))
		})
	}
	checkPolicyNamesNoAccount(t, render(t, "config/default"), app.DefaultServiceAccount)
}

// checkPolicyNamesNoAccount checks that the admission policy of objs does
// not name the manager's default account (account): it cannot know
// --default-service-account, so it judges an object naming no account by
// the right to impersonate every account of its namespace
// (internal/accountwebhook's TestWebhookDecidesAsThePolicy runs it).
func checkPolicyNamesNoAccount(t *testing.T, objs []*unstructured.Unstructured, account string) {
	t.Helper()
	vap := find(objs, "ValidatingAdmissionPolicy", "fieldops-account-impersonation")
	if vap == nil || find(objs, "ValidatingAdmissionPolicyBinding", "fieldops-account-impersonation") == nil {
		t.Fatal("no ValidatingAdmissionPolicy and binding fieldops-account-impersonation")
	}
	spec, _, _ := unstructured.NestedMap(vap.Object, "spec")
	if strings.Contains(fmt.Sprint(spec), account) {
		t.Errorf("the admission policy names the default account %q: %v", account, spec)
	}
}

func count(s []string, v string) (n int) {
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// aggregatedTo reports, for each of admin, edit and view, whether the
// live cluster's role of that name aggregates a ClusterRole with these
// labels (its aggregationRule, as the apiserver's bootstrap policy has it).
func aggregatedTo(t *testing.T, l map[string]string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, role := range []string{"admin", "edit", "view"} {
		cr := &rbacv1.ClusterRole{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: role}, cr); err != nil {
			t.Fatal(err)
		}
		if cr.AggregationRule == nil {
			t.Fatalf("ClusterRole %s has no aggregationRule", role)
		}
		for _, s := range cr.AggregationRule.ClusterRoleSelectors {
			sel, err := metav1.LabelSelectorAsSelector(&s)
			if err != nil {
				t.Fatal(err)
			}
			if sel.Matches(labels.Set(l)) {
				out[role] = true
			}
		}
	}
	return out
}

// The tenant roles of config/default (and of the lockdown component,
// now the same) aggregate the FieldPatch and ManagedWorkload editors to
// admin and edit; with the manager-rights opt-in the FieldPatch editor is
// admin's only and there is no ManagedWorkload editor; no aggregated role
// ever lets tenants write ClusterFieldPatches. Aggregation is judged by
// the live admin, edit and view roles' own selectors.
func TestLockdownTenantRoles(t *testing.T) {
	type want map[string]bool
	secure := map[string]want{
		"fieldops-fieldpatch-editor":      {"admin": true, "edit": true},
		"fieldops-fieldpatch-viewer":      {"admin": true, "edit": true, "view": true},
		"fieldops-managedworkload-editor": {"admin": true, "edit": true},
		"fieldops-managedworkload-viewer": {"admin": true, "edit": true, "view": true},
		"fieldops-podset-editor":          {"admin": true, "edit": true},
	}
	for _, c := range []struct {
		dir   string
		roles map[string]want // nil: the role must not exist
	}{
		{"config/default", secure},
		{"test/deploy/testdata/with-lockdown", secure},
		{"test/deploy/testdata/with-manager-rights", map[string]want{
			"fieldops-fieldpatch-editor":      {"admin": true},
			"fieldops-fieldpatch-viewer":      {"admin": true, "edit": true, "view": true},
			"fieldops-managedworkload-editor": nil,
			"fieldops-managedworkload-viewer": {"admin": true, "edit": true, "view": true},
			"fieldops-podset-editor":          {"admin": true, "edit": true},
		}},
	} {
		t.Run(c.dir, func(t *testing.T) {
			objs := render(t, c.dir)
			for name, w := range c.roles {
				o := find(objs, "ClusterRole", name)
				if w == nil {
					if o != nil {
						t.Errorf("%s renders %s", c.dir, name)
					}
					continue
				}
				if o == nil {
					t.Errorf("%s has no ClusterRole %s", c.dir, name)
					continue
				}
				if got := aggregatedTo(t, o.GetLabels()); !equality.Semantic.DeepEqual(map[string]bool(w), got) {
					t.Errorf("%s: %s is aggregated to %v, want %v", c.dir, name, got, w)
				}
			}
			for _, o := range objs {
				if o.GetKind() != "ClusterRole" || len(aggregatedTo(t, o.GetLabels())) == 0 {
					continue
				}
				for _, r := range rules(t, o) {
					if slices.Contains(r.Resources, "clusterfieldpatches") && slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) {
						t.Errorf("%s: aggregated %s lets tenants %v ClusterFieldPatches", c.dir, o.GetName(), r.Verbs)
					}
				}
			}
		})
	}

	// Why edit may have FieldPatches and ManagedWorkloads: the
	// built-in edit role (system:aggregate-to-edit, from the apiserver's
	// bootstrap policy) already lets its holders impersonate every
	// ServiceAccount of their namespace, so an object acting as one of
	// them gives them nothing new.
	cr := &rbacv1.ClusterRole{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: "system:aggregate-to-edit"}, cr); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(cr.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, "") && slices.Contains(r.Resources, "serviceaccounts") && slices.Contains(r.Verbs, "impersonate")
	}) {
		t.Errorf("system:aggregate-to-edit does not grant impersonate on serviceaccounts: %v; the lockdown roles' premise is gone", cr.Rules)
	}
}

// The manager's ClusterRole: config/default's rule on every kind has no
// create or delete (ManagedWorkloads create and delete through their
// accounts), lockdown's is the same, and the manager-rights opt-in adds
// create and delete to that rule and changes nothing else.
func TestLockdownManagerRole(t *testing.T) {
	def := rules(t, find(render(t, "config/default"), "ClusterRole", "fieldops-manager-role"))
	lock := rules(t, find(render(t, "test/deploy/testdata/with-lockdown"), "ClusterRole", "fieldops-manager-role"))
	opt := rules(t, find(render(t, "test/deploy/testdata/with-manager-rights"), "ClusterRole", "fieldops-manager-role"))
	if !equality.Semantic.DeepEqual(def, lock) {
		t.Errorf("the lockdown manager role differs from config/default's:\n%+v\n%+v", lock, def)
	}
	if len(def) != len(opt) {
		t.Fatalf("the manager-rights role has %d rules, config/default's %d", len(opt), len(def))
	}
	var wild int
	for i := range def {
		d, o := def[i], opt[i]
		if slices.Equal(d.APIGroups, []string{"*"}) && slices.Equal(d.Resources, []string{"*"}) {
			wild++
			if want := []string{"get", "list", "patch", "watch"}; !slices.Equal(d.Verbs, want) {
				t.Errorf("config/default's rule on every kind: verbs %v, want %v", d.Verbs, want)
			}
			if want := []string{"create", "delete", "get", "list", "patch", "watch"}; !slices.Equal(o.Verbs, want) {
				t.Errorf("manager-rights rule on every kind: verbs %v, want %v", o.Verbs, want)
			}
			o.Verbs = d.Verbs
		}
		if !equality.Semantic.DeepEqual(d, o) {
			t.Errorf("rule %d differs: config/default %+v, manager-rights %+v", i, d, o)
		}
	}
	if wild != 1 {
		t.Errorf("config/default's manager role has %d rules on every kind, want 1", wild)
	}
}

// The manager running as its own ServiceAccount with exactly the RBAC the
// lockdown overlay installs, and with the flags its Deployment carries,
// does what tenants ask within their accounts' rights, and no more:
//   - alice, holding only the built-in edit role in a tenant namespace
//     (whose fieldops-tenant account is bound to edit), creates a
//     FieldPatch and a ManagedWorkload without serviceAccountName: they
//     act as fieldops-tenant; the patch applies and hands back, the
//     workload creates and prunes a ConfigMap that the manager itself may
//     neither create nor delete; a patch of the ResourceQuota is Forbidden
//     naming the account; objects outside the namespace are
//     ForbiddenObject;
//   - objects naming narrower accounts work with just the verbs the docs
//     list (get and patch for a FieldPatch; get, create, patch and delete
//     for a ManagedWorkload), and a RoleBinding the account may not manage
//     is Forbidden on its own entry;
//   - ci, holding only fieldops-fieldpatch-editor, may create no
//     FieldPatch until it may impersonate the account the patch acts as.
func TestLockdownEndToEnd(t *testing.T) {
	ctx := context.Background()
	objs := render(t, "test/deploy/testdata/with-lockdown")
	install(t, objs)
	// The manager's ServiceAccount, every RBAC object and the admission
	// policy, for real.
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			if err := k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner("fieldops-test"), client.ForceOwnership); err != nil {
				t.Fatalf("install %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
	// view is itself aggregated into edit (its label), so it goes first.
	aggregate(t, "view")
	aggregate(t, "edit")

	// The manager, as its ServiceAccount, with the Deployment's options.
	dep := find(objs, "Deployment", "fieldops-controller-manager")
	opts := controllers.Options{OwnNamespace: dep.GetNamespace()}
	for _, a := range managerArgs(t, objs) {
		switch {
		case strings.HasPrefix(a, "--default-service-account="):
			opts.DefaultServiceAccount = strings.TrimPrefix(a, "--default-service-account=")
		case a == flagNoCrossNS:
			opts.NoCrossNamespaceRefs = true
		}
	}
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(dep.Object, d); err != nil {
		t.Fatal(err)
	}
	managerSA := d.Spec.Template.Spec.ServiceAccountName
	startManager(t, serviceAccountConfig(t, dep.GetNamespace(), managerSA), opts)

	// The tenant namespace, as docs/operators-guide.md onboards it, plus
	// two narrower accounts, alice (edit) and ci (FieldPatches only).
	const ns = "lockdown-e2e"
	binding := func(name, role, subject string) string {
		return `{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: ` + name + `, namespace: ` + ns + `},
		  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ` + role + `}, subjects: [` + subject + `]}`
	}
	sa := func(name string) string { return `{kind: ServiceAccount, name: ` + name + `, namespace: ` + ns + `}` }
	for _, y := range []string{
		`{apiVersion: v1, kind: Namespace, metadata: {name: ` + ns + `}}`,
		`{apiVersion: v1, kind: ServiceAccount, metadata: {name: fieldops-tenant, namespace: ` + ns + `}}`,
		binding("fieldops-tenant-edit", "ClusterRole, name: edit", sa("fieldops-tenant")),
		binding("alice-edit", "ClusterRole, name: edit", `{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}`),
		binding("ci-fieldpatches", "ClusterRole, name: fieldops-fieldpatch-editor", `{apiGroup: rbac.authorization.k8s.io, kind: User, name: ci}`),
		`{apiVersion: v1, kind: ServiceAccount, metadata: {name: patcher, namespace: ` + ns + `}}`,
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: configmap-patcher, namespace: ` + ns + `},
		  rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, patch]}]}`,
		binding("patcher", "Role, name: configmap-patcher", sa("patcher")),
		`{apiVersion: v1, kind: ServiceAccount, metadata: {name: deployer, namespace: ` + ns + `}}`,
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: configmap-deployer, namespace: ` + ns + `},
		  rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, create, patch, delete]}]}`,
		binding("deployer", "Role, name: configmap-deployer", sa("deployer")),
		`{apiVersion: v1, kind: ResourceQuota, metadata: {name: pods, namespace: ` + ns + `}, spec: {hard: {pods: "2"}}}`,
		`{apiVersion: v1, kind: ConfigMap, metadata: {name: narrow, namespace: ` + ns + `}, data: {mode: slow}}`,
	} {
		testkit.Kit{Client: k8s}.ApplyAs(t, "platform-admin", y)
	}
	alice, ci := userClient(t, "alice"), userClient(t, "ci")
	create := func(c client.Client, y string, o client.Object) {
		t.Helper()
		if err := yaml.UnmarshalStrict([]byte(y), o); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %s %s: %v", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	create(alice, `{apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: `+ns+`}, data: {mode: slow}}`, &corev1.ConfigMap{})

	// FieldPatches without serviceAccountName act as fieldops-tenant; one
	// naming patcher needs no more than get and patch.
	fp, quota, narrow := &v1alpha1.FieldPatch{}, &v1alpha1.FieldPatch{}, &v1alpha1.FieldPatch{}
	create(alice, `{apiVersion: fieldops.dev/v1alpha1, kind: FieldPatch, metadata: {name: web-fast, namespace: `+ns+`},
	  spec: {target: {apiVersion: v1, kind: ConfigMap, name: web}, patch: {data: {mode: fast}}}}`, fp)
	create(alice, `{apiVersion: fieldops.dev/v1alpha1, kind: FieldPatch, metadata: {name: more-pods, namespace: `+ns+`},
	  spec: {target: {apiVersion: v1, kind: ResourceQuota, name: pods}, patch: {spec: {hard: {pods: "1000"}}}}}`, quota)
	create(alice, `{apiVersion: fieldops.dev/v1alpha1, kind: FieldPatch, metadata: {name: narrow-fast, namespace: `+ns+`},
	  spec: {serviceAccountName: patcher, target: {apiVersion: v1, kind: ConfigMap, name: narrow}, patch: {data: {mode: fast}}}}`, narrow)
	waitPatch(t, fp, "Applied", "")
	waitPatch(t, narrow, "Applied", "")
	// The message names account, verb and resource, as the guide shows.
	waitPatch(t, quota, "Forbidden", `User "system:serviceaccount:`+ns+`:fieldops-tenant" cannot patch resource "resourcequotas"`)
	for _, name := range []string{"web", "narrow"} {
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil || cm.Data["mode"] != "fast" {
			t.Errorf("ConfigMap %s: %v %v, want mode fast", name, cm.Data, err)
		}
	}
	q := &corev1.ResourceQuota{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pods"}, q); err != nil || q.Spec.Hard.Pods().String() != "2" {
		t.Errorf("ResourceQuota pods: %v %v, want 2 pods", q.Spec.Hard, err)
	}

	// ManagedWorkloads create through their accounts what the manager may
	// not create, and are refused what lies outside their namespace.
	for _, verb := range []string{"create", "delete"} {
		if allowed(t, "system:serviceaccount:"+dep.GetNamespace()+":"+managerSA, verb, "configmaps", ns) {
			t.Errorf("the lockdown manager may %s configmaps itself", verb)
		}
	}
	mw, mwNarrow := &v1alpha1.ManagedWorkload{}, &v1alpha1.ManagedWorkload{}
	create(alice, `{apiVersion: fieldops.dev/v1alpha1, kind: ManagedWorkload, metadata: {name: app, namespace: `+ns+`},
	  spec: {resources: [
	    {apiVersion: v1, kind: ConfigMap, metadata: {name: app-settings}, data: {a: "1"}},
	    {apiVersion: v1, kind: ConfigMap, metadata: {name: elsewhere, namespace: default}, data: {a: "1"}},
	    {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: lockdown-e2e-grab}, rules: []}]}}`, mw)
	create(alice, `{apiVersion: fieldops.dev/v1alpha1, kind: ManagedWorkload, metadata: {name: narrow, namespace: `+ns+`},
	  spec: {serviceAccountName: deployer, resources: [
	    {apiVersion: v1, kind: ConfigMap, metadata: {name: narrow-settings}, data: {a: "1"}},
	    {apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: narrow-admin},
	     roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}, subjects: [`+sa("deployer")+`]}]}}`, mwNarrow)
	// Another namespace's object is refused; a cluster-scoped one is the
	// account's RBAC to judge (fieldops-tenant may not: Forbidden).
	waitInventory(t, mw, map[string]string{"app-settings": "", "elsewhere": "ForbiddenObject", "lockdown-e2e-grab": "Forbidden"})
	waitInventory(t, mwNarrow, map[string]string{"narrow-settings": "", "narrow-admin": "Forbidden"})
	for _, e := range mwNarrow.Status.Inventory {
		if want := `User "system:serviceaccount:` + ns + `:deployer" cannot get resource "rolebindings"`; e.Name == "narrow-admin" && !strings.Contains(e.Message, want) {
			t.Errorf("entry %s: message %q lacks %q", e.Name, e.Message, want)
		}
	}
	for _, name := range []string{"app-settings", "narrow-settings"} {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{}); err != nil {
			t.Errorf("ConfigMap %s: %v", name, err)
		}
	}

	// ci holds fieldops-fieldpatch-editor and nothing else: the admission
	// policy refuses its patches (they would act as fieldops-tenant, or as
	// patcher) until it may impersonate that account.
	ciPatch := func(account string) *v1alpha1.FieldPatch {
		fp := &v1alpha1.FieldPatch{}
		y := `{apiVersion: fieldops.dev/v1alpha1, kind: FieldPatch, metadata: {name: ci-` + account + `, namespace: ` + ns + `},
		  spec: {serviceAccountName: ` + account + `, target: {apiVersion: v1, kind: ConfigMap, name: narrow}, patch: {metadata: {labels: {ci: "yes"}}}}}`
		if err := yaml.UnmarshalStrict([]byte(y), fp); err != nil {
			t.Fatal(err)
		}
		return fp
	}
	testkit.Eventually(t, "the admission policy refusing ci", func() (bool, string) {
		err := ci.Create(ctx, ciPatch("patcher"), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "may not impersonate"), fmt.Sprint(err)
	})
	testkit.Kit{Client: k8s}.ApplyAs(t, "platform-admin", `{apiVersion: rbac.authorization.k8s.io/v1, kind: Role,
	  metadata: {name: act-as-patcher, namespace: `+ns+`},
	  rules: [{apiGroups: [""], resources: [serviceaccounts], resourceNames: [patcher], verbs: [impersonate]}]}`)
	testkit.Kit{Client: k8s}.ApplyAs(t, "platform-admin", binding("ci-act-as-patcher", "Role, name: act-as-patcher", `{apiGroup: rbac.authorization.k8s.io, kind: User, name: ci}`))
	ciFP := ciPatch("patcher")
	testkit.Eventually(t, "ci's patch acting as patcher admitted", func() (bool, string) {
		err := ci.Create(ctx, ciFP.DeepCopy(), client.DryRunAll)
		return err == nil, fmt.Sprint(err)
	})
	if err := ci.Create(ctx, ciFP); err != nil {
		t.Fatal(err)
	}
	if err := ci.Create(ctx, ciPatch("fieldops-tenant"), client.DryRunAll); err == nil || !strings.Contains(err.Error(), "may not impersonate") {
		t.Errorf("ci's patch acting as fieldops-tenant: %v, want refused by the admission policy", err)
	}
	waitPatch(t, ciFP, "Applied", "")

	// Deletion goes through the accounts too: the patches hand back, the
	// workloads prune their ConfigMaps. The Forbidden patch never wrote:
	// nothing to hand back, it goes.
	gone := []client.Object{fp, narrow, quota, ciFP, mw, mwNarrow,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-settings"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "narrow-settings"}}}
	for _, o := range gone[:6] {
		c := alice
		if o == ciFP {
			c = ci
		}
		if err := c.Delete(ctx, o); err != nil {
			t.Fatalf("delete %s: %v", o.GetName(), err)
		}
	}
	testkit.Eventually(t, "hand-backs and prunes", func() (bool, string) {
		var why []string
		for _, o := range gone {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object)); !apierrors.IsNotFound(err) {
				why = append(why, fmt.Sprintf("%s still there (%v)", o.GetName(), err))
			}
		}
		return len(why) == 0, strings.Join(why, "; ")
	})
	for _, name := range []string{"web", "narrow"} {
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
			t.Fatal(err)
		}
		for _, e := range cm.ManagedFields {
			if strings.HasPrefix(e.Manager, "fieldops-") {
				t.Errorf("ConfigMap %s still has a fieldops field manager after the hand-back: %s", name, e.Manager)
			}
		}
	}
}

// userClient is the test's client acting as an authenticated user.
func userClient(t *testing.T, user string) client.Client {
	t.Helper()
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	cl, err := client.New(c, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// waitInventory waits until the workload's inventory holds exactly these
// names with these reasons ("" for applied).
func waitInventory(t *testing.T, mw *v1alpha1.ManagedWorkload, want map[string]string) {
	t.Helper()
	testkit.Eventually(t, "the inventory of "+mw.Name, func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(mw), mw); err != nil {
			return false, err.Error()
		}
		got := map[string]string{}
		for _, e := range mw.Status.Inventory {
			got[e.Name] = e.Reason
		}
		return equality.Semantic.DeepEqual(got, want), fmt.Sprintf("%+v", mw.Status.Inventory)
	})
}

// aggregate waits until kube-controller-manager's clusterrole-aggregation
// controller has given the built-in role name the rules of every
// ClusterRole its aggregationRule selects (the suite runs on the local
// cluster, which has the controller-manager).
func aggregate(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	testkit.Eventually(t, "aggregation of ClusterRole "+name, func() (bool, string) {
		cr := &rbacv1.ClusterRole{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, cr); err != nil {
			return false, err.Error()
		}
		var all rbacv1.ClusterRoleList
		if err := k8s.List(ctx, &all); err != nil {
			return false, err.Error()
		}
		for _, c := range all.Items {
			if c.Name == name || cr.AggregationRule == nil {
				continue
			}
			for _, s := range cr.AggregationRule.ClusterRoleSelectors {
				sel, err := metav1.LabelSelectorAsSelector(&s)
				if err != nil {
					t.Fatal(err)
				}
				if !sel.Matches(labels.Set(c.Labels)) {
					continue
				}
				for _, want := range c.Rules {
					if !slices.ContainsFunc(cr.Rules, func(r rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(r, want) }) {
						return false, fmt.Sprintf("%s lacks a rule of %s: %+v", name, c.Name, want)
					}
				}
				break
			}
		}
		return true, ""
	})
}

// serviceAccountConfig is a rest config that authenticates as the
// ServiceAccount with a bound token (TokenRequest), as a pod would.
func serviceAccountConfig(t *testing.T, ns, name string) *rest.Config {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	exp := int64(3600)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}
	if err := k8s.SubResource("token").Create(context.Background(), sa, tr); err != nil {
		t.Fatalf("token for ServiceAccount %s/%s: %v", ns, name, err)
	}
	c := rest.AnonymousClientConfig(cfg)
	c.BearerToken = tr.Status.Token
	return c
}

// startManager runs every fieldops controller with c's identity until the
// test ends.
func startManager(t *testing.T, c *rest.Config, opts controllers.Options) {
	t.Helper()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	// Several tests start a manager, one after the other, in one process.
	mgr, err := ctrl.NewManager(c, ctrl.Options{Scheme: controllers.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := controllers.SetupWith(mgr, opts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// allowed asks the apiserver whether user may verb resource in ns.
func allowed(t *testing.T, user, verb, resource, ns string) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               user,
		Groups:             []string{"system:serviceaccounts", "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: resource},
	}}
	if err := k8s.Create(context.Background(), sar); err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// waitPatch waits until the patch's Ready reason is reason and its message
// holds substr.
func waitPatch(t *testing.T, fp *v1alpha1.FieldPatch, reason, substr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fp), fp)
		c := meta.FindStatusCondition(fp.Status.Conditions, "Ready")
		if err == nil && c != nil && c.Reason == reason && strings.Contains(c.Message, substr) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("FieldPatch %s: Ready %+v (%v), want reason %s with %q", fp.Name, c, err, reason, substr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
