/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package release

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/internal/bundle"
	"github.com/fieldops/fieldops/internal/bundlecheck"
	"github.com/fieldops/fieldops/internal/chartgen"
)

// helm lint --strict passes with the default values and with every
// optional value on.
func TestChartLint(t *testing.T) {
	dir := filepath.Join(moduleRoot(t), chartgen.ChartDir)
	for name, vals := range map[string]map[string]any{"default values": nil, "every optional value on": allValuesOn()} {
		t.Run(name, func(t *testing.T) {
			l := action.NewLint()
			l.Strict = true
			l.Namespace = chartNamespace
			kv, err := common.ParseKubeVersion("v1.30.0")
			if err != nil {
				t.Fatal(err)
			}
			l.KubeVersion = kv
			res := l.Run([]string{dir}, vals)
			for _, m := range res.Messages {
				t.Log(m.Error())
			}
			for _, err := range res.Errors {
				t.Errorf("helm lint --strict: %v", err)
			}
			if res.TotalChartsLinted != 1 {
				t.Errorf("linted %d charts", res.TotalChartsLinted)
			}
		})
	}
}

// The chart's generated files are what `make chart` writes from config/
// and the committed version (the bundle's, as the Makefile's VERSION).
func TestChartUpToDate(t *testing.T) {
	root := moduleRoot(t)
	b, err := bundlecheck.Load(filepath.Join(root, bundle.BundleDir), filepath.Join(root, bundle.Dockerfile))
	if err != nil {
		t.Fatal(err)
	}
	files, err := chartgen.Generate(chartgen.Options{Root: root, Version: b.CSV.Spec.Version.String()})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Errorf("%v: run make chart", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run make chart", name)
		}
	}
	gen, _ := filepath.Glob(filepath.Join(root, chartgen.ChartDir, "templates", "zz_generated.*.yaml"))
	crds, _ := filepath.Glob(filepath.Join(root, chartgen.ChartDir, "crds", "*.yaml"))
	for _, f := range append(gen, crds...) {
		rel, _ := filepath.Rel(root, f)
		if _, ok := files[rel]; !ok {
			t.Errorf("%s is no longer generated: run make chart", rel)
		}
	}
}

// The chart's manager Deployment is config/manager's (namespaced objects act
// as a ServiceAccount of their namespace: the manager's defaults), and with
// tenancy.actWithManagerRights it is config/manager's with the component
// config/manager-rights; the chart's image is the one config/manager names,
// at the chart's appVersion.
func TestChartDeploymentMatchesConfig(t *testing.T) {
	root := moduleRoot(t)
	dir, err := os.MkdirTemp(root, ".test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	k := "resources: [../config/manager, ../config/rbac, ../config/policy]\ncomponents: [../config/manager-rights]\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	managerRights, err := bundle.Render(dir)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := bundle.Render(filepath.Join(root, "config", "manager"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
		config []*unstructured.Unstructured
	}{
		{"default values", nil, plain},
		{"tenancy.actWithManagerRights", map[string]any{"tenancy": map[string]any{"actWithManagerRights": true}}, managerRights},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := managerContainer(t, find(tc.config, "Deployment", "fieldops-controller-manager"))
			got := managerContainer(t, find(renderChart(t, tc.values, "v1.30.0"), "Deployment", "fieldops-controller-manager"))
			delete(got, "imagePullPolicy")
			for _, f := range []string{"args", "env", "ports", "livenessProbe", "readinessProbe", "resources", "securityContext", "image"} {
				if !reflect.DeepEqual(got[f], want[f]) {
					g, _ := yaml.Marshal(got[f])
					w, _ := yaml.Marshal(want[f])
					t.Errorf("manager container %s: chart\n%s\nconfig/\n%s", f, g, w)
				}
			}
			var gotKeys, wantKeys []string
			for k := range got {
				gotKeys = append(gotKeys, k)
			}
			for k := range want {
				wantKeys = append(wantKeys, k)
			}
			sort.Strings(gotKeys)
			sort.Strings(wantKeys)
			if strings.Join(gotKeys, ",") != strings.Join(wantKeys, ",") {
				t.Errorf("manager container fields: chart %v, config/ %v", gotKeys, wantKeys)
			}
		})
	}
}

func managerContainer(t *testing.T, d *unstructured.Unstructured) map[string]any {
	t.Helper()
	if d == nil {
		t.Fatal("no Deployment fieldops-controller-manager")
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("%d containers", len(cs))
	}
	c := cs[0].(map[string]any)
	if c["name"] != "manager" {
		t.Fatalf("container %v", c["name"])
	}
	return c
}
