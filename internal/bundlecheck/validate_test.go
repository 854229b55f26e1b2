/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package bundlecheck_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/internal/bundle"
	"github.com/fieldops/fieldops/internal/bundlecheck"
	"github.com/fieldops/fieldops/internal/localcp"
)

// load reads the committed bundle.
func load(t *testing.T) *bundlecheck.Bundle {
	t.Helper()
	root, err := localcp.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundlecheck.Load(filepath.Join(root, bundle.BundleDir), filepath.Join(root, bundle.Dockerfile))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The committed bundle passes every check.
func TestCommittedBundleValid(t *testing.T) {
	for _, err := range load(t).Validate() {
		t.Error(err)
	}
}

func deployments(b *bundlecheck.Bundle) *[]v1alpha1.StrategyDeploymentSpec {
	return &b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
}

// Validate finds each kind of mistake, whether operator-framework/api's
// validators or the rules of rules.go catch it.
func TestValidateCatches(t *testing.T) {
	for _, c := range []struct {
		name   string
		break_ func(b *bundlecheck.Bundle)
		want   string
	}{
		// operator-framework/api's validators.
		{"CRD not owned", func(b *bundlecheck.Bundle) {
			b.CSV.Spec.CustomResourceDefinitions.Owned = b.CSV.Spec.CustomResourceDefinitions.Owned[1:]
		}, "is present in bundle \"fieldops.v0.2.0\" but not defined in CSV"},
		{"owned CRD missing", func(b *bundlecheck.Bundle) {
			b.V1CRDs = slices.DeleteFunc(b.V1CRDs, func(crd *apiextensionsv1.CustomResourceDefinition) bool { return crd.Name == "podsets.fieldops.dev" })
		}, `owned CRD "fieldops.dev/v1alpha1, Kind=PodSet" not found in bundle`},
		{"owned version not in the CRD", func(b *bundlecheck.Bundle) { b.CSV.Spec.CustomResourceDefinitions.Owned[0].Version = "v9" }, `owned CRD "fieldops.dev/v9, Kind=FieldPatch" not found`},
		{"channel name outside the naming convention", func(b *bundlecheck.Bundle) {
			b.Annotations["operators.operatorframework.io.bundle.channels.v1"] = "alpha"
			b.Annotations["operators.operatorframework.io.bundle.channel.default.v1"] = "alpha"
		}, `channel(s) ["alpha"] are not following the recommended naming convention`},
		{"alm-examples not JSON", func(b *bundlecheck.Bundle) { b.CSV.Annotations["alm-examples"] = "[{" }, "invalid example"},
		{"alm-example of a foreign kind", func(b *bundlecheck.Bundle) {
			b.CSV.Annotations["alm-examples"] = strings.Replace(b.CSV.Annotations["alm-examples"], `"kind": "PodSet"`, `"kind": "ReplicaSet"`, 1)
		}, "Kind=ReplicaSet: example must have a provided API"},
		{"no deployment", func(b *bundlecheck.Bundle) { *deployments(b) = nil }, "unable to find a deployment to install in the CSV"},
		{"no supported install mode", func(b *bundlecheck.Bundle) { b.CSV.Spec.InstallModes[3].Supported = false }, "none of InstallModeTypes are supported"},
		{"icon media type", func(b *bundlecheck.Bundle) { b.CSV.Spec.Icon[0].MediaType = "image/bmp" }, "does not have a valid mediatype"},
		{"minKubeVersion", func(b *bundlecheck.Bundle) { b.CSV.Spec.MinKubeVersion = "1.30" }, "MinKubeVersion has an invalid value"},
		// rules.go.
		{"wrong media type", func(b *bundlecheck.Bundle) {
			b.Annotations["operators.operatorframework.io.bundle.mediatype.v1"] = "plain+v0"
		}, `mediatype.v1 is "plain+v0", want "registry+v1"`},
		{"missing package", func(b *bundlecheck.Bundle) { delete(b.Annotations, "operators.operatorframework.io.bundle.package.v1") }, "metadata/annotations.yaml: no package"},
		{"default channel not a channel", func(b *bundlecheck.Bundle) {
			b.Annotations["operators.operatorframework.io.bundle.channel.default.v1"] = "stable"
		}, `default channel "stable" is not among the channels`},
		{"Dockerfile label differs", func(b *bundlecheck.Bundle) { b.Labels["operators.operatorframework.io.bundle.channels.v1"] = "beta" }, "bundle.Dockerfile: LABEL"},
		{"name", func(b *bundlecheck.Bundle) { b.CSV.Name = "fieldops.v9.9.9" }, "package.vVERSION"},
		{"listing", func(b *bundlecheck.Bundle) { b.CSV.Spec.Keywords = nil }, "CSV spec.keywords is empty"},
		{"install modes", func(b *bundlecheck.Bundle) { b.CSV.Spec.InstallModes = b.CSV.Spec.InstallModes[:3] }, "AllNamespaces 0 times"},
		{"strategy", func(b *bundlecheck.Bundle) { b.CSV.Spec.InstallStrategy.StrategyName = "helm" }, `install strategy "helm"`},
		{"no RBAC", func(b *bundlecheck.Bundle) {
			b.CSV.Spec.InstallStrategy.StrategySpec.Permissions, b.CSV.Spec.InstallStrategy.StrategySpec.ClusterPermissions = nil, nil
		}, "which has no permissions or clusterPermissions"},
		{"selector", func(b *bundlecheck.Bundle) { (*deployments(b))[0].Spec.Template.Labels = nil }, "does not match its pod template labels"},
		{"webhook of no deployment", func(b *bundlecheck.Bundle) { b.CSV.Spec.WebhookDefinitions[0].DeploymentName = "manager" }, `deploymentName "manager" is not a deployment of the install strategy`},
		{"webhook without v1 reviews", func(b *bundlecheck.Bundle) {
			b.CSV.Spec.WebhookDefinitions[0].AdmissionReviewVersions = []string{"v1beta1"}
		}, "do not hold v1"},
		{"no arch label", func(b *bundlecheck.Bundle) {
			delete(b.CSV.Labels, bundlecheck.ArchLabelPrefix+"amd64")
			delete(b.CSV.Labels, bundlecheck.ArchLabelPrefix+"arm64")
		}, "CSV has no operatorframework.io/arch.<arch>: supported label"},
		{"no os label", func(b *bundlecheck.Bundle) { delete(b.CSV.Labels, bundlecheck.OSLabelPrefix+"linux") }, "CSV has no operatorframework.io/os.<os>: supported label"},
		{"platform label not supported", func(b *bundlecheck.Bundle) { b.CSV.Labels[bundlecheck.OSLabelPrefix+"linux"] = "yes" }, `operatorframework.io/os.linux="yes", want supported`},
		{"descriptor path", func(b *bundlecheck.Bundle) {
			b.CSV.Spec.CustomResourceDefinitions.Owned[0].SpecDescriptors[0].Path = "nosuchfield"
		}, `specDescriptor "nosuchfield" is not a field`},
		{"undescribed field", func(b *bundlecheck.Bundle) {
			owned := &b.CSV.Spec.CustomResourceDefinitions.Owned[3]
			owned.StatusDescriptors = owned.StatusDescriptors[1:]
		}, "has no statusDescriptor for status.conditions"},
		{"unsupported kind", func(b *bundlecheck.Bundle) {
			b.Objects = append(b.Objects, &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": map[string]interface{}{"name": "x"}}})
		}, "OLM does not install DaemonSet x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := load(t)
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
