/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package release

import (
	"context"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/internal/served"
)

// The chart installs on the local cluster (Kubernetes of test/tools, with
// a scheduler and a kwok node: the manager's pod is scheduled and reported
// Ready, no container runs) as an operator installs it:
//
//	helm install fieldops charts/fieldops -n fieldops-system --create-namespace --wait
//
// with the opt-in kinds on (the MutatingAdmissionPolicy, the Prometheus
// Operator's ServiceMonitor and PrometheusRule), one shard and the default
// tenancy.
// When helm returns, every fieldops kind is already served (Helm installs
// crds/ first and waits for them to be Established), the manager runs
// with the manager's tenancy defaults (no opt-in into its rights) and the
// ValidatingAdmissionPolicy of config/policy exists.
func TestChartInstall(t *testing.T) {
	cp, err := localcp.Start(localcp.Options{
		NoFieldopsCRDs: true,
		ExtraCRDPaths: []string{
			"test/testdata/crds/monitoring.coreos.com_servicemonitors.yaml",
			"test/testdata/crds/monitoring.coreos.com_prometheusrules.yaml",
		},
		Cluster: &localcp.ClusterOptions{},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	ctx := context.Background()
	if missing, err := served.Check(ctx, cp.Config, served.Group, 0); err != nil || len(missing) == 0 {
		t.Fatalf("before the chart: fieldops kinds served %v (%v): the control plane installed them", missing, err)
	}

	cfg := helmConfiguration(t, cp)
	install := action.NewInstall(cfg)
	install.ReleaseName = "fieldops"
	install.Namespace = chartNamespace
	install.CreateNamespace = true
	install.WaitStrategy = kube.StatusWatcherStrategy
	install.Timeout = 5 * time.Minute
	values := map[string]any{
		"admissionPolicy": map[string]any{"finalizers": true},
		"metrics": map[string]any{
			"serviceMonitor": map[string]any{"enabled": true},
			"prometheusRule": map[string]any{"enabled": true},
		},
		"sharding": map[string]any{"shards": []any{"a"}},
	}
	if _, err := install.Run(loadChart(t), values); err != nil {
		t.Fatalf("helm install: %v", err)
	}

	// Right when helm returns: no "503 Resource kind not found" window.
	if missing, err := served.Check(ctx, cp.Config, served.Group, 4); err != nil || len(missing) > 0 {
		t.Errorf("helm install returned before every fieldops kind was served: %v %v", missing, err)
	}
	c, err := client.New(cp.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	get := func(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
		t.Helper()
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind))
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
			t.Errorf("%s %s/%s: %v", kind, namespace, name, err)
			return nil
		}
		return u
	}
	if d := get("apps/v1", "Deployment", chartNamespace, "fieldops-controller-manager"); d != nil {
		args := managerContainer(t, d)["args"].([]any)
		for _, arg := range args {
			if s, _ := arg.(string); strings.HasPrefix(s, "--manager-rights-namespaces") || strings.HasPrefix(s, "--default-service-account=") || s == "--no-cross-namespace-refs=false" {
				t.Errorf("manager args %v: %s, want the manager's tenancy defaults", args, s)
			}
		}
		if avail, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas"); avail != 1 {
			t.Errorf("helm --wait returned with %d available manager replicas", avail)
		}
	}
	// Shard a's Deployment: its pod (the shard key read from its label
	// through the downward API) admitted, scheduled and Ready.
	if d := get("apps/v1", "Deployment", chartNamespace, "fieldops-controller-manager-shard-a"); d != nil {
		if avail, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas"); avail != 1 {
			t.Errorf("helm --wait returned with %d available replicas of shard a", avail)
		}
	}
	get("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "", "fieldops-account-impersonation")
	get("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy", "", "fieldops-finalizers")
	get("monitoring.coreos.com/v1", "ServiceMonitor", chartNamespace, "fieldops-controller-manager-metrics-monitor")
	get("monitoring.coreos.com/v1", "PrometheusRule", chartNamespace, "fieldops-alerts")
	get("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "fieldops-manager-rolebinding")
}
