/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package release

import (
	"fmt"
	"path/filepath"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/internal/bundle"
	"github.com/fieldops/fieldops/internal/chartgen"
	"github.com/fieldops/fieldops/internal/localcp"
)

// chartNamespace is where the tests install the chart.
const chartNamespace = "fieldops-system"

func moduleRoot(t *testing.T) string {
	t.Helper()
	r, err := localcp.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(filepath.Join(moduleRoot(t), chartgen.ChartDir))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// allValuesOn turns every optional part of the chart on.
func allValuesOn() map[string]any {
	return map[string]any{
		"tenancy":         map[string]any{"actWithManagerRights": true},
		"admissionPolicy": map[string]any{"finalizers": true},
		"networkPolicy":   map[string]any{"enabled": true},
		"metrics": map[string]any{
			"serviceMonitor": map[string]any{"enabled": true},
			"prometheusRule": map[string]any{"enabled": true},
		},
		"logging":             map[string]any{"development": true},
		"goMemLimit":          "400MiB",
		"extraArgs":           []any{"--concurrency=8"},
		"sharding":            map[string]any{"shards": []any{"a", "b"}},
		"namespace":           map[string]any{"create": true},
		"podDisruptionBudget": map[string]any{"enabled": true},
	}
}

// renderChart renders the chart as `helm template --include-crds` does,
// for Kubernetes kubeVersion, and returns its objects (CRDs first).
func renderChart(t *testing.T, values map[string]any, kubeVersion string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := renderChartErr(t, values, kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// renderChartErr is renderChart, returning helm's error.
func renderChartErr(t *testing.T, values map[string]any, kubeVersion string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.Replace = true
	install.ReleaseName = "fieldops"
	install.Namespace = chartNamespace
	install.IncludeCRDs = true
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	install.KubeVersion = kv
	rel, err := install.Run(loadChart(t), values)
	if err != nil {
		return nil, fmt.Errorf("helm template: %w", err)
	}
	acc, err := release.NewAccessor(rel)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := bundle.DecodeObjects([]byte(acc.Manifest()))
	if err != nil {
		t.Fatalf("%v\n%s", err, acc.Manifest())
	}
	return objs, nil
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}
