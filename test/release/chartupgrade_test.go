/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package release

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/fieldops/fieldops/internal/bundle"
	"github.com/fieldops/fieldops/internal/chartgen"
	"github.com/fieldops/fieldops/internal/localcp"
)

// helmFieldManager is the field manager of the helm command (cmd/helm sets
// kube.ManagedFieldsManager to it; a program of the SDK is its binary's
// name otherwise).
const helmFieldManager = "helm"

// The chart installed as its README says (Helm 4: --create-namespace with
// namespace.create=true; here with one shard and the PodDisruptionBudgets
// on), then upgraded as the README and docs/operators-guide.md#upgrade
// say: the new release's CRDs first,
//
//	helm show crds <chart> | kubectl apply --server-side --field-manager=helm -f -
//
// which is a server-side apply of `helm show crds`'s objects as helm,
// without forcing: no conflict, though the new CRDs change fields Helm
// set. The old step, applying install.yaml, conflicts with helm on the
// manager's Deployment. Then helm upgrade goes through. On the way: the
// namespace is restricted (the manager's pods admitted under it), and each
// PodDisruptionBudget counts its own Deployment's pod only.
func TestChartUpgradeCRDStep(t *testing.T) {
	cp, err := localcp.Start(localcp.Options{NoFieldopsCRDs: true, Cluster: &localcp.ClusterOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	ctx := context.Background()
	c, err := client.New(cp.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kube.ManagedFieldsManager = helmFieldManager
	cfg := helmConfiguration(t, cp)
	install := action.NewInstall(cfg)
	install.ReleaseName = "fieldops"
	install.Namespace = chartNamespace
	install.CreateNamespace = true
	install.WaitStrategy = kube.StatusWatcherStrategy
	install.Timeout = 5 * time.Minute
	values := map[string]any{
		"namespace":           map[string]any{"create": true},
		"podDisruptionBudget": map[string]any{"enabled": true},
		"sharding":            map[string]any{"shards": []any{"a"}},
	}
	if _, err := install.Run(loadChart(t), values); err != nil {
		t.Fatalf("helm install: %v", err)
	}
	checkRestrictedNamespace(ctx, t, c)
	checkBudgets(ctx, t, c)

	checkInstallYAMLConflicts(ctx, t, c)
	crds := newReleaseCRDs(t)
	for _, crd := range crds {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(crd.DeepCopy()), client.FieldOwner("kubectl")); !apierrors.IsConflict(err) {
			t.Errorf("CRD %s changed, applied as kubectl: %v, want a conflict with helm (why the step names helm's field manager)", crd.GetName(), err)
		}
	}
	// The documented step.
	for _, crd := range crds {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(crd.DeepCopy()), client.FieldOwner(helmFieldManager)); err != nil {
			t.Errorf("kubectl apply --server-side --field-manager=helm (CRD %s): %v", crd.GetName(), err)
		}
	}
	checkCRDsUpgraded(ctx, t, c, crds)

	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = chartNamespace
	upgrade.ReuseValues = true
	upgrade.WaitStrategy = kube.StatusWatcherStrategy
	upgrade.Timeout = 5 * time.Minute
	if _, err := upgrade.Run("fieldops", loadChart(t), nil); err != nil {
		t.Errorf("helm upgrade after the CRD step: %v", err)
	}
}

// helmConfiguration is Helm's action configuration for cp, as a cluster
// administrator, with releases in chartNamespace.
func helmConfiguration(t *testing.T, cp *localcp.ControlPlane) *action.Configuration {
	t.Helper()
	user, err := cp.Env.ControlPlane.AddUser(envtest.User{Name: "helm-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	ns := chartNamespace
	flags.Namespace = &ns
	cfg := action.NewConfiguration()
	if err := cfg.Init(flags, chartNamespace, "secret"); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// newReleaseCRDs are the objects `helm show crds` prints for the chart,
// changed as a new release changes them: each version's schema has a new
// description.
func newReleaseCRDs(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	out, err := action.NewShow(action.ShowCRDs, action.NewConfiguration()).Run(filepath.Join(moduleRoot(t), chartgen.ChartDir))
	if err != nil {
		t.Fatalf("helm show crds: %v", err)
	}
	crds, err := bundle.DecodeObjects([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != 4 {
		t.Fatalf("helm show crds: %d objects, want the 4 CRDs", len(crds))
	}
	for _, crd := range crds {
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			if err := unstructured.SetNestedField(v.(map[string]any), "the next release's schema", "schema", "openAPIV3Schema", "description"); err != nil {
				t.Fatal(err)
			}
		}
		if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
			t.Fatal(err)
		}
	}
	return crds
}

// checkInstallYAMLConflicts: the old step, applying install.yaml
// (config/default) as kubectl, conflicts with helm: on the manager
// Deployment's arguments and the admission policies' matchConstraints.
// Nothing is written: each apply is a dry run.
func checkInstallYAMLConflicts(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	conflicts := map[string]string{}
	for _, o := range renderConfig(t, "config/default") {
		err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("kubectl"), client.DryRunAll)
		if apierrors.IsConflict(err) {
			conflicts[o.GetKind()+" "+o.GetName()] = err.Error()
		}
	}
	for k, v := range conflicts {
		t.Logf("install.yaml after helm install: %s: %s", k, v)
	}
	for _, want := range []string{"Deployment fieldops-controller-manager", "ValidatingAdmissionPolicy fieldops-account-impersonation"} {
		if _, ok := conflicts[want]; !ok {
			t.Errorf("kubectl apply --server-side -f install.yaml after helm install: conflicts %v, want one on %s", conflicts, want)
		}
	}
}

func renderConfig(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := bundle.Render(filepath.Join(moduleRoot(t), dir))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func getObject(ctx context.Context, t *testing.T, c client.Client, apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind))
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		t.Fatalf("%s %s/%s: %v", kind, namespace, name, err)
	}
	return u
}

// checkRestrictedNamespace: the release's namespace is the chart's
// (namespace.create), under the restricted Pod Security Standard.
func checkRestrictedNamespace(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	ns := getObject(ctx, t, c, "v1", "Namespace", "", chartNamespace)
	if got := ns.GetLabels()["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("namespace %s: pod-security.kubernetes.io/enforce=%q, want restricted", chartNamespace, got)
	}
	if got := ns.GetAnnotations()["meta.helm.sh/release-name"]; got != "fieldops" {
		t.Errorf("namespace %s: meta.helm.sh/release-name=%q, want the release", chartNamespace, got)
	}
}

// checkBudgets: each manager Deployment's PodDisruptionBudget counts its
// one pod (the disruption controller's expectedPods), not the other
// Deployment's.
func checkBudgets(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	for _, name := range []string{"fieldops-controller-manager", "fieldops-controller-manager-shard-a"} {
		var expected, healthy int64
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
			pdb := getObject(ctx, t, c, "policy/v1", "PodDisruptionBudget", chartNamespace, name)
			expected, _, _ = unstructured.NestedInt64(pdb.Object, "status", "expectedPods")
			healthy, _, _ = unstructured.NestedInt64(pdb.Object, "status", "currentHealthy")
			if expected == 1 && healthy == 1 {
				break
			}
		}
		if expected != 1 || healthy != 1 {
			t.Errorf("PodDisruptionBudget %s: %d expected pods, %d healthy, want its Deployment's 1", name, expected, healthy)
		}
	}
}

// checkCRDsUpgraded: each CRD has the new release's schema, its fields
// all helm's.
func checkCRDsUpgraded(ctx context.Context, t *testing.T, c client.Client, crds []*unstructured.Unstructured) {
	t.Helper()
	for _, want := range crds {
		got := getObject(ctx, t, c, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", want.GetName())
		versions, _, _ := unstructured.NestedSlice(got.Object, "spec", "versions")
		for _, v := range versions {
			if d, _, _ := unstructured.NestedString(v.(map[string]any), "schema", "openAPIV3Schema", "description"); d != "the next release's schema" {
				t.Errorf("CRD %s: schema description %q after the step", got.GetName(), d)
			}
		}
		for _, m := range got.GetManagedFields() {
			if m.Manager != helmFieldManager && m.Subresource == "" {
				t.Errorf("CRD %s: fields of %s (%s) besides helm's", got.GetName(), m.Manager, m.Operation)
			}
		}
	}
}

// A release installed with --create-namespace alone takes namespace.create
// on upgrade only with --take-ownership: the namespace Helm created is not
// the release's, and Helm refuses to adopt it otherwise. With it, the
// namespace is the release's and restricted.
func TestChartNamespaceCreateOnUpgrade(t *testing.T) {
	cp, err := localcp.Start(localcp.Options{NoFieldopsCRDs: true, Cluster: &localcp.ClusterOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	ctx := context.Background()
	c, err := client.New(cp.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kube.ManagedFieldsManager = helmFieldManager
	cfg := helmConfiguration(t, cp)
	install := action.NewInstall(cfg)
	install.ReleaseName = "fieldops"
	install.Namespace = chartNamespace
	install.CreateNamespace = true
	install.WaitStrategy = kube.HookOnlyStrategy
	if _, err := install.Run(loadChart(t), nil); err != nil {
		t.Fatalf("helm install: %v", err)
	}
	values := map[string]any{"namespace": map[string]any{"create": true}}
	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = chartNamespace
	upgrade.WaitStrategy = kube.HookOnlyStrategy
	if _, err := upgrade.Run("fieldops", loadChart(t), values); err == nil || !strings.Contains(err.Error(), "cannot be imported") {
		t.Errorf("helm upgrade --set namespace.create=true: %v, want Helm's refusal to adopt the namespace", err)
	}
	upgrade = action.NewUpgrade(cfg)
	upgrade.Namespace = chartNamespace
	upgrade.TakeOwnership = true
	upgrade.WaitStrategy = kube.HookOnlyStrategy
	if _, err := upgrade.Run("fieldops", loadChart(t), values); err != nil {
		t.Fatalf("helm upgrade --take-ownership --set namespace.create=true: %v", err)
	}
	checkRestrictedNamespace(ctx, t, c)
}
