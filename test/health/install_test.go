/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package health_test

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/test/health"
)

// argocdCM is Argo CD's argocd-cm as an install leaves it, with one
// setting of the user's.
func argocdCM(ns string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-cm", Namespace: ns, Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"}},
		Data:       map[string]string{"url": "https://argocd.example.com"},
	}
}

// checkInstalled: data holds the four scripts and the user's setting.
func checkInstalled(t *testing.T, data map[string]string) {
	t.Helper()
	if data["url"] != "https://argocd.example.com" {
		t.Errorf("the user's url setting is gone: %v", data)
	}
	for _, k := range health.Kinds {
		if data[health.ConfigMapKey(k)] != script(t, k) {
			t.Errorf("%s is not %s's health.lua after the install", health.ConfigMapKey(k), k)
		}
	}
	if len(data) != len(health.Kinds)+1 {
		t.Errorf("argocd-cm has %d keys, want the url and %d scripts", len(data), len(health.Kinds))
	}
}

// The docs' kustomize install: config/argocd/argocd-cm.yaml as a patch
// of an Argo CD install that names no namespace (as Argo CD's install.yaml
// does), the kustomization setting it.
func TestInstallWithKustomize(t *testing.T) {
	fs := filesys.MakeFsInMemory()
	base := argocdCM("")
	base.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
	b, err := yaml.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := os.ReadFile(filepath.Join(root(t), "config", "argocd", "argocd-cm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		"/app/install.yaml":            b,
		"/app/fieldops-argocd-cm.yaml": patch,
		"/app/kustomization.yaml":      []byte("namespace: argocd\nresources: [install.yaml]\npatches:\n- path: fieldops-argocd-cm.yaml\n"),
	} {
		if err := fs.WriteFile(name, content); err != nil {
			t.Fatal(err)
		}
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/app")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(m.Resources()); n != 1 {
		t.Fatalf("kustomize built %d objects, want argocd-cm alone", n)
	}
	out, err := m.Resources()[0].AsYAML()
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(out, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Namespace != "argocd" {
		t.Errorf("namespace %q, want argocd", cm.Namespace)
	}
	checkInstalled(t, cm.Data)
}
