/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package release

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fieldops/fieldops/internal/chartgen"
)

// Every object the chart renders from templates/ (the generated ones
// too; crds/ are installed as they are, not rendered) has Helm's standard
// labels (https://helm.sh/docs/chart_best_practices/labels/), with the
// defaults and with every optional part on.
func TestChartStandardLabels(t *testing.T) {
	c := loadChart(t)
	want := map[string]string{
		"app.kubernetes.io/name":       "fieldops",
		"app.kubernetes.io/instance":   "fieldops",
		"app.kubernetes.io/version":    c.Metadata.AppVersion,
		"app.kubernetes.io/managed-by": "Helm",
		"helm.sh/chart":                "fieldops-" + c.Metadata.Version,
	}
	if len(want) != len(chartgen.StandardLabels) {
		t.Fatalf("chartgen.StandardLabels %v, the test checks %v", chartgen.StandardLabels, want)
	}
	for name, values := range map[string]map[string]any{"default values": nil, "every optional value on": allValuesOn()} {
		objs := renderChart(t, values, "v1.36.0")
		n := 0
		for _, o := range objs {
			if o.GetKind() == "CustomResourceDefinition" {
				continue
			}
			n++
			got := o.GetLabels()
			for _, k := range chartgen.StandardLabels {
				if got[k] != want[k] {
					t.Errorf("%s: %s %s: label %s is %q, want %q", name, o.GetKind(), o.GetName(), k, got[k], want[k])
				}
			}
		}
		t.Logf("%s: %d objects", name, n)
	}
}

// Each manager Deployment's selector matches its own pods only: the main
// Deployment's (config/manager's, unchanged since the first release: a
// Deployment's selector is immutable, and an upgrade must not change it)
// does not match a shard's pods, a shard's does not match another's. Each
// PodDisruptionBudget has its Deployment's selector, and the metrics
// Service and NetworkPolicy select every manager pod.
func TestChartSelectors(t *testing.T) {
	objs := renderChart(t, allValuesOn(), "v1.30.0")
	deps := deployments(objs)
	if len(deps) != 3 {
		t.Fatalf("%d Deployments, want 3", len(deps))
	}
	main := find(objs, "Deployment", "fieldops-controller-manager")
	released := map[string]string{"app.kubernetes.io/name": "fieldops", "control-plane": "controller-manager"}
	if got := selectorOf(t, main, "spec", "selector"); got.String() != labels.SelectorFromSet(released).String() {
		t.Errorf("the main Deployment's selector is %s, want the released %v", got, released)
	}
	for _, d := range deps {
		sel := selectorOf(t, d, "spec", "selector")
		for _, other := range deps {
			pods := podLabels(other)
			if sel.Matches(pods) != (other == d) {
				t.Errorf("Deployment %s's selector %s matches Deployment %s's pods (%v): %v", d.GetName(), sel, other.GetName(), pods, sel.Matches(pods))
			}
		}
		pdb := find(objs, "PodDisruptionBudget", d.GetName())
		if pdb == nil {
			t.Errorf("no PodDisruptionBudget %s", d.GetName())
			continue
		}
		if got := selectorOf(t, pdb, "spec", "selector"); got.String() != sel.String() {
			t.Errorf("PodDisruptionBudget %s selects %s, its Deployment %s", pdb.GetName(), got, sel)
		}
	}
	svc := find(objs, "Service", "fieldops-controller-manager-metrics-service")
	svcSel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
	netpol := selectorOf(t, find(objs, "NetworkPolicy", "fieldops-allow-metrics-traffic"), "spec", "podSelector")
	for _, d := range deps {
		if !labels.SelectorFromSet(svcSel).Matches(podLabels(d)) || !netpol.Matches(podLabels(d)) {
			t.Errorf("Deployment %s's pods: metrics Service selects them %v, NetworkPolicy %v", d.GetName(), labels.SelectorFromSet(svcSel).Matches(podLabels(d)), netpol.Matches(podLabels(d)))
		}
	}
}

// podDisruptionBudget: off by default; on, one per manager Deployment with
// maxUnavailable 1, or minAvailable when set (an integer or a
// percentage); on with neither, refused.
func TestChartPodDisruptionBudget(t *testing.T) {
	if n := len(kind(renderChart(t, map[string]any{"sharding": map[string]any{"shards": []any{"a"}}}, "v1.30.0"), "PodDisruptionBudget")); n != 0 {
		t.Errorf("default values: %d PodDisruptionBudgets", n)
	}
	for _, tc := range []struct {
		budget map[string]any
		field  string
		want   any
	}{
		{map[string]any{}, "maxUnavailable", int64(1)},
		{map[string]any{"maxUnavailable": "25%"}, "maxUnavailable", "25%"},
		{map[string]any{"minAvailable": 1}, "minAvailable", int64(1)},
		{map[string]any{"minAvailable": "50%"}, "minAvailable", "50%"},
	} {
		tc.budget["enabled"] = true
		objs := renderChart(t, map[string]any{"podDisruptionBudget": tc.budget, "sharding": map[string]any{"shards": []any{"a", "b"}}}, "v1.30.0")
		pdbs := kind(objs, "PodDisruptionBudget")
		if len(pdbs) != 3 {
			t.Errorf("%v: %d PodDisruptionBudgets, want 3 (main, a, b)", tc.budget, len(pdbs))
		}
		for _, p := range pdbs {
			spec, _, _ := unstructured.NestedMap(p.Object, "spec")
			if fmt.Sprint(spec[tc.field]) != fmt.Sprint(tc.want) || len(spec) != 2 {
				t.Errorf("%v: %s spec %v, want %s: %v and a selector", tc.budget, p.GetName(), spec, tc.field, tc.want)
			}
		}
	}
	_, err := renderChartErr(t, map[string]any{"podDisruptionBudget": map[string]any{"enabled": true, "maxUnavailable": nil}}, "v1.30.0")
	if err == nil {
		t.Error("podDisruptionBudget.enabled without minAvailable or maxUnavailable renders")
	}
}

// namespace.create renders the release's namespace with the restricted
// Pod Security label install.yaml gives it, kept on uninstall; by default
// the chart renders no Namespace.
func TestChartNamespace(t *testing.T) {
	if n := len(kind(renderChart(t, nil, "v1.30.0"), "Namespace")); n != 0 {
		t.Errorf("default values: %d Namespaces", n)
	}
	ns := find(renderChart(t, map[string]any{"namespace": map[string]any{"create": true}}, "v1.30.0"), "Namespace", chartNamespace)
	if ns == nil {
		t.Fatalf("namespace.create: no Namespace %s", chartNamespace)
	}
	if got := ns.GetLabels()["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("Namespace %s: pod-security.kubernetes.io/enforce=%q, want restricted", chartNamespace, got)
	}
	if got := ns.GetAnnotations()["helm.sh/resource-policy"]; got != "keep" {
		t.Errorf("Namespace %s: helm.sh/resource-policy=%q, want keep", chartNamespace, got)
	}
}

func selectorOf(t *testing.T, o *unstructured.Unstructured, path ...string) labels.Selector {
	t.Helper()
	if o == nil {
		t.Fatalf("no object for selector %v", path)
	}
	m, _, err := unstructured.NestedMap(o.Object, path...)
	if err != nil || m == nil {
		t.Fatalf("%s %s: no %v (%v)", o.GetKind(), o.GetName(), path, err)
	}
	var ls metav1.LabelSelector
	if err := runtimeConvert(m, &ls); err != nil {
		t.Fatal(err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func podLabels(d *unstructured.Unstructured) labels.Set {
	m, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
	return m
}

func kind(objs []*unstructured.Unstructured, k string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == k {
			out = append(out, o)
		}
	}
	return out
}

func runtimeConvert(m map[string]any, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}
