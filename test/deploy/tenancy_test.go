/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package deploy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/cmd/manager/app"
	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/controllers/podset"
	"github.com/fieldops/fieldops/internal/inputlimits"
	"github.com/fieldops/fieldops/test/testkit"
)

// defaultOptions are the controllers' options of the manager a rendered
// Deployment runs: its args parsed and checked by the manager's own
// command line (cmd/manager/app), so that the binary's flag defaults
// are what is tested, and its namespace.
func defaultOptions(t *testing.T, objs []*unstructured.Unstructured) (controllers.Options, string) {
	t.Helper()
	dep := find(objs, "Deployment", "fieldops-controller-manager")
	var f app.Flags
	if _, err := app.Parse(f.NewFlagSet("manager", false), managerArgs(t, objs)); err != nil {
		t.Fatal(err)
	}
	if err := f.Check(); err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(dep.Object, d); err != nil {
		t.Fatal(err)
	}
	opts := f.Setup
	opts.OwnNamespace = dep.GetNamespace()
	return opts, d.Spec.Template.Spec.ServiceAccountName
}

// installRBAC applies, for real, the ServiceAccounts, RBAC objects and
// admission policies among objs, and waits until the built-in admin, edit
// and view roles aggregate fieldops's tenant roles.
func installRBAC(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			if err := k8s.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner("fieldops-test"), client.ForceOwnership); err != nil {
				t.Fatalf("install %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
	// view is aggregated into edit, and edit into admin: in that order.
	for _, role := range []string{"view", "edit", "admin"} {
		aggregate(t, role)
	}
}

// The default install (config/default, the manager with its flags'
// defaults, as its ServiceAccount with exactly the RBAC config/default
// installs, the built-in roles aggregated for real) refuses every
// escalation a tenant once had through fieldops, each with a reason on
// the object or an admission error:
//
//  1. a namespace admin raising its ResourceQuota with a FieldPatch;
//  2. a namespace admin widening its own Role to */* with a FieldPatch;
//  3. a ManagedWorkload binding fieldops-manager-role to its author,
//     cluster-wide or in the namespace, then reading another team's Secret;
//  4. a principal holding only fieldops-fieldpatch-editor patching a Role
//     and a RoleBinding of its namespace;
//  5. the same principal naming an admin ServiceAccount of its namespace
//     (on create, and on an update of someone else's patch), and a
//     ClusterFieldPatch author naming an account it may not impersonate;
//
// and the same attempts through ManagedWorkload (the quota, the Role) and
// PodSet (more pods than the quota allows).
func TestDefaultInstallTenancy(t *testing.T) {
	ctx := context.Background()
	objs := render(t, "config/default")
	install(t, objs)
	installRBAC(t, objs)
	opts, managerSA := defaultOptions(t, objs)
	if opts.DefaultServiceAccount != app.DefaultServiceAccount || len(opts.ManagerRightsNamespaces) != 0 || !opts.NoCrossNamespaceRefs {
		t.Fatalf("config/default's manager runs with %+v, want every namespaced object acting as %s", opts, app.DefaultServiceAccount)
	}
	startManager(t, serviceAccountConfig(t, opts.OwnNamespace, managerSA), opts)

	// Team A, onboarded as docs/operators-guide.md shows (fieldops-tenant
	// bound to edit), with ann its admin, ci holding only
	// fieldops-fieldpatch-editor, and ops, a ServiceAccount bound to admin.
	// Team B keeps a Secret. platform-bot may write ClusterFieldPatches and
	// nothing else.
	const ns, other = "tenancy-a", "tenancy-b"
	binding := func(name, role, subject string) string {
		return `{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: ` + name + `, namespace: ` + ns + `},
		  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ` + role + `}, subjects: [` + subject + `]}`
	}
	user := func(name string) string {
		return `{apiGroup: rbac.authorization.k8s.io, kind: User, name: ` + name + `}`
	}
	sa := func(name string) string { return `{kind: ServiceAccount, name: ` + name + `, namespace: ` + ns + `}` }
	for _, y := range []string{
		`{apiVersion: v1, kind: Namespace, metadata: {name: ` + ns + `}}`,
		`{apiVersion: v1, kind: Namespace, metadata: {name: ` + other + `}}`,
		`{apiVersion: v1, kind: Secret, metadata: {name: keys, namespace: ` + other + `}, stringData: {k: v}}`,
		`{apiVersion: v1, kind: Secret, metadata: {name: keys, namespace: ` + ns + `}, stringData: {k: v}}`,
		`{apiVersion: v1, kind: ServiceAccount, metadata: {name: fieldops-tenant, namespace: ` + ns + `}}`,
		binding("fieldops-tenant-edit", "ClusterRole, name: edit", sa("fieldops-tenant")),
		`{apiVersion: v1, kind: ServiceAccount, metadata: {name: ops, namespace: ` + ns + `}}`,
		binding("ops-admin", "ClusterRole, name: admin", sa("ops")),
		binding("ann-admin", "ClusterRole, name: admin", user("ann")),
		binding("ci-fieldpatches", "ClusterRole, name: fieldops-fieldpatch-editor", user("ci")),
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: team-reader, namespace: ` + ns + `},
		  rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]}`,
		binding("team-reader", "Role, name: team-reader", user("ci")),
		`{apiVersion: v1, kind: ResourceQuota, metadata: {name: pods, namespace: ` + ns + `}, spec: {hard: {pods: "2"}}}`,
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: tenancy-clusterfieldpatch-writer},
		  rules: [{apiGroups: [fieldops.dev], resources: [clusterfieldpatches], verbs: [create, get, update]}]}`,
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding, metadata: {name: tenancy-platform-bot},
		  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tenancy-clusterfieldpatch-writer}, subjects: [` + user("platform-bot") + `]}`,
	} {
		testkit.Kit{Client: k8s}.ApplyAs(t, "platform-admin", y)
	}
	ann, ci, bot := userClient(t, "ann"), userClient(t, "ci"), userClient(t, "platform-bot")
	decode := func(y string, o client.Object) client.Object {
		t.Helper()
		if err := yaml.UnmarshalStrict([]byte(y), o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	create := func(c client.Client, y string, o client.Object) {
		t.Helper()
		if err := c.Create(ctx, decode(y, o)); err != nil {
			t.Fatalf("create %s: %v", o.GetName(), err)
		}
	}
	patchYAML := func(name, account, target, patch string) string {
		acct := ""
		if account != "" {
			acct = "serviceAccountName: " + account + ", "
		}
		return `{apiVersion: fieldops.dev/v1alpha1, kind: FieldPatch, metadata: {name: ` + name + `, namespace: ` + ns + `},
		  spec: {` + acct + `target: ` + target + `, patch: ` + patch + `}}`
	}
	const (
		quotaTarget   = `{apiVersion: v1, kind: ResourceQuota, name: pods}`
		quotaPatch    = `{spec: {hard: {pods: "1000"}}}`
		roleTarget    = `{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, name: team-reader}`
		rolePatch     = `{rules: [{apiGroups: ["*"], resources: ["*"], verbs: ["*"]}]}`
		bindingTarget = `{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, name: team-reader}`
		bindingPatch  = `{roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}}`
	)
	cannot := func(account, verb, resource string) string {
		return `User "system:serviceaccount:` + ns + `:` + account + `" cannot ` + verb + ` resource "` + resource + `"`
	}

	// 1 and 2: ann's FieldPatches act as fieldops-tenant (edit), which may
	// neither patch the quota nor read Roles; naming ops (admin) does not
	// help: admin may not patch quotas, and RBAC's escalation check
	// refuses a Role granting what ops does not hold.
	probes := []struct {
		name, account, target, patch, want string
	}{
		{"quota", "", quotaTarget, quotaPatch, cannot("fieldops-tenant", "patch", "resourcequotas")},
		{"quota-as-ops", "ops", quotaTarget, quotaPatch, cannot("ops", "patch", "resourcequotas")},
		{"role", "", roleTarget, rolePatch, cannot("fieldops-tenant", "get", "roles")},
		{"role-as-ops", "ops", roleTarget, rolePatch, "is attempting to grant RBAC permissions not currently held"},
	}
	for _, p := range probes {
		fp := &v1alpha1.FieldPatch{}
		create(ann, patchYAML(p.name, p.account, p.target, p.patch), fp)
		waitPatch(t, fp, "Forbidden", p.want)
	}
	q := &corev1.ResourceQuota{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pods"}, q); err != nil || q.Spec.Hard.Pods().String() != "2" {
		t.Errorf("ResourceQuota pods: %v %v, want 2 pods", q.Spec.Hard, err)
	}
	role := &rbacv1.Role{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team-reader"}, role); err != nil || len(role.Rules) != 1 || role.Rules[0].Resources[0] != "configmaps" {
		t.Errorf("Role team-reader: %+v %v, want its one rule on configmaps", role.Rules, err)
	}

	// 3, and 1 and 2 through ManagedWorkload: a ClusterRoleBinding is
	// cluster-scoped, which the account's RBAC judges (fieldops-tenant may
	// not even read one: Forbidden); a RoleBinding to fieldops-manager-role is
	// Forbidden as fieldops-tenant (no RBAC rights) and as ops (RBAC's bind
	// check: ops does not hold the role's rights); so are the quota and the
	// Role.
	grant := func(kind string) string {
		name := "tenancy-grab"
		if kind == "ClusterRoleBinding" {
			name = "tenancy-grab-cluster"
		}
		return `{apiVersion: rbac.authorization.k8s.io/v1, kind: ` + kind + `, metadata: {name: ` + name + `},
		  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: fieldops-manager-role}, subjects: [` + user("ann") + `]}`
	}
	mwYAML := func(name, account string, resources ...string) string {
		acct := ""
		if account != "" {
			acct = "serviceAccountName: " + account + ", "
		}
		return `{apiVersion: fieldops.dev/v1alpha1, kind: ManagedWorkload, metadata: {name: ` + name + `, namespace: ` + ns + `},
		  spec: {` + acct + `resources: [` + strings.Join(resources, ", ") + `]}}`
	}
	quotaObj := `{apiVersion: v1, kind: ResourceQuota, metadata: {name: pods}, spec: {hard: {pods: "1000"}}}`
	roleObj := `{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: team-reader}, rules: [{apiGroups: ["*"], resources: ["*"], verbs: ["*"]}]}`
	mw, mwOps := &v1alpha1.ManagedWorkload{}, &v1alpha1.ManagedWorkload{}
	create(ann, mwYAML("grab", "", grant("ClusterRoleBinding"), grant("RoleBinding"), quotaObj, roleObj), mw)
	create(ann, mwYAML("grab-as-ops", "ops", grant("RoleBinding"), quotaObj, roleObj), mwOps)
	waitInventory(t, mw, map[string]string{"tenancy-grab-cluster": "Forbidden", "tenancy-grab": "Forbidden", "pods": "Forbidden", "team-reader": "Forbidden"})
	// RBAC's escalation and bind checks: reason Rejected (a refusal of the
	// object as it is, not of the account's verb).
	waitInventory(t, mwOps, map[string]string{"tenancy-grab": "Rejected", "pods": "Forbidden", "team-reader": "Rejected"})
	reasons := map[string]string{}
	for _, e := range mw.Status.Inventory {
		reasons[e.Kind+"/"+e.Name] = e.Reason + ": " + e.Message
	}
	for obj, want := range map[string]string{
		"ClusterRoleBinding/tenancy-grab-cluster": cannot("fieldops-tenant", "get", "clusterrolebindings"),
		"RoleBinding/tenancy-grab":                cannot("fieldops-tenant", "get", "rolebindings"),
		"ResourceQuota/pods":                      cannot("fieldops-tenant", "patch", "resourcequotas"),
	} {
		if !strings.Contains(reasons[obj], want) {
			t.Errorf("workload grab: %s is %q, want %q", obj, reasons[obj], want)
		}
	}
	for _, e := range mwOps.Status.Inventory {
		if e.Kind != "ResourceQuota" && !strings.Contains(e.Message, "is attempting to grant RBAC permissions not currently held") {
			t.Errorf("workload grab-as-ops: %s %q, want RBAC's escalation or bind refusal", e.Kind, e.Message)
		}
	}
	for _, k := range []client.ObjectKey{{Name: "tenancy-grab-cluster"}, {Namespace: ns, Name: "tenancy-grab"}} {
		var o client.Object = &rbacv1.ClusterRoleBinding{}
		if k.Namespace != "" {
			o = &rbacv1.RoleBinding{}
		}
		if err := k8s.Get(ctx, k, o); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s exists (%v): a workload bound fieldops-manager-role", o, k, err)
		}
	}
	if err := ann.Get(ctx, client.ObjectKey{Namespace: other, Name: "keys"}, &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Errorf("ann reads team B's Secret: %v, want Forbidden", err)
	}

	// 4 and 5: ci may create FieldPatches but impersonate no account: the
	// admission policy refuses every patch (naming none: it would act as
	// fieldops-tenant, and ci may not impersonate every account of the
	// namespace; or naming one), on create and when ci changes ann's patch
	// to act as ops; a ClusterFieldPatch naming ops is refused to
	// platform-bot likewise.
	refused := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "you may not impersonate") {
			t.Errorf("%s: %v, want refused by the admission policy", what, err)
		}
	}
	testkit.Eventually(t, "the admission policy refusing ci", func() (bool, string) {
		err := ci.Create(ctx, decode(patchYAML("ci-role", "", roleTarget, rolePatch), &v1alpha1.FieldPatch{}), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "you may not impersonate"), fmt.Sprint(err)
	})
	refused("ci's patch of a Role", ci.Create(ctx, decode(patchYAML("ci-role", "", roleTarget, rolePatch), &v1alpha1.FieldPatch{})))
	refused("ci's patch of a RoleBinding", ci.Create(ctx, decode(patchYAML("ci-binding", "", bindingTarget, bindingPatch), &v1alpha1.FieldPatch{})))
	refused("ci's patch naming fieldops-tenant", ci.Create(ctx, decode(patchYAML("ci-tenant", "fieldops-tenant", roleTarget, rolePatch), &v1alpha1.FieldPatch{})))
	refused("ci's patch naming ops", ci.Create(ctx, decode(patchYAML("ci-ops", "ops", bindingTarget, bindingPatch), &v1alpha1.FieldPatch{})))
	label := &v1alpha1.FieldPatch{}
	create(ann, patchYAML("label", "fieldops-tenant", `{apiVersion: v1, kind: Secret, name: keys}`, `{metadata: {labels: {team: a}}}`), label)
	changed := label.DeepCopy()
	changed.Spec.ServiceAccountName = "ops"
	refused("ci's update of ann's patch to act as ops", ci.Patch(ctx, changed, client.MergeFrom(label)))
	refused("platform-bot's ClusterFieldPatch naming ops", bot.Create(ctx, decode(`{apiVersion: fieldops.dev/v1alpha1, kind: ClusterFieldPatch, metadata: {name: tenancy-bot},
	  spec: {serviceAccountName: ops, serviceAccountNamespace: `+ns+`, target: {apiVersion: v1, kind: Secret, name: keys, namespace: `+ns+`}, patch: {metadata: {labels: {bot: "yes"}}}}}`, &v1alpha1.ClusterFieldPatch{})))
	if err := ci.Create(ctx, decode(mwYAML("ci-grab", "", grant("RoleBinding")), &v1alpha1.ManagedWorkload{})); !apierrors.IsForbidden(err) {
		t.Errorf("ci's ManagedWorkload: %v, want Forbidden by RBAC", err)
	}
	if err := ci.Get(ctx, client.ObjectKey{Namespace: ns, Name: "keys"}, &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Errorf("ci reads its namespace's Secret: %v, want Forbidden", err)
	}
	waitPatch(t, label, "Applied", "")

	// 1 through PodSet: its pods count against the quota like anyone's.
	testkit.Eventually(t, "the quota's usage computed", func() (bool, string) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pods"}, q)
		return err == nil && q.Status.Hard.Pods().String() == "2", fmt.Sprint(q.Status, err)
	})
	ps := &v1alpha1.PodSet{}
	create(ann, `{apiVersion: fieldops.dev/v1alpha1, kind: PodSet, metadata: {name: many, namespace: `+ns+`},
	  spec: {replicas: 3, selector: {matchLabels: {app: many}}, template: {metadata: {labels: {app: many}}, spec: {containers: [{name: c, image: busybox}]}}}}`, ps)
	testkit.Eventually(t, "PodSet many rejected by the quota", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ps), ps); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(ps.Status.Conditions, "Ready")
		return c != nil && c.Reason == podset.ReasonPodRejected && strings.Contains(c.Message, "exceeded quota"), fmt.Sprintf("%+v", c)
	})
}

// The admission policy fieldops-patch-limits refuses a JSON patch of more
// than 1000 operations before it is stored; the manager refuses it too
// (internal/inputlimits), with or without the policy.
func TestPatchLimitsPolicy(t *testing.T) {
	ctx := context.Background()
	objs := render(t, "config/default")
	install(t, objs)
	installRBAC(t, objs)
	ops := make([]string, inputlimits.MaxJSONPatchOps+1)
	for i := range ops {
		ops[i] = fmt.Sprintf(`{op: add, path: /metadata/labels/l%d, value: x}`, i)
	}
	fp := func(n int) *v1alpha1.FieldPatch {
		p := &v1alpha1.FieldPatch{}
		y := `{apiVersion: fieldops.dev/v1alpha1, kind: FieldPatch, metadata: {name: many-ops, namespace: default},
		  spec: {type: JSON, target: {apiVersion: v1, kind: ConfigMap, name: settings}, patch: [` + strings.Join(ops[:n], ", ") + `]}}`
		if err := yaml.UnmarshalStrict([]byte(y), p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	testkit.Eventually(t, "the admission policy refusing 1001 operations", func() (bool, string) {
		err := k8s.Create(ctx, fp(len(ops)), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "at most 1000 operations"), fmt.Sprint(err)
	})
	if err := k8s.Create(ctx, fp(len(ops)-1), client.DryRunAll); err != nil {
		t.Errorf("a JSON patch of 1000 operations: %v", err)
	}
}

// The cluster administrator's opt-in (config/manager-rights): namespaced
// objects naming no account act with the manager's rights, so a namespace
// admin's FieldPatch raises its own quota, the documented risk; the
// admission policy checks only objects that name an account, so a
// fieldops-fieldpatch-editor-only principal may create patches naming
// none and still may not name an account it cannot impersonate.
func TestManagerRightsOptIn(t *testing.T) {
	ctx := context.Background()
	objs := render(t, "test/deploy/testdata/with-manager-rights")
	install(t, objs)
	installRBAC(t, objs)
	// Put config/default's RBAC and policies back for whatever runs next.
	t.Cleanup(func() { installRBAC(t, render(t, "config/default")) })
	opts, managerSA := defaultOptions(t, objs)
	if len(opts.ManagerRightsNamespaces) != 1 || opts.ManagerRightsNamespaces[0] != "*" || opts.NoCrossNamespaceRefs {
		t.Fatalf("config/manager-rights runs the manager with %+v, want manager rights everywhere", opts)
	}
	startManager(t, serviceAccountConfig(t, opts.OwnNamespace, managerSA), opts)

	const ns = "rights-a"
	binding := func(name, role, user string) string {
		return `{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: ` + name + `, namespace: ` + ns + `},
		  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ` + role + `}, subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: ` + user + `}]}`
	}
	for _, y := range []string{
		`{apiVersion: v1, kind: Namespace, metadata: {name: ` + ns + `}}`,
		`{apiVersion: v1, kind: ServiceAccount, metadata: {name: ops, namespace: ` + ns + `}}`,
		binding("ann-admin", "admin", "ann"),
		binding("ci-fieldpatches", "fieldops-fieldpatch-editor", "ci"),
		`{apiVersion: v1, kind: ResourceQuota, metadata: {name: pods, namespace: ` + ns + `}, spec: {hard: {pods: "2"}}}`,
		`{apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: ` + ns + `}, data: {a: "1"}}`,
	} {
		testkit.Kit{Client: k8s}.ApplyAs(t, "platform-admin", y)
	}
	ann, ci := userClient(t, "ann"), userClient(t, "ci")
	patch := func(name, account, target, body string) *v1alpha1.FieldPatch {
		acct := ""
		if account != "" {
			acct = "serviceAccountName: " + account + ", "
		}
		fp := &v1alpha1.FieldPatch{}
		if err := yaml.UnmarshalStrict([]byte(`{apiVersion: fieldops.dev/v1alpha1, kind: FieldPatch, metadata: {name: `+name+`, namespace: `+ns+`},
		  spec: {`+acct+`target: `+target+`, patch: `+body+`}}`), fp); err != nil {
			t.Fatal(err)
		}
		return fp
	}
	quota := patch("quota", "", `{apiVersion: v1, kind: ResourceQuota, name: pods}`, `{spec: {hard: {pods: "1000"}}}`)
	if err := ann.Create(ctx, quota); err != nil {
		t.Fatal(err)
	}
	waitPatch(t, quota, "Applied", "")
	q := &corev1.ResourceQuota{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pods"}, q); err != nil || q.Spec.Hard.Pods().Value() != 1000 {
		t.Errorf("ResourceQuota pods: %v %v, want 1000 pods (the opt-in's risk)", q.Spec.Hard, err)
	}
	ciPatch := patch("ci-label", "", `{apiVersion: v1, kind: ConfigMap, name: settings}`, `{metadata: {labels: {ci: "yes"}}}`)
	testkit.Eventually(t, "ci's patch naming no account admitted", func() (bool, string) {
		err := ci.Create(ctx, ciPatch.DeepCopy(), client.DryRunAll)
		return err == nil, fmt.Sprint(err)
	})
	if err := ci.Create(ctx, patch("ci-ops", "ops", `{apiVersion: v1, kind: ConfigMap, name: settings}`, `{metadata: {labels: {ci: "ops"}}}`), client.DryRunAll); err == nil || !strings.Contains(err.Error(), "you may not impersonate it") {
		t.Errorf("ci's patch naming ops: %v, want refused by the admission policy", err)
	}
	if err := ann.Delete(ctx, quota); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the quota patch handed back", func() (bool, string) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(quota), &v1alpha1.FieldPatch{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}
