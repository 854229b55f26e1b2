/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package repo

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// project is the part of Kubebuilder's PROJECT file this test reads.
type project struct {
	Domain      string   `json:"domain"`
	ProjectName string   `json:"projectName"`
	Layout      []string `json:"layout"`
	Repo        string   `json:"repo"`
	Version     string   `json:"version"`
	Resources   []struct {
		API *struct {
			CRDVersion string `json:"crdVersion"`
			Namespaced bool   `json:"namespaced"`
		} `json:"api"`
		Controller bool   `json:"controller"`
		Domain     string `json:"domain"`
		Group      string `json:"group"`
		Kind       string `json:"kind"`
		Path       string `json:"path"`
		Version    string `json:"version"`
	} `json:"resources"`
}

// PROJECT lists every CRD of config/crd/bases as Kubebuilder would: group
// and domain making the API group, version, scope, the Go package.
func TestProjectListsEveryKind(t *testing.T) {
	var p project
	if err := yaml.UnmarshalStrict([]byte(read(t, "PROJECT")), &p); err != nil {
		t.Fatalf("PROJECT: %v", err)
	}
	if p.Version != "3" || len(p.Layout) != 1 || p.Layout[0] != "go.kubebuilder.io/v4" || p.Repo != "github.com/fieldops/fieldops" {
		t.Errorf("PROJECT header: version %q, layout %v, repo %q", p.Version, p.Layout, p.Repo)
	}
	listed := map[string]bool{}
	for _, r := range p.Resources {
		group := r.Group + "." + r.Domain
		if r.Domain != p.Domain {
			t.Errorf("PROJECT %s: domain %q, the project's is %q", r.Kind, r.Domain, p.Domain)
		}
		if r.Path != p.Repo+"/api/"+r.Version {
			t.Errorf("PROJECT %s: path %q", r.Kind, r.Path)
		}
		if r.API == nil || r.API.CRDVersion != "v1" {
			t.Errorf("PROJECT %s: api.crdVersion is not v1", r.Kind)
			continue
		}
		if !r.Controller {
			t.Errorf("PROJECT %s: controller is not true", r.Kind)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		path := filepath.Join("config", "crd", "bases", group+"_"+plural(t, group, r.Kind)+".yaml")
		if err := yaml.Unmarshal([]byte(read(t, path)), crd); err != nil {
			t.Fatal(err)
		}
		if crd.Spec.Group != group || crd.Spec.Names.Kind != r.Kind {
			t.Errorf("PROJECT %s (group %s) does not match %s: %s %s", r.Kind, group, path, crd.Spec.Group, crd.Spec.Names.Kind)
		}
		if (crd.Spec.Scope == apiextensionsv1.NamespaceScoped) != r.API.Namespaced {
			t.Errorf("PROJECT %s: namespaced %v, the CRD is %s", r.Kind, r.API.Namespaced, crd.Spec.Scope)
		}
		served := false
		for _, v := range crd.Spec.Versions {
			served = served || (v.Name == r.Version && v.Served)
		}
		if !served {
			t.Errorf("PROJECT %s: version %s is not served by the CRD", r.Kind, r.Version)
		}
		listed[crd.Name] = true
	}
	files, _ := filepath.Glob(filepath.Join(root(t), "config", "crd", "bases", "*.yaml"))
	sort.Strings(files)
	for _, f := range files {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, crd); err != nil {
			t.Fatal(err)
		}
		if !listed[crd.Name] {
			t.Errorf("PROJECT does not list %s (kind %s)", crd.Name, crd.Spec.Names.Kind)
		}
	}
}

// plural finds the CRD file of kind in group: config/crd/bases is named
// <group>_<plural>.yaml by controller-gen.
func plural(t *testing.T, group, kind string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root(t), "config", "crd", "bases", group+"_*.yaml"))
	for _, f := range files {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		b, _ := os.ReadFile(f)
		if yaml.Unmarshal(b, crd) == nil && crd.Spec.Names.Kind == kind {
			return crd.Spec.Names.Plural
		}
	}
	t.Fatalf("no CRD of kind %s in group %s in config/crd/bases", kind, group)
	return ""
}
