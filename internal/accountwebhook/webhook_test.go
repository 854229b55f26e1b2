/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package accountwebhook_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"go.uber.org/zap/zapcore"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/cmd/manager/app"
	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/internal/accountwebhook"
	"github.com/fieldops/fieldops/internal/bundle"
	"github.com/fieldops/fieldops/internal/bundlecheck"
	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/test/testkit"
)

// deciderLabel selects, per object, which of the two checks judges it: the
// policy of config/policy (its binding selects "policy") or the bundle's
// webhook (its configuration selects "webhook"), so that both run side by
// side on the same control plane and each request meets exactly one.
const deciderLabel = "test.fieldops.dev/decider"

var (
	cfg   *rest.Config  // the control plane's admin config
	admin client.Client // cluster administrator (system:masters)
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run starts the local control plane with the webhook configuration OLM
// would create from the bundle's CSV (served on 127.0.0.1 with a
// certificate envtest generates, the CA in its caBundle), installs the
// ValidatingAdmissionPolicy of config/policy, and runs the manager's
// webhook server with the flags of the bundle's Deployment, as the
// bundle's ServiceAccount with the bundle's clusterPermissions.
func run(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 1 }
	root, err := localcp.ModuleRoot()
	if err != nil {
		return fail(err)
	}
	b, err := bundlecheck.Load(filepath.Join(root, bundle.BundleDir), filepath.Join(root, bundle.Dockerfile))
	if err != nil {
		return fail(err)
	}
	olm, err := fromBundle(b)
	if err != nil {
		return fail(err)
	}
	cp, err := localcp.Start(localcp.Options{Webhooks: envtest.WebhookInstallOptions{
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{olm.webhook},
	}})
	if err != nil {
		return fail(err)
	}
	defer func() { _ = cp.Stop() }()
	cfg = cp.Config
	if admin, err = client.New(cfg, client.Options{Scheme: controllers.Scheme()}); err != nil {
		return fail(err)
	}
	if err := installPolicy(root); err != nil {
		return fail(err)
	}
	managerCfg, err := managerConfig(olm)
	if err != nil {
		return fail(err)
	}
	wo := cp.Env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(managerCfg, ctrl.Options{
		Scheme:        controllers.Scheme(),
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir}),
	})
	if err != nil {
		return fail(err)
	}
	app.SetupAccountWebhook(mgr, olm.flags.Setup)
	stop := testkit.Start(mgr)
	defer stop()
	return m.Run()
}

// olmInstall is what OLM makes of the bundle's CSV that the test needs.
type olmInstall struct {
	webhook        *admissionregistrationv1.ValidatingWebhookConfiguration
	flags          app.Flags
	serviceAccount string
	rules          []rbacv1.PolicyRule
}

// fromBundle reads the account webhook's definition and the Deployment
// serving it from the CSV: the ValidatingWebhookConfiguration OLM creates
// from the definition (operator-framework/api's
// WebhookDescription.GetValidatingWebhook: name, rules, failure policy,
// side effects, review versions, a Service reference with the path), the
// manager's flags parsed and checked by its own command line, and the
// ServiceAccount's cluster permissions.
func fromBundle(b *bundlecheck.Bundle) (olmInstall, error) {
	var out olmInstall
	var def *v1alpha1.WebhookDescription
	for i, w := range b.CSV.Spec.WebhookDefinitions {
		if w.GenerateName == bundle.AccountWebhookName {
			def = &b.CSV.Spec.WebhookDefinitions[i]
		}
	}
	if def == nil {
		return out, fmt.Errorf("the bundle's CSV declares no webhook %s", bundle.AccountWebhookName)
	}
	if def.WebhookPath == nil || *def.WebhookPath != accountwebhook.Path {
		return out, fmt.Errorf("webhook %s: path %v, the manager serves %s", def.GenerateName, def.WebhookPath, accountwebhook.Path)
	}
	strategy := b.CSV.Spec.InstallStrategy.StrategySpec
	for _, d := range strategy.DeploymentSpecs {
		if d.Name != def.DeploymentName {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == "manager" {
				if _, err := app.Parse(out.flags.NewFlagSet("manager", false), c.Args); err != nil {
					return out, err
				}
			}
		}
		out.serviceAccount = d.Spec.Template.Spec.ServiceAccountName
	}
	if err := out.flags.Check(); err != nil {
		return out, err
	}
	if !out.flags.AccountWebhook || def.TargetPort == nil || out.flags.WebhookPort != def.TargetPort.IntValue() {
		return out, fmt.Errorf("the Deployment %s: --account-webhook %v on port %d, the webhook definition targets port %v", def.DeploymentName, out.flags.AccountWebhook, out.flags.WebhookPort, def.TargetPort)
	}
	for _, p := range strategy.ClusterPermissions {
		if p.ServiceAccountName == out.serviceAccount {
			out.rules = append(out.rules, p.Rules...)
		}
	}
	wh := def.GetValidatingWebhook("fieldops-system", nil, nil)
	path := strings.TrimPrefix(*def.WebhookPath, "/") // envtest joins host and path with a slash
	wh.ClientConfig.Service.Path = &path
	wh.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{deciderLabel: "webhook"}}
	out.webhook = &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "fieldops-" + def.GenerateName},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{wh},
	}
	return out, nil
}

// installPolicy applies config/policy's account policy as it is, its
// binding selecting the objects labelled for the policy.
func installPolicy(root string) error {
	raw, err := os.ReadFile(filepath.Join(root, "config", "policy", "account_policy.yaml"))
	if err != nil {
		return err
	}
	objs, err := bundle.DecodeObjects(raw)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if o.GetKind() == "ValidatingAdmissionPolicyBinding" {
			if err := unstructured.SetNestedStringMap(o.Object, map[string]string{deciderLabel: "policy"}, "spec", "matchResources", "objectSelector", "matchLabels"); err != nil {
				return err
			}
		}
		if err := admin.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("fieldops-test"), client.ForceOwnership); err != nil {
			return fmt.Errorf("install %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// managerConfig creates the bundle's ServiceAccount with the bundle's
// cluster permissions and returns a config with a token of it: the
// webhook reviews with exactly the rights OLM grants the manager.
func managerConfig(olm olmInstall) (*rest.Config, error) {
	ctx := context.Background()
	const ns = "fieldops-system"
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: olm.serviceAccount}}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		sa,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "csv-" + olm.serviceAccount}, Rules: olm.rules},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "csv-" + olm.serviceAccount},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "csv-" + olm.serviceAccount},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: olm.serviceAccount}}},
	} {
		if err := admin.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	exp := int64(3600)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}
	if err := admin.SubResource("token").Create(ctx, sa, tr); err != nil {
		return nil, fmt.Errorf("token for ServiceAccount %s/%s: %w", ns, olm.serviceAccount, err)
	}
	c := rest.AnonymousClientConfig(cfg)
	c.BearerToken = tr.Status.Token
	return c, nil
}

// userClient acts as user, member of groups (and system:authenticated).
func userClient(t *testing.T, user string, groups ...string) client.Client {
	t.Helper()
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append([]string{"system:authenticated"}, groups...)}
	cl, err := client.New(c, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// The webhook the bundle declares decides every request as the policy of
// config/policy does: the same cases, one object judged by each, with
// real RBAC and impersonated users. Team "team" has the ServiceAccounts
// fieldops-tenant and ops; writer may write fieldops objects and
// impersonate no account; tenant-user may impersonate fieldops-tenant,
// ops-user (and the group ops-team) ops, and any-user every account of
// team. An object naming no account needs every account of its
// namespace: neither the policy nor the webhook judges it by the default
// account's name (the policy does not know --default-service-account),
// so tenant-user names fieldops-tenant. Each case is admitted, or refused
// with the policy's message naming the account and the missing right.
func TestWebhookDecidesAsThePolicy(t *testing.T) {
	ctx := context.Background()
	const ns = "team"
	rbac := []string{
		`{apiVersion: v1, kind: Namespace, metadata: {name: team}}`,
		`{apiVersion: v1, kind: ServiceAccount, metadata: {name: fieldops-tenant, namespace: team}}`,
		`{apiVersion: v1, kind: ServiceAccount, metadata: {name: ops, namespace: team}}`,
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: fieldops-writer},
		  rules: [{apiGroups: [fieldops.dev], resources: [fieldpatches, clusterfieldpatches, managedworkloads], verbs: [create, get, update, patch]}]}`,
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding, metadata: {name: fieldops-writer},
		  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: fieldops-writer},
		  subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: writer}, {apiGroup: rbac.authorization.k8s.io, kind: User, name: tenant-user},
		    {apiGroup: rbac.authorization.k8s.io, kind: User, name: ops-user}, {apiGroup: rbac.authorization.k8s.io, kind: Group, name: ops-team},
		    {apiGroup: rbac.authorization.k8s.io, kind: User, name: any-user}]}`,
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: impersonate-ops, namespace: team},
		  rules: [{apiGroups: [""], resources: [serviceaccounts], resourceNames: [ops], verbs: [impersonate]}]}`,
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: impersonate-ops, namespace: team},
		  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: impersonate-ops},
		  subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: ops-user}, {apiGroup: rbac.authorization.k8s.io, kind: Group, name: ops-team}]}`,
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: impersonate-tenant, namespace: team},
		  rules: [{apiGroups: [""], resources: [serviceaccounts], resourceNames: [fieldops-tenant], verbs: [impersonate]}]}`,
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: impersonate-tenant, namespace: team},
		  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: impersonate-tenant},
		  subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: tenant-user}]}`,
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: impersonate-any, namespace: team},
		  rules: [{apiGroups: [""], resources: [serviceaccounts], verbs: [impersonate]}]}`,
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: impersonate-any, namespace: team},
		  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: impersonate-any},
		  subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: any-user}]}`,
	}
	for _, y := range rbac {
		testkit.Kit{Client: admin}.ApplyAs(t, "fieldops-test", y)
	}
	users := map[string]client.Client{
		"writer": userClient(t, "writer"), "tenant-user": userClient(t, "tenant-user"),
		"ops-user": userClient(t, "ops-user"), "member": userClient(t, "member", "ops-team"), "any-user": userClient(t, "any-user"),
	}

	// Objects by kind and account ("" names none); spec holds extra
	// fields.
	obj := func(kind, account, extra string) string {
		acct := ""
		if account != "" {
			acct = "serviceAccountName: " + account + ", "
		}
		switch kind {
		case "ManagedWorkload":
			return `{apiVersion: fieldops.dev/v1alpha1, kind: ManagedWorkload, metadata: {namespace: ` + ns + `},
			  spec: {` + acct + extra + `resources: [{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}]}}`
		case "ClusterFieldPatch":
			if account != "" {
				acct += "serviceAccountNamespace: " + ns + ", "
			}
			return `{apiVersion: fieldops.dev/v1alpha1, kind: ClusterFieldPatch, metadata: {},
			  spec: {` + acct + extra + `target: {apiVersion: v1, kind: ConfigMap, name: c, namespace: ` + ns + `}, patch: {data: {a: "1"}}}}`
		}
		return `{apiVersion: fieldops.dev/v1alpha1, kind: FieldPatch, metadata: {namespace: ` + ns + `},
		  spec: {` + acct + extra + `target: {apiVersion: v1, kind: ConfigMap, name: c}, patch: {data: {a: "1"}}}}`
	}
	const (
		tenantAcct = ns + "/fieldops-tenant"
		opsAcct    = ns + "/ops"
		everyAcct  = ns + "/" // naming none: every account of ns
	)
	cases := []struct {
		name string
		// before, if set, is created by the cluster administrator; the
		// user then updates it to obj (labels and spec).
		before, obj, user string
		// refused names the account of the refusal; "" is admitted.
		refused string
	}{
		{name: "naming none, may impersonate no account", obj: obj("FieldPatch", "", ""), user: "writer", refused: everyAcct},
		{name: "naming none, may impersonate fieldops-tenant alone", obj: obj("FieldPatch", "", ""), user: "tenant-user", refused: everyAcct},
		{name: "naming none, may impersonate every account", obj: obj("FieldPatch", "", ""), user: "any-user"},
		{name: "naming fieldops-tenant, may impersonate it", obj: obj("FieldPatch", "fieldops-tenant", ""), user: "tenant-user"},
		{name: "naming ops, may not impersonate it", obj: obj("FieldPatch", "ops", ""), user: "writer", refused: opsAcct},
		{name: "naming ops, may impersonate it", obj: obj("FieldPatch", "ops", ""), user: "ops-user"},
		{name: "naming ops, may impersonate it through a group", obj: obj("FieldPatch", "ops", ""), user: "member"},
		{name: "naming fieldops-tenant, may impersonate only ops", obj: obj("FieldPatch", "fieldops-tenant", ""), user: "ops-user", refused: tenantAcct},
		{name: "update to ops, may not impersonate it", before: obj("FieldPatch", "fieldops-tenant", ""), obj: obj("FieldPatch", "ops", ""), user: "tenant-user", refused: opsAcct},
		{name: "update to ops, may impersonate it", before: obj("FieldPatch", "fieldops-tenant", ""), obj: obj("FieldPatch", "ops", ""), user: "ops-user"},
		{name: "update of spec keeping the account", before: obj("FieldPatch", "ops", ""), obj: obj("FieldPatch", "ops", "suspend: true, "), user: "writer", refused: opsAcct},
		{name: "update of labels only", before: obj("FieldPatch", "ops", ""), obj: obj("FieldPatch", "ops", ""), user: "writer"},
		{name: "ManagedWorkload naming none", obj: obj("ManagedWorkload", "", ""), user: "writer", refused: everyAcct},
		{name: "ManagedWorkload naming none, may impersonate every account", obj: obj("ManagedWorkload", "", ""), user: "any-user"},
		{name: "ManagedWorkload naming ops, may not impersonate it", obj: obj("ManagedWorkload", "ops", ""), user: "writer", refused: opsAcct},
		{name: "ManagedWorkload naming ops, may impersonate it", obj: obj("ManagedWorkload", "ops", ""), user: "ops-user"},
		{name: "ManagedWorkload update to ops, may not impersonate it", before: obj("ManagedWorkload", "", ""), obj: obj("ManagedWorkload", "ops", ""), user: "tenant-user", refused: opsAcct},
		{name: "ClusterFieldPatch naming none", obj: obj("ClusterFieldPatch", "", ""), user: "writer"},
		{name: "ClusterFieldPatch naming ops, may not impersonate it", obj: obj("ClusterFieldPatch", "ops", ""), user: "writer", refused: opsAcct},
		{name: "ClusterFieldPatch naming ops, may impersonate it", obj: obj("ClusterFieldPatch", "ops", ""), user: "ops-user"},
		{name: "ClusterFieldPatch update to ops, may not impersonate it", before: obj("ClusterFieldPatch", "", ""), obj: obj("ClusterFieldPatch", "ops", ""), user: "writer", refused: opsAcct},
		{name: "ClusterFieldPatch update to ops, may impersonate it", before: obj("ClusterFieldPatch", "", ""), obj: obj("ClusterFieldPatch", "ops", ""), user: "ops-user"},
	}

	// Both checks are in force once each refuses writer's probe.
	for _, decider := range []string{"policy", "webhook"} {
		probe := decode(t, obj("FieldPatch", "ops", ""), "probe-"+decider, decider)
		testkit.Eventually(t, "the "+decider+" refusing writer", func() (bool, string) {
			err := users["writer"].Create(ctx, probe.DeepCopy(), client.DryRunAll)
			return err != nil && strings.Contains(err.Error(), "you may not impersonate it"), fmt.Sprint(err)
		})
	}

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			decided := map[string]string{}
			for _, decider := range []string{"policy", "webhook"} {
				name := fmt.Sprintf("c%02d-%s", i, decider)
				o := decode(t, tc.obj, name, decider)
				c := users[tc.user]
				var err error
				if tc.before == "" {
					err = c.Create(ctx, o)
				} else {
					live := decode(t, tc.before, name, decider)
					if err := admin.Create(ctx, live); err != nil {
						t.Fatalf("%s: create %s: %v", decider, name, err)
					}
					if err := c.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil {
						t.Fatal(err)
					}
					live.Object["spec"] = o.Object["spec"]
					live.SetLabels(map[string]string{deciderLabel: decider, "touched": "yes"})
					err = c.Update(ctx, live)
				}
				kind := o.GetKind()
				switch {
				case tc.refused == "" && err != nil:
					t.Errorf("%s: %s's %s refused: %v", decider, tc.user, kind, err)
				case tc.refused != "" && err == nil:
					t.Errorf("%s: %s's %s admitted, want refused as %s", decider, tc.user, kind, tc.refused)
				case tc.refused != "":
					ns, n, _ := strings.Cut(tc.refused, "/")
					want := accountwebhook.DeniedMessage(kind, accountwebhook.Account{Namespace: ns, Name: n})
					if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
						t.Errorf("%s: %s's %s: %v, want Forbidden with %q", decider, tc.user, kind, err, want)
					}
				}
				decided[decider] = verdict(err)
			}
			if decided["policy"] != decided["webhook"] {
				t.Errorf("the policy decided %q, the webhook %q", decided["policy"], decided["webhook"])
			}
		})
	}
}

// verdict is a decision without the name of who decided: admitted, or the
// refusal's message.
func verdict(err error) string {
	if err == nil {
		return "admitted"
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err.Error()
	}
	msg := status.Status().Message
	if i := strings.Index(msg, "this "); i >= 0 {
		return msg[i:]
	}
	return msg
}

// decode reads y into an object named name, labelled for decider.
func decode(t *testing.T, y, name, decider string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.UnmarshalStrict([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetName(name)
	u.SetLabels(map[string]string{deciderLabel: decider})
	return u
}
