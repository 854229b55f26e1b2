/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package helm

import (
	"context"
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/postrender"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// helm3 is an action configuration of Helm 3's SDK on ns3, with Helm 3
// CLI's field manager.
func helm3(t *testing.T) *action.Configuration {
	t.Helper()
	kube.ManagedFieldsManager = "helm"
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	namespace := ns3
	flags.Namespace = &namespace
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, ns3, "secret", func(string, ...interface{}) {}); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Helm 3 (its SDK, as `helm upgrade --post-renderer kubectl-fieldops
// --post-renderer-args ...` runs it) beside a FieldPatch: Helm 3 patches
// with a client-side three-way merge, which would write the chart's
// values over the patch's and, once the post-renderer leaves them out,
// delete them (the previous manifest had them). With --keep-live-values
// two upgrades change the chart's other values and leave replicas at 5
// throughout, with no write of fieldops.
func TestHelm3UpgradesKeepLiveValues(t *testing.T) {
	ctx := context.Background()
	t.Setenv("KUBECONFIG", kubeconfig)
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns3}}); err != nil {
		t.Fatal(err)
	}
	chrt, err := loader.Load(writeChart(t))
	if err != nil {
		t.Fatal(err)
	}
	pr, err := postrender.NewExec(filepath.Join(binDir, "kubectl-fieldops"), "helm-postrender", "--namespace="+ns3, "--keep-live-values")
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(helm3(t))
	install.ReleaseName, install.Namespace, install.PostRenderer = "web", ns3, pr
	if _, err := install.Run(chrt, map[string]interface{}{}); err != nil {
		t.Fatalf("helm 3 install: %v", err)
	}
	fp := createReady(t, `apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: helm3-sdk}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  patch: {spec: {replicas: 5, template: {spec: {containers: [{name: app, resources: {limits: {memory: 256Mi}}}]}}}}
`)
	lowest := watchReplicas(t, ns3)
	for i, step := range []struct {
		values map[string]interface{}
		want   string
	}{
		{map[string]interface{}{"tag": "1.28"}, "replicas 5, image nginx:1.28, memory 256Mi, note v1, 1 env"},
		{map[string]interface{}{"tag": "1.28", "note": "v2", "extraEnv": []interface{}{"B"}}, "replicas 5, image nginx:1.28, memory 256Mi, note v2, 2 env"},
	} {
		before := writes.Writes("/deployments/web")
		upgrade := action.NewUpgrade(helm3(t))
		upgrade.Namespace, upgrade.PostRenderer = ns3, pr
		if _, err := upgrade.Run("web", chrt, step.values); err != nil {
			t.Fatalf("helm 3 upgrade %d: %v", i, err)
		}
		reconciled(t, fp)
		if got := state(t, ns3); got != step.want {
			t.Fatalf("helm 3 upgrade %d: %s, want %s", i, got, step.want)
		}
		if n := writes.Writes("/deployments/web") - before; n != 0 {
			t.Errorf("helm 3 upgrade %d: fieldops wrote the Deployment %d times", i, n)
		}
	}
	if l := lowest(); l != 5 {
		t.Errorf("replicas went down to %d during the Helm 3 upgrades", l)
	}
	kit.DeleteAndWait(t, fp)
	upgrade := action.NewUpgrade(helm3(t))
	upgrade.Namespace, upgrade.PostRenderer = ns3, pr
	if _, err := upgrade.Run("web", chrt, map[string]interface{}{"tag": "1.29", "note": "v2", "extraEnv": []interface{}{"B"}}); err != nil {
		t.Fatalf("helm 3 upgrade after the hand-back: %v", err)
	}
	if got, want := state(t, ns3), "replicas 1, image nginx:1.29, memory 128Mi, note v2, 2 env"; got != want {
		t.Errorf("after the hand-back and a Helm 3 upgrade: %s, want %s", got, want)
	}
}
