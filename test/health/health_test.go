/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package health_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/test/health"
)

var update = flag.Bool("update", false, "rewrite config/argocd/argocd-cm.yaml from the health.lua files")

func root(t testing.TB) string {
	t.Helper()
	r, err := localcp.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func script(t testing.TB, kind string) string {
	t.Helper()
	s, err := health.Script(root(t), kind)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// run runs kind's script over obj.
func run(t testing.TB, kind string, obj map[string]any) health.Health {
	t.Helper()
	h, err := health.Run(script(t, kind), obj)
	if err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
	return h
}

// The four kinds report the same conditions (controllers/internal/
// conditions), so they share one script; and every kind of
// config/crd/bases has it.
func TestOneScriptForEveryKind(t *testing.T) {
	want := script(t, health.Kinds[0])
	for _, k := range health.Kinds[1:] {
		if script(t, k) != want {
			t.Errorf("%s's health.lua differs from %s's: the kinds share their conditions and so their script", k, health.Kinds[0])
		}
	}
	crds, _ := filepath.Glob(filepath.Join(root(t), "config", "crd", "bases", health.Group+"_*.yaml"))
	var served []string
	for _, f := range crds {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd struct {
			Spec struct {
				Names struct{ Kind string }
			}
		}
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatal(err)
		}
		served = append(served, crd.Spec.Names.Kind)
	}
	sort.Strings(served)
	have := append([]string(nil), health.Kinds...)
	sort.Strings(have)
	if fmt.Sprint(served) != fmt.Sprint(have) {
		t.Errorf("config/crd/bases has kinds %v, the health scripts cover %v", served, have)
	}
	dirs, _ := filepath.Glob(filepath.Join(root(t), "config", "argocd", health.Group, "*"))
	if len(dirs) != len(health.Kinds) {
		t.Errorf("config/argocd/%s holds %d directories, want one per kind (%v)", health.Group, len(dirs), health.Kinds)
	}
}

// configMapPatch is config/argocd/argocd-cm.yaml as it must be: the
// scripts under their argocd-cm keys, in a ConfigMap patch that names no
// namespace (Argo CD's may be any).
func configMapPatch(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`# Argo CD health checks of the fieldops kinds, as a patch of Argo CD's
# argocd-cm ConfigMap (kubectl patch --patch-file, or a kustomize patch).
# Generated from config/argocd/fieldops.dev/*/health.lua by
# "go test ./test/health -run TestArgoCDConfigMap -update"; see
# docs/gitops.md#health.
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
data:
`)
	for _, k := range health.Kinds {
		b.WriteString(configMapEntry(t, k))
	}
	return b.String()
}

// configMapEntry is kind's key and script as a YAML block scalar under
// data.
func configMapEntry(t testing.TB, kind string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("  " + health.ConfigMapKey(kind) + ": |\n")
	for _, line := range strings.SplitAfter(script(t, kind), "\n") {
		switch line {
		case "":
		case "\n":
			b.WriteString(line)
		default:
			b.WriteString("    " + line)
		}
	}
	return b.String()
}

// config/argocd/argocd-cm.yaml holds the scripts as they are, and
// docs/gitops.md shows the FieldPatch entry of it as it is.
func TestArgoCDConfigMap(t *testing.T) {
	path := filepath.Join(root(t), "config", "argocd", "argocd-cm.yaml")
	want := configMapPatch(t)
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("config/argocd/argocd-cm.yaml is not the health.lua files: go test ./test/health -run TestArgoCDConfigMap -update")
	}
	var cm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Data map[string]string `json:"data"`
	}
	if err := yaml.UnmarshalStrict(got, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || cm.Metadata.Name != "argocd-cm" {
		t.Errorf("argocd-cm.yaml is a %s %s %s, want v1 ConfigMap argocd-cm", cm.APIVersion, cm.Kind, cm.Metadata.Name)
	}
	for _, k := range health.Kinds {
		if cm.Data[health.ConfigMapKey(k)] != script(t, k) {
			t.Errorf("%s in argocd-cm.yaml is not %s's health.lua", health.ConfigMapKey(k), k)
		}
	}
	doc, err := os.ReadFile(filepath.Join(root(t), "docs", "gitops.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), configMapEntry(t, "FieldPatch")) {
		t.Errorf("docs/gitops.md does not show %s as config/argocd/argocd-cm.yaml has it", health.ConfigMapKey("FieldPatch"))
	}
}
