/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fieldops/fieldops/internal/bundle"
	"github.com/fieldops/fieldops/internal/bundlecheck"
)

// loadBundle reads the committed bundle; internal/bundlecheck checks it
// (TestCommittedBundleValid).
func loadBundle(t *testing.T) *bundlecheck.Bundle {
	t.Helper()
	b, err := bundlecheck.Load(filepath.Join(root, bundle.BundleDir), filepath.Join(root, bundle.Dockerfile))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The committed bundle is what `make bundle` writes from config/ today.
func TestBundleUpToDate(t *testing.T) {
	b := loadBundle(t)
	image := b.CSV.Annotations["containerImage"]
	version := b.CSV.Spec.Version.String()
	files, err := bundle.Generate(bundle.Options{Root: root, Version: version, Image: image})
	if err != nil {
		t.Fatal(err)
	}
	stale := func(name string) {
		t.Errorf("%s is stale: run 'make bundle VERSION=%s' and commit", name, version)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil || !bytes.Equal(got, want) {
			stale(name)
		}
	}
	_ = filepath.WalkDir(filepath.Join(root, bundle.BundleDir), func(path string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(root, path)
		if err == nil && !d.IsDir() && rel != filepath.Join(bundle.BundleDir, "README.md") && files[rel] == nil {
			t.Errorf("%s is not written by make bundle: remove it", rel)
		}
		return nil
	})
}

// What OLM would create from the bundle is accepted by the apiserver:
// every manifest, every alm-example (the samples), the Deployment of the
// install strategy and its permissions as Roles and ClusterRoles.
func TestBundleAcceptedByControlPlane(t *testing.T) {
	b := loadBundle(t)
	install(t, render(t, "config/default")) // the fieldops-system Namespace
	var manifests []*unstructured.Unstructured
	for _, o := range b.Objects {
		if o.GetKind() != v1alpha1.ClusterServiceVersionKind {
			manifests = append(manifests, o)
		}
	}
	dryRun(t, "bundle/manifests", manifests, "fieldops-system")

	var examples []map[string]interface{}
	if err := json.Unmarshal([]byte(b.CSV.Annotations["alm-examples"]), &examples); err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, e := range examples {
		objs = append(objs, &unstructured.Unstructured{Object: e})
	}
	dryRun(t, "alm-examples", objs, "default")

	objs = nil
	add := func(o runtime.Object) {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: u})
	}
	strategy := b.CSV.Spec.InstallStrategy.StrategySpec
	for _, d := range strategy.DeploymentSpecs {
		add(&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: d.Name, Labels: d.Label}, Spec: d.Spec})
	}
	for _, p := range strategy.Permissions {
		add(&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: "csv-" + p.ServiceAccountName}, Rules: p.Rules})
	}
	for _, p := range strategy.ClusterPermissions {
		add(&rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: "csv-" + p.ServiceAccountName}, Rules: p.Rules})
	}
	dryRun(t, "install strategy", objs, "fieldops-system")
}
