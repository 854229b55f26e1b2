/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package bundlecheck

import (
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// A rule is a check of the bundle that operator-framework/api's
// validators do not make; it adds what it finds to p.
type rule func(b *Bundle, p *problems)

// rules are what OLM (installing), operator-registry (the bundle format)
// and the scorecard (descriptors) check, and fieldops's own: the
// Dockerfile's labels and the platform labels.
var rules = []rule{
	checkAnnotations,
	checkDockerLabels,
	checkCSVName,
	checkListing,
	checkInstallModes,
	checkDeployments,
	checkWebhooks,
	checkPlatformLabels,
	checkDescriptors,
	checkKinds,
}

// fixedAnnotations are the annotations whose value the registry+v1
// format fixes.
var fixedAnnotations = map[string]string{
	"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
	"operators.operatorframework.io.bundle.manifests.v1": "manifests/",
	"operators.operatorframework.io.bundle.metadata.v1":  "metadata/",
}

// checkAnnotations wants metadata/annotations.yaml to have the fixed
// values, a package, and a default channel among the channels.
func checkAnnotations(b *Bundle, p *problems) {
	for k, want := range fixedAnnotations {
		if got := b.Annotations[k]; got != want {
			p.add("metadata/annotations.yaml: %s is %q, want %q", k, got, want)
		}
	}
	if b.Package == "" {
		p.add("metadata/annotations.yaml: no package")
	}
	if !slices.Contains(b.Channels, b.DefaultChannel) || b.DefaultChannel == "" {
		p.add("metadata/annotations.yaml: default channel %q is not among the channels %q", b.DefaultChannel, b.Channels)
	}
}

// checkDockerLabels wants bundle.Dockerfile to label the image with
// every annotation (the bundle image's labels are what a catalog reads).
func checkDockerLabels(b *Bundle, p *problems) {
	for k, v := range b.Annotations {
		if b.Labels[k] != v {
			p.add("bundle.Dockerfile: LABEL %s=%q, want %q as in metadata/annotations.yaml", k, b.Labels[k], v)
		}
	}
}

// checkCSVName wants the CSV named <package>.v<version>.
func checkCSVName(b *Bundle, p *problems) {
	if want := b.Package + ".v" + b.CSV.Spec.Version.String(); b.CSV.Name != want {
		p.add("CSV name %q, want %q (package.vVERSION)", b.CSV.Name, want)
	}
}

// checkListing wants what OperatorHub lists the operator by: a
// description, maintainers, keywords, links, a maturity, and a display
// name for each owned CRD.
func checkListing(b *Bundle, p *problems) {
	s := b.CSV.Spec
	for field, empty := range map[string]bool{
		"description": s.Description == "", "maintainers": len(s.Maintainers) == 0,
		"keywords": len(s.Keywords) == 0, "links": len(s.Links) == 0, "maturity": s.Maturity == "",
	} {
		if empty {
			p.add("CSV spec.%s is empty", field)
		}
	}
	for _, d := range s.CustomResourceDefinitions.Owned {
		if d.DisplayName == "" {
			p.add("CSV owned CRD %s has no displayName", d.Name)
		}
	}
}

// checkInstallModes wants each of the four install modes stated once
// (operator-framework/api wants one supported).
func checkInstallModes(b *Bundle, p *problems) {
	modes := map[v1alpha1.InstallModeType]int{}
	for _, m := range b.CSV.Spec.InstallModes {
		modes[m.Type]++
	}
	for _, t := range []v1alpha1.InstallModeType{v1alpha1.InstallModeTypeOwnNamespace, v1alpha1.InstallModeTypeSingleNamespace, v1alpha1.InstallModeTypeMultiNamespace, v1alpha1.InstallModeTypeAllNamespaces} {
		if modes[t] != 1 {
			p.add("CSV installModes state %s %d times, want once", t, modes[t])
		}
	}
}

// checkDeployments wants the deployment install strategy (OLM's only
// one), each of its deployments named once, with a selector matching its
// pod labels, a ServiceAccount that has rules, and an image for each
// container.
func checkDeployments(b *Bundle, p *problems) {
	s := b.CSV.Spec.InstallStrategy
	if s.StrategyName != v1alpha1.InstallStrategyNameDeployment {
		p.add("CSV install strategy %q, want %s", s.StrategyName, v1alpha1.InstallStrategyNameDeployment)
	}
	rbac := map[string]bool{}
	for _, perm := range slices.Concat(s.StrategySpec.Permissions, s.StrategySpec.ClusterPermissions) {
		rbac[perm.ServiceAccountName] = perm.ServiceAccountName != "" && len(perm.Rules) > 0
	}
	names := map[string]bool{}
	for _, d := range s.StrategySpec.DeploymentSpecs {
		if d.Name == "" || names[d.Name] {
			p.add("CSV install strategy deployment name %q is empty or repeated", d.Name)
		}
		names[d.Name] = true
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if d.Spec.Selector == nil || err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			p.add("deployment %s: selector %v does not match its pod template labels (%v)", d.Name, d.Spec.Selector, err)
		}
		if sa := d.Spec.Template.Spec.ServiceAccountName; !rbac[sa] {
			p.add("deployment %s runs as ServiceAccount %q, which has no permissions or clusterPermissions", d.Name, sa)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Image == "" {
				p.add("deployment %s container %s has no image", d.Name, c.Name)
			}
		}
	}
}

// checkWebhooks wants webhook definitions OLM can install: a fully
// qualified name (at least three DNS labels, as the apiserver requires
// of a webhook's name), a known type, rules (admission webhooks), a
// deployment of the install strategy to serve it, a target port, side
// effects None or NoneOnDryRun (dry-run requests reach it), and v1 among
// the AdmissionReview versions.
func checkWebhooks(b *Bundle, p *problems) {
	deployments := map[string]bool{}
	for _, d := range b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		deployments[d.Name] = true
	}
	for _, w := range b.CSV.Spec.WebhookDefinitions {
		if msgs := validation.IsDNS1123Subdomain(w.GenerateName); len(msgs) > 0 || strings.Count(w.GenerateName, ".") < 2 {
			p.add("webhook %q: generateName is not a fully qualified name of at least three labels", w.GenerateName)
		}
		switch w.Type {
		case v1alpha1.ValidatingAdmissionWebhook, v1alpha1.MutatingAdmissionWebhook:
			if len(w.Rules) == 0 {
				p.add("webhook %s has no rules", w.GenerateName)
			}
		case v1alpha1.ConversionWebhook:
		default:
			p.add("webhook %s: type %q is not an admission or conversion webhook", w.GenerateName, w.Type)
		}
		if !deployments[w.DeploymentName] {
			p.add("webhook %s: deploymentName %q is not a deployment of the install strategy", w.GenerateName, w.DeploymentName)
		}
		if w.TargetPort == nil {
			p.add("webhook %s has no targetPort", w.GenerateName)
		}
		if w.SideEffects == nil || !slices.Contains([]admissionregistrationv1.SideEffectClass{admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.SideEffectClassNoneOnDryRun}, *w.SideEffects) {
			p.add("webhook %s: sideEffects must be None or NoneOnDryRun", w.GenerateName)
		}
		if !slices.Contains(w.AdmissionReviewVersions, "v1") {
			p.add("webhook %s: admissionReviewVersions %v do not hold v1", w.GenerateName, w.AdmissionReviewVersions)
		}
	}
}

// Platform label prefixes of a CSV: operatorframework.io/arch.<arch>:
// supported and operatorframework.io/os.<os>: supported declare the
// platforms the operator's image runs on (OLM's multi-arch support).
const (
	ArchLabelPrefix = "operatorframework.io/arch."
	OSLabelPrefix   = "operatorframework.io/os."
)

// platformLabels are the platform label prefixes, each with what
// follows it.
var platformLabels = map[string]string{ArchLabelPrefix: "<arch>", OSLabelPrefix: "<os>"}

// checkPlatformLabels wants at least one arch and one os label, each
// with the value supported.
func checkPlatformLabels(b *Bundle, p *problems) {
	for prefix, what := range platformLabels {
		found := false
		for k, v := range b.CSV.Labels {
			if strings.HasPrefix(k, prefix) {
				found = true
				if v != "supported" {
					p.add("CSV label %s=%q, want supported", k, v)
				}
			}
		}
		if !found {
			p.add("CSV has no %s%s: supported label", prefix, what)
		}
	}
}

// checkDescriptors wants, as the scorecard's olm-spec-descriptors and
// olm-status-descriptors tests do, each descriptor of an owned CRD to
// name a field of its schema and every top-level field of spec and
// status described.
func checkDescriptors(b *Bundle, p *problems) {
	for _, d := range b.CSV.Spec.CustomResourceDefinitions.Owned {
		schema := b.schema(d.Name, d.Version)
		if schema == nil {
			continue // not in the bundle: a validator's error
		}
		var spec, status []string
		for _, desc := range d.SpecDescriptors {
			spec = append(spec, desc.Path)
		}
		for _, desc := range d.StatusDescriptors {
			status = append(status, desc.Path)
		}
		checkPaths(d.Name, "spec", spec, schema, p)
		checkPaths(d.Name, "status", status, schema, p)
	}
}

// schema is the OpenAPI schema of version of the bundle's CRD name.
func (b *Bundle) schema(name, version string) *apiextensionsv1.JSONSchemaProps {
	for _, crd := range b.V1CRDs {
		for _, v := range crd.Spec.Versions {
			if crd.Name == name && v.Name == version && v.Schema != nil {
				return v.Schema.OpenAPIV3Schema
			}
		}
	}
	return nil
}

// checkPaths wants each of paths (dot-separated, from root) to name a
// field of the schema, and each property of root to start one.
func checkPaths(crd, root string, paths []string, schema *apiextensionsv1.JSONSchemaProps, p *problems) {
	described := map[string]bool{}
	for _, path := range paths {
		described[strings.SplitN(path, ".", 2)[0]] = true
		if !schemaHasPath(schema, root+"."+path) {
			p.add("CSV %s %sDescriptor %q is not a field of the CRD's schema", crd, root, path)
		}
	}
	for field := range schema.Properties[root].Properties {
		if !described[field] {
			p.add("CSV %s has no %sDescriptor for %s.%s", crd, root, root, field)
		}
	}
}

// schemaHasPath reports whether the dot-separated path names a property
// in the schema (array items are walked through; a schema that preserves
// unknown fields accepts any rest of the path).
func schemaHasPath(s *apiextensionsv1.JSONSchemaProps, path string) bool {
	for _, part := range strings.Split(path, ".") {
		for s.Items != nil && s.Items.Schema != nil {
			s = s.Items.Schema
		}
		if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields && len(s.Properties) == 0 {
			return true
		}
		next, ok := s.Properties[part]
		if !ok {
			return false
		}
		s = &next
	}
	return true
}

// installable are the kinds OLM installs from a registry+v1 bundle
// besides the CSV and CRDs (operator-lifecycle-manager,
// pkg/controller/registry/resolver: the supported kinds of a bundle's
// manifests).
var installable = map[string]bool{
	"ClusterServiceVersion": true, "CustomResourceDefinition": true,
	"Secret": true, "ClusterRole": true, "ClusterRoleBinding": true, "ConfigMap": true,
	"ServiceAccount": true, "Service": true, "Role": true, "RoleBinding": true,
	"PrometheusRule": true, "ServiceMonitor": true, "PodDisruptionBudget": true,
	"PriorityClass": true, "VerticalPodAutoscaler": true, "ConsoleYAMLSample": true,
	"ConsoleQuickStart": true, "ConsoleCLIDownload": true, "ConsoleLink": true,
}

// checkKinds wants only kinds OLM installs from a bundle in manifests/.
func checkKinds(b *Bundle, p *problems) {
	for _, obj := range b.Objects {
		if !installable[obj.GetKind()] {
			p.add("manifests: OLM does not install %s %s from a bundle", obj.GetKind(), obj.GetName())
		}
	}
}
