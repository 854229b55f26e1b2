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
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fieldops/fieldops/internal/bundle"
)

func loadBundle(t *testing.T) *bundle.Bundle {
	t.Helper()
	b, err := bundle.Load(filepath.Join(root, bundle.BundleDir), filepath.Join(root, bundle.Dockerfile))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The committed bundle passes the checks OLM's bundle validation makes.
func TestBundleValid(t *testing.T) {
	for _, err := range loadBundle(t).Validate() {
		t.Error(err)
	}
}

// The committed bundle is what `make bundle` writes from config/ today.
func TestBundleUpToDate(t *testing.T) {
	b := loadBundle(t)
	image := b.CSV.Annotations["containerImage"]
	files, err := bundle.Generate(bundle.Options{Root: root, Version: b.CSV.Spec.Version, Image: image})
	if err != nil {
		t.Fatal(err)
	}
	stale := func(name string) {
		t.Errorf("%s is stale: run 'make bundle VERSION=%s' and commit", name, b.CSV.Spec.Version)
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
	for _, crd := range b.CRDs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
		if err != nil {
			t.Fatal(err)
		}
		manifests = append(manifests, &unstructured.Unstructured{Object: u})
	}
	for _, o := range b.Others {
		manifests = append(manifests, o)
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
	for _, d := range b.CSV.Spec.Install.Spec.Deployments {
		add(&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: d.Name, Labels: d.Label}, Spec: d.Spec})
	}
	for _, p := range b.CSV.Spec.Install.Spec.Permissions {
		add(&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: "csv-" + p.ServiceAccountName}, Rules: p.Rules})
	}
	for _, p := range b.CSV.Spec.Install.Spec.ClusterPermissions {
		add(&rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: "csv-" + p.ServiceAccountName}, Rules: p.Rules})
	}
	dryRun(t, "install strategy", objs, "fieldops-system")
}

// Validate finds each kind of mistake OLM's validation rejects.
func TestBundleValidateCatches(t *testing.T) {
	for _, c := range []struct {
		name   string
		break_ func(b *bundle.Bundle)
		want   string
	}{
		{"CRD not owned", func(b *bundle.Bundle) {
			b.CSV.Spec.CustomResourceDefinitions.Owned = b.CSV.Spec.CustomResourceDefinitions.Owned[1:]
		}, "is not owned by the CSV"},
		{"owned CRD missing", func(b *bundle.Bundle) { delete(b.CRDs, "fieldops.dev_podsets.yaml") }, "CSV owns CRD podsets.fieldops.dev, which is not in manifests/"},
		{"owned version not served", func(b *bundle.Bundle) { b.CSV.Spec.CustomResourceDefinitions.Owned[0].Version = "v9" }, "which the CRD does not serve"},
		{"wrong media type", func(b *bundle.Bundle) {
			b.Annotations["operators.operatorframework.io.bundle.mediatype.v1"] = "plain+v0"
		}, `media type "plain+v0"`},
		{"missing package", func(b *bundle.Bundle) { delete(b.Annotations, "operators.operatorframework.io.bundle.package.v1") }, "package.v1 is missing"},
		{"default channel not a channel", func(b *bundle.Bundle) {
			b.Annotations["operators.operatorframework.io.bundle.channel.default.v1"] = "stable"
		}, "default channel \"stable\" is not among the channels"},
		{"Dockerfile label differs", func(b *bundle.Bundle) { b.Labels["operators.operatorframework.io.bundle.channels.v1"] = "beta" }, "bundle.Dockerfile: LABEL"},
		{"channel name outside the naming convention", func(b *bundle.Bundle) {
			b.Annotations["operators.operatorframework.io.bundle.channels.v1"] = "alpha"
			b.Annotations["operators.operatorframework.io.bundle.channel.default.v1"] = "alpha"
		}, `channel "alpha" does not follow the channel naming convention`},
		{"no arch label", func(b *bundle.Bundle) {
			delete(b.CSV.Labels, bundle.ArchLabelPrefix+"amd64")
			delete(b.CSV.Labels, bundle.ArchLabelPrefix+"arm64")
		}, "CSV has no operatorframework.io/arch.<arch>: supported label"},
		{"no os label", func(b *bundle.Bundle) { delete(b.CSV.Labels, bundle.OSLabelPrefix+"linux") }, "CSV has no operatorframework.io/os.<os>: supported label"},
		{"platform label not supported", func(b *bundle.Bundle) { b.CSV.Labels[bundle.OSLabelPrefix+"linux"] = "yes" }, `operatorframework.io/os.linux="yes", want supported`},
		{"alm-examples not JSON", func(b *bundle.Bundle) { b.CSV.Annotations["alm-examples"] = "[{" }, "alm-examples is not a JSON array"},
		{"alm-example of a foreign kind", func(b *bundle.Bundle) {
			b.CSV.Annotations["alm-examples"] = strings.Replace(b.CSV.Annotations["alm-examples"], `"kind": "PodSet"`, `"kind": "ReplicaSet"`, 1)
		}, "ReplicaSet is not an owned kind"},
		{"no deployment", func(b *bundle.Bundle) { b.CSV.Spec.Install.Spec.Deployments = nil }, "no deployments"},
		{"no RBAC", func(b *bundle.Bundle) {
			b.CSV.Spec.Install.Spec.Permissions, b.CSV.Spec.Install.Spec.ClusterPermissions = nil, nil
		}, "which has no permissions or clusterPermissions"},
		{"strategy", func(b *bundle.Bundle) { b.CSV.Spec.Install.Strategy = "helm" }, `install strategy "helm"`},
		{"install modes", func(b *bundle.Bundle) { b.CSV.Spec.InstallModes = b.CSV.Spec.InstallModes[:3] }, "AllNamespaces 0 times"},
		{"name", func(b *bundle.Bundle) { b.CSV.Name = "fieldops.v9.9.9" }, "package.vVERSION"},
		{"descriptor path", func(b *bundle.Bundle) {
			b.CSV.Spec.CustomResourceDefinitions.Owned[0].SpecDescriptors[0].Path = "nosuchfield"
		}, `specDescriptor "nosuchfield" is not a field`},
		{"undescribed field", func(b *bundle.Bundle) {
			owned := &b.CSV.Spec.CustomResourceDefinitions.Owned[3]
			owned.StatusDescriptors = owned.StatusDescriptors[1:]
		}, "has no statusDescriptor for status.conditions"},
		{"webhook of no deployment", func(b *bundle.Bundle) { b.CSV.Spec.WebhookDefinitions[0].DeploymentName = "manager" }, `deploymentName "manager" is not a deployment of the install strategy`},
		{"webhook without v1 reviews", func(b *bundle.Bundle) { b.CSV.Spec.WebhookDefinitions[0].AdmissionReviewVersions = []string{"v1beta1"} }, "do not hold v1"},
		{"unsupported kind", func(b *bundle.Bundle) {
			b.Others["x.yaml"] = &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "apps/v1", "kind": "DaemonSet"}}
		}, "OLM does not install DaemonSet"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := loadBundle(t)
			c.break_(b)
			var msgs []string
			for _, err := range b.Validate() {
				msgs = append(msgs, err.Error())
			}
			if !strings.Contains(strings.Join(msgs, "\n"), c.want) {
				t.Errorf("Validate() = %q, want an error containing %q", msgs, c.want)
			}
		})
	}
}
