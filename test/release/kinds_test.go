/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package release

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/internal/bundle"
	"github.com/fieldops/fieldops/internal/bundlecheck"
)

// served130 reads test/testdata/kubernetes-1.30-served-kinds.txt: the
// "group/version Kind" pairs Kubernetes 1.30 serves by default.
func served130(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(moduleRoot(t), "test", "testdata", "kubernetes-1.30-served-kinds.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]bool{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		l := strings.TrimSpace(s.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out[l] = true
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 50 {
		t.Fatalf("the list of Kubernetes 1.30's kinds has %d entries: truncated?", len(out))
	}
	return out
}

// Kinds an install path may hold that Kubernetes 1.30 does not serve,
// each opt-in and documented: what makes it served.
var optIn = map[string]string{
	// admissionPolicy.finalizers (chart), config/admission (kustomize).
	"admissionregistration.k8s.io/v1 MutatingAdmissionPolicy":        "Kubernetes 1.36",
	"admissionregistration.k8s.io/v1 MutatingAdmissionPolicyBinding": "Kubernetes 1.36",
	// metrics.serviceMonitor / metrics.prometheusRule, config/prometheus.
	"monitoring.coreos.com/v1 ServiceMonitor": "the Prometheus Operator's CRDs",
	"monitoring.coreos.com/v1 PrometheusRule": "the Prometheus Operator's CRDs",
}

// Every install path, as an operator on Kubernetes 1.30 would use it,
// holds only kinds that 1.30 serves or that the path's own CRDs define:
// kustomize config/default, the chart with its default values, the OLM
// bundle (whose ClusterServiceVersion OLM serves, and whose install
// strategy becomes a Deployment, a ServiceAccount and RBAC); with every
// optional value of the chart on, the kinds beyond that are the opt-in
// ones of optIn, each needing what it names.
func TestInstallPathsServedByKubernetes130(t *testing.T) {
	served := served130(t)
	root := moduleRoot(t)
	kustomize := func(dir string) func(t *testing.T) []*unstructured.Unstructured {
		return func(t *testing.T) []*unstructured.Unstructured {
			objs, err := bundle.Render(filepath.Join(root, dir))
			if err != nil {
				t.Fatal(err)
			}
			return objs
		}
	}
	for _, tc := range []struct {
		name   string
		render func(t *testing.T) []*unstructured.Unstructured
		// extra kinds allowed on this path, beyond 1.30's and its CRDs'.
		extra map[string]bool
	}{
		{"kustomize config/default", kustomize("config/default"), nil},
		{"kustomize config/default with config/lockdown", func(t *testing.T) []*unstructured.Unstructured {
			// kustomize takes relative paths only: the overlay lives in
			// the module root.
			dir, err := os.MkdirTemp(root, ".test-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			k := "resources: [../config/default]\ncomponents: [../config/lockdown]\n"
			if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
				t.Fatal(err)
			}
			return kustomize(filepath.Base(dir))(t)
		}, nil},
		{"helm chart, default values", func(t *testing.T) []*unstructured.Unstructured {
			return renderChart(t, nil, "v1.30.0")
		}, nil},
		{"helm chart, every optional value on", func(t *testing.T) []*unstructured.Unstructured {
			return renderChart(t, allValuesOn(), "v1.36.0")
		}, map[string]bool{
			"admissionregistration.k8s.io/v1 MutatingAdmissionPolicy":        true,
			"admissionregistration.k8s.io/v1 MutatingAdmissionPolicyBinding": true,
			"monitoring.coreos.com/v1 ServiceMonitor":                        true,
			"monitoring.coreos.com/v1 PrometheusRule":                        true,
		}},
		{"OLM bundle", func(t *testing.T) []*unstructured.Unstructured {
			b, err := bundlecheck.Load(filepath.Join(root, bundle.BundleDir), filepath.Join(root, bundle.Dockerfile))
			if err != nil {
				t.Fatal(err)
			}
			return bundleObjects(t, b)
		}, map[string]bool{"operators.coreos.com/v1alpha1 ClusterServiceVersion": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := tc.render(t)
			own := map[string]bool{}
			for _, o := range objs {
				if o.GetKind() != "CustomResourceDefinition" {
					continue
				}
				group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
				kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
				versions, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
				for _, v := range versions {
					name, _, _ := unstructured.NestedString(v.(map[string]any), "name")
					own[group+"/"+name+" "+kind] = true
				}
			}
			var bad []string
			for _, o := range objs {
				gvk := o.GetAPIVersion() + " " + o.GetKind()
				switch {
				case served[gvk], own[gvk]:
				case tc.extra[gvk] && optIn[gvk] != "":
				case tc.extra[gvk]:
					// the bundle's CSV: OLM's own kind.
				default:
					why := ""
					if optIn[gvk] != "" {
						why = " (opt-in, needs " + optIn[gvk] + ": it must not be on by default)"
					}
					bad = append(bad, gvk+" "+o.GetName()+why)
				}
			}
			sort.Strings(bad)
			for _, b := range bad {
				t.Errorf("not served by Kubernetes 1.30: %s", b)
			}
			if len(objs) < 5 {
				t.Errorf("renders %d objects", len(objs))
			}
		})
	}
}

// bundleObjects are the bundle's manifests and the objects OLM makes of
// its ClusterServiceVersion's install strategy.
func bundleObjects(t *testing.T, b *bundlecheck.Bundle) []*unstructured.Unstructured {
	t.Helper()
	objs := slices.Clone(b.Objects)
	mk := func(apiVersion, kind, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetName(name)
		return u
	}
	spec := b.CSV.Spec.InstallStrategy.StrategySpec
	for _, d := range spec.DeploymentSpecs {
		objs = append(objs, mk("apps/v1", "Deployment", d.Name))
	}
	for _, p := range spec.Permissions {
		objs = append(objs, mk("v1", "ServiceAccount", p.ServiceAccountName),
			mk("rbac.authorization.k8s.io/v1", "Role", p.ServiceAccountName),
			mk("rbac.authorization.k8s.io/v1", "RoleBinding", p.ServiceAccountName))
	}
	for _, p := range spec.ClusterPermissions {
		objs = append(objs, mk("v1", "ServiceAccount", p.ServiceAccountName),
			mk("rbac.authorization.k8s.io/v1", "ClusterRole", p.ServiceAccountName),
			mk("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", p.ServiceAccountName))
	}
	return objs
}
