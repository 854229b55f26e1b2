/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package bundle

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"
)

// Bundle is a loaded registry+v1 bundle.
type Bundle struct {
	CSV *ClusterServiceVersion
	// CRDs in manifests/, by file name.
	CRDs map[string]*apiextensionsv1.CustomResourceDefinition
	// Others are the remaining objects in manifests/, by file name.
	Others map[string]*unstructured.Unstructured
	// Annotations of metadata/annotations.yaml.
	Annotations map[string]string
	// Labels set by LABEL lines of bundle.Dockerfile.
	Labels map[string]string
}

// Kinds OLM installs from a registry+v1 bundle besides the CSV and CRDs
// (operator-lifecycle-manager, pkg/controller/registry/resolver: the
// supported kinds of a bundle's manifests).
var supportedKinds = map[string]bool{
	"Secret": true, "ClusterRole": true, "ClusterRoleBinding": true, "ConfigMap": true,
	"ServiceAccount": true, "Service": true, "Role": true, "RoleBinding": true,
	"PrometheusRule": true, "ServiceMonitor": true, "PodDisruptionBudget": true,
	"PriorityClass": true, "VerticalPodAutoscaler": true, "ConsoleYAMLSample": true,
	"ConsoleQuickStart": true, "ConsoleCLIDownload": true, "ConsoleLink": true,
}

// Load reads the bundle in dir and its Dockerfile.
func Load(dir, dockerfilePath string) (*Bundle, error) {
	b := &Bundle{CRDs: map[string]*apiextensionsv1.CustomResourceDefinition{}, Others: map[string]*unstructured.Unstructured{}}
	entries, err := os.ReadDir(filepath.Join(dir, "manifests"))
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(dir, "manifests", e.Name()))
		if err != nil {
			return nil, err
		}
		objs, err := DecodeObjects(raw)
		if err != nil {
			return nil, fmt.Errorf("manifests/%s: %w", e.Name(), err)
		}
		if len(objs) != 1 {
			return nil, fmt.Errorf("manifests/%s: holds %d objects, want 1", e.Name(), len(objs))
		}
		switch objs[0].GetKind() {
		case "ClusterServiceVersion":
			if b.CSV != nil {
				return nil, fmt.Errorf("manifests/%s: a second ClusterServiceVersion", e.Name())
			}
			b.CSV = &ClusterServiceVersion{}
			if err := yaml.UnmarshalStrict(raw, b.CSV); err != nil {
				return nil, fmt.Errorf("manifests/%s: %w", e.Name(), err)
			}
		case "CustomResourceDefinition":
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(raw, crd); err != nil {
				return nil, fmt.Errorf("manifests/%s: %w", e.Name(), err)
			}
			b.CRDs[e.Name()] = crd
		default:
			b.Others[e.Name()] = objs[0]
		}
	}
	var ann struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := readYAML(filepath.Join(dir, "metadata", "annotations.yaml"), &ann); err != nil {
		return nil, err
	}
	b.Annotations = ann.Annotations
	df, err := os.ReadFile(dockerfilePath)
	if err != nil {
		return nil, err
	}
	b.Labels = dockerLabels(df)
	return b, nil
}

// Validate loads the bundle in dir and returns every problem found.
func Validate(dir, dockerfilePath string) []error {
	b, err := Load(dir, dockerfilePath)
	if err != nil {
		return []error{err}
	}
	return b.Validate()
}

// dockerLabels reads `LABEL key=value` lines.
func dockerLabels(df []byte) map[string]string {
	labels := map[string]string{}
	s := bufio.NewScanner(bytes.NewReader(df))
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if rest, ok := strings.CutPrefix(line, "LABEL "); ok {
			if k, v, ok := strings.Cut(strings.TrimSpace(rest), "="); ok {
				labels[k] = strings.Trim(v, `"`)
			}
		}
	}
	return labels
}

// Validate checks what OLM's bundle validators and the scorecard's
// olm-bundle-validation check:
//
//   - metadata/annotations.yaml: the operators.operatorframework.io.bundle.*
//     keys, media type registry+v1, manifests/ and metadata/ directories,
//     a package, channels and a default channel among them; the same
//     labels in bundle.Dockerfile;
//   - one ClusterServiceVersion named <package>.v<version>, semver
//     version and minKubeVersion, display name, description, provider,
//     maintainers, keywords, links, maturity, a decodable icon, all four
//     install modes with at least one supported;
//   - a deployment install strategy whose Deployments have names,
//     selectors matching their pod labels, and RBAC for their
//     ServiceAccounts; webhook definitions OLM can install (validateWebhooks);
//   - every CRD in manifests/ owned by the CSV and every owned CRD present
//     with that kind and a served version; descriptor paths that exist in
//     the CRD's schema;
//   - alm-examples: a JSON array of objects, each of an owned kind, and an
//     example for every owned kind;
//   - only kinds OLM installs from a bundle in manifests/;
//   - what operator-framework/api's good-practices and multiple-architectures
//     validators warn about: channel names that do not follow the
//     channel naming convention (candidate, fast, stable, optionally with
//     a suffix such as stable-v1), and a CSV without
//     operatorframework.io/arch.<arch> and operatorframework.io/os.<os>
//     labels saying which platforms its image supports.
//
// The checks are the rules of annotationRules and, when the bundle has a
// CSV, of csvBundleRules; the problems are sorted by message, except that
// a bundle without a CSV stops at that problem, in the rules' order.
func (b *Bundle) Validate() []error {
	var p problems
	for _, rule := range annotationRules {
		rule(b, &p)
	}
	if b.CSV == nil {
		p.add("manifests/: no ClusterServiceVersion")
		return p
	}
	for _, rule := range csvBundleRules {
		rule(b, &p)
	}
	sort.Slice(p, func(i, j int) bool { return p[i].Error() < p[j].Error() })
	return p
}

// problems are the problems a validation found, one error each.
type problems []error

// add records a problem, formatted as fmt.Errorf formats.
func (p *problems) add(format string, args ...interface{}) {
	*p = append(*p, fmt.Errorf(format, args...))
}

// A bundleRule is one check of Validate; it adds what it finds to p.
type bundleRule func(b *Bundle, p *problems)

// annotationRules check metadata/annotations.yaml and bundle.Dockerfile,
// in operator-framework's order.
var annotationRules = []bundleRule{
	checkAnnotationKeys,
	checkMediaType,
	checkDirectories,
	checkDefaultChannel,
	checkChannelNames,
	checkDockerLabels,
}

// csvBundleRules check the CSV and what it owns, in operator-framework's
// order; they run when the bundle has a CSV.
var csvBundleRules = []bundleRule{
	func(b *Bundle, p *problems) { *p = append(*p, validateCSV(b.CSV, b.pkg())...) },
	func(b *Bundle, p *problems) { *p = append(*p, validatePlatformLabels(b.CSV.Labels)...) },
	checkCRDsOwned,
	checkOwnedCRDs,
	checkExamples,
	checkOtherKinds,
}

// annotation is the value of operators.operatorframework.io.bundle.<key>.v1.
func (b *Bundle) annotation(key string) string {
	return b.Annotations["operators.operatorframework.io.bundle."+key+".v1"]
}

// pkg is the bundle's package name.
func (b *Bundle) pkg() string { return b.annotation("package") }

// channels are the bundle's channels, trimmed (an empty name stays).
func (b *Bundle) channels() []string {
	var out []string
	for _, c := range strings.Split(b.annotation("channels"), ",") {
		out = append(out, strings.TrimSpace(c))
	}
	return out
}

func checkAnnotationKeys(b *Bundle, p *problems) {
	for _, k := range []string{"mediatype", "manifests", "metadata", "package", "channels", "channel.default"} {
		if b.annotation(k) == "" {
			p.add("metadata/annotations.yaml: %s is missing", "operators.operatorframework.io.bundle."+k+".v1")
		}
	}
}

func checkMediaType(b *Bundle, p *problems) {
	if mt := b.annotation("mediatype"); mt != "" && mt != "registry+v1" {
		p.add("metadata/annotations.yaml: media type %q, want registry+v1", mt)
	}
}

func checkDirectories(b *Bundle, p *problems) {
	if d := b.annotation("manifests"); d != "" && d != "manifests/" {
		p.add("metadata/annotations.yaml: manifests directory %q, want manifests/", d)
	}
	if d := b.annotation("metadata"); d != "" && d != "metadata/" {
		p.add("metadata/annotations.yaml: metadata directory %q, want metadata/", d)
	}
}

func checkDefaultChannel(b *Bundle, p *problems) {
	if def := b.annotation("channel.default"); def != "" && !slices.Contains(b.channels(), def) {
		p.add("metadata/annotations.yaml: default channel %q is not among the channels", def)
	}
}

func checkChannelNames(b *Bundle, p *problems) {
	for _, c := range b.channels() {
		if c != "" && !ChannelNameOK(c) {
			p.add("metadata/annotations.yaml: channel %q does not follow the channel naming convention (candidate, fast or stable, optionally with a suffix: stable-v1)", c)
		}
	}
}

func checkDockerLabels(b *Bundle, p *problems) {
	for k, v := range b.Annotations {
		if b.Labels[k] != v {
			p.add("bundle.Dockerfile: LABEL %s=%q, want %q as in metadata/annotations.yaml", k, b.Labels[k], v)
		}
	}
}

// checkCRDsOwned wants every CRD in manifests/ owned by the CSV.
func checkCRDsOwned(b *Bundle, p *problems) {
	owned := map[string]bool{}
	for _, d := range b.CSV.Spec.CustomResourceDefinitions.Owned {
		owned[d.Name] = true
	}
	for file, crd := range b.CRDs {
		if !owned[crd.Name] {
			p.add("manifests/%s: CRD %s is not owned by the CSV", file, crd.Name)
		}
	}
}

// crdByName are the bundle's CRDs by name.
func (b *Bundle) crdByName() map[string]*apiextensionsv1.CustomResourceDefinition {
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range b.CRDs {
		out[crd.Name] = crd
	}
	return out
}

// checkOwnedCRDs wants every CRD the CSV owns in manifests/, of the kind
// the CSV says, serving the version it says, described, and with
// descriptors for exactly the fields of its schema.
func checkOwnedCRDs(b *Bundle, p *problems) {
	crds := b.crdByName()
	for _, d := range b.CSV.Spec.CustomResourceDefinitions.Owned {
		crd, ok := crds[d.Name]
		if !ok {
			p.add("CSV owns CRD %s, which is not in manifests/", d.Name)
			continue
		}
		if crd.Spec.Names.Kind != d.Kind {
			p.add("CSV owns %s as kind %s, the CRD says %s", d.Name, d.Kind, crd.Spec.Names.Kind)
		}
		v := servedVersion(crd, d.Version)
		if v == nil {
			p.add("CSV owns %s version %s, which the CRD does not serve", d.Name, d.Version)
			continue
		}
		if d.DisplayName == "" || d.Description == "" {
			p.add("CSV owned CRD %s has no displayName or description", d.Name)
		}
		checkDescriptors(d.Name, "spec", d.SpecDescriptors, v.Schema, p)
		checkDescriptors(d.Name, "status", d.StatusDescriptors, v.Schema, p)
	}
}

// checkDescriptors wants each descriptor of root (spec or status) to name
// a field of the schema and, as the scorecard's olm-spec-descriptors and
// olm-status-descriptors tests do, every top-level field described.
func checkDescriptors(crd, root string, list []Descriptor, schema *apiextensionsv1.CustomResourceValidation, p *problems) {
	described := map[string]bool{}
	for _, desc := range list {
		described[strings.SplitN(desc.Path, ".", 2)[0]] = true
		if !schemaHasPath(schema, root+"."+desc.Path) {
			p.add("CSV %s %sDescriptor %q is not a field of the CRD's schema", crd, root, desc.Path)
		}
	}
	for _, field := range topLevelFields(schema, root) {
		if !described[field] {
			p.add("CSV %s has no %sDescriptor for %s.%s", crd, root, root, field)
		}
	}
}

// ownedKinds are the kinds the CSV owns whose CRD is in manifests/ and
// serves the owned version.
func (b *Bundle) ownedKinds() map[schema.GroupVersionKind]bool {
	crds := b.crdByName()
	kinds := map[schema.GroupVersionKind]bool{}
	for _, d := range b.CSV.Spec.CustomResourceDefinitions.Owned {
		if crd, ok := crds[d.Name]; ok && servedVersion(crd, d.Version) != nil {
			kinds[schema.GroupVersionKind{Group: crd.Spec.Group, Version: d.Version, Kind: d.Kind}] = true
		}
	}
	return kinds
}

// checkExamples wants alm-examples a JSON array of objects, each of an
// owned kind, with an example of every owned kind.
func checkExamples(b *Bundle, p *problems) {
	var examples []map[string]interface{}
	if raw, ok := b.CSV.Annotations["alm-examples"]; !ok {
		p.add("CSV has no alm-examples annotation")
	} else if err := json.Unmarshal([]byte(raw), &examples); err != nil {
		p.add("CSV alm-examples is not a JSON array of objects: %v", err)
	}
	owned := b.ownedKinds()
	seen := map[schema.GroupVersionKind]bool{}
	for i, ex := range examples {
		gvk := (&unstructured.Unstructured{Object: ex}).GroupVersionKind()
		if !owned[gvk] {
			p.add("alm-examples[%d]: %s is not an owned kind", i, gvk)
		}
		seen[gvk] = true
	}
	for gvk := range owned {
		if !seen[gvk] {
			p.add("alm-examples has no example of %s", gvk.Kind)
		}
	}
}

// checkOtherKinds wants only kinds OLM installs from a bundle.
func checkOtherKinds(b *Bundle, p *problems) {
	for file, obj := range b.Others {
		if !supportedKinds[obj.GetKind()] {
			p.add("manifests/%s: OLM does not install %s objects from a bundle", file, obj.GetKind())
		}
	}
}

// A csvRule is one check of validateCSV; it adds what it finds to p.
type csvRule func(csv *ClusterServiceVersion, pkg string, p *problems)

// csvRules are the CSV's checks, in operator-framework's order.
var csvRules = []csvRule{
	checkCSVIdentity,
	checkCSVRequiredFields,
	checkCSVIcons,
	checkCSVInstallModes,
	checkCSVInstallStrategy,
	checkCSVDeployments,
	func(csv *ClusterServiceVersion, _ string, p *problems) {
		*p = append(*p, validateWebhooks(csv.Spec.WebhookDefinitions, deploymentNames(&csv.Spec))...)
	},
}

// validateCSV checks the CSV of package pkg by csvRules.
func validateCSV(csv *ClusterServiceVersion, pkg string) []error {
	var p problems
	for _, rule := range csvRules {
		rule(csv, pkg, &p)
	}
	return p
}

// checkCSVIdentity wants the CSV's API version, a semver version and
// minKubeVersion, and the name <package>.v<version>.
func checkCSVIdentity(csv *ClusterServiceVersion, pkg string, p *problems) {
	s := csv.Spec
	if csv.APIVersion != "operators.coreos.com/v1alpha1" {
		p.add("CSV apiVersion %q, want operators.coreos.com/v1alpha1", csv.APIVersion)
	}
	if _, err := version.ParseSemantic(s.Version); err != nil {
		p.add("CSV spec.version %q is not semver: %v", s.Version, err)
	}
	if want := pkg + ".v" + s.Version; csv.Name != want {
		p.add("CSV name %q, want %q (package.vVERSION)", csv.Name, want)
	}
	if _, err := version.ParseSemantic(s.MinKubeVersion); err != nil {
		p.add("CSV spec.minKubeVersion %q is not semver: %v", s.MinKubeVersion, err)
	}
}

func checkCSVRequiredFields(csv *ClusterServiceVersion, _ string, p *problems) {
	s := csv.Spec
	for field, empty := range map[string]bool{
		"displayName": s.DisplayName == "", "description": s.Description == "", "provider.name": s.Provider.Name == "",
		"maintainers": len(s.Maintainers) == 0, "keywords": len(s.Keywords) == 0, "links": len(s.Links) == 0, "maturity": s.Maturity == "",
	} {
		if empty {
			p.add("CSV spec.%s is empty", field)
		}
	}
}

// checkCSVIcons wants at least one icon, each base64 data of an image
// type OLM shows.
func checkCSVIcons(csv *ClusterServiceVersion, _ string, p *problems) {
	if len(csv.Spec.Icon) == 0 {
		p.add("CSV spec.icon is empty")
	}
	for _, icon := range csv.Spec.Icon {
		if _, err := base64.StdEncoding.DecodeString(icon.Data); err != nil || icon.Data == "" {
			p.add("CSV icon is not base64 data: %v", err)
		}
		switch icon.MediaType {
		case "image/svg+xml", "image/png", "image/jpeg", "image/gif":
		default:
			p.add("CSV icon media type %q is not svg, png, jpeg or gif", icon.MediaType)
		}
	}
}

// checkCSVInstallModes wants each of the four install modes stated once,
// at least one supported.
func checkCSVInstallModes(csv *ClusterServiceVersion, _ string, p *problems) {
	modes := map[string]int{}
	supported := false
	for _, m := range csv.Spec.InstallModes {
		modes[m.Type]++
		supported = supported || m.Supported
	}
	for _, t := range []string{InstallModeOwnNamespace, InstallModeSingleNamespace, InstallModeMultiNamespace, InstallModeAllNamespaces} {
		if modes[t] != 1 {
			p.add("CSV installModes state %s %d times, want once", t, modes[t])
		}
	}
	if !supported {
		p.add("CSV supports no install mode")
	}
}

// checkCSVInstallStrategy wants a deployment strategy with deployments,
// and every permissions entry with a ServiceAccount and rules.
func checkCSVInstallStrategy(csv *ClusterServiceVersion, _ string, p *problems) {
	s := csv.Spec
	if s.Install.Strategy != "deployment" {
		p.add("CSV install strategy %q, want deployment", s.Install.Strategy)
	}
	if len(s.Install.Spec.Deployments) == 0 {
		p.add("CSV install strategy has no deployments")
	}
	for _, perm := range permissions(&s) {
		if perm.ServiceAccountName == "" || len(perm.Rules) == 0 {
			p.add("CSV permissions entry for %q has no ServiceAccount or no rules", perm.ServiceAccountName)
		}
	}
}

// permissions are the install strategy's permissions, then its
// clusterPermissions.
func permissions(s *CSVSpec) []Permissions {
	return append(append([]Permissions{}, s.Install.Spec.Permissions...), s.Install.Spec.ClusterPermissions...)
}

// deploymentNames are the names of the install strategy's deployments.
func deploymentNames(s *CSVSpec) map[string]bool {
	names := map[string]bool{}
	for _, d := range s.Install.Spec.Deployments {
		names[d.Name] = true
	}
	return names
}

// checkCSVDeployments wants each deployment named once, with a selector
// that matches its pod labels, a ServiceAccount with permissions, and an
// image for each container.
func checkCSVDeployments(csv *ClusterServiceVersion, _ string, p *problems) {
	rbac := map[string]bool{}
	for _, perm := range permissions(&csv.Spec) {
		rbac[perm.ServiceAccountName] = true
	}
	names := map[string]bool{}
	for _, d := range csv.Spec.Install.Spec.Deployments {
		if d.Name == "" || names[d.Name] {
			p.add("CSV install strategy deployment name %q is empty or repeated", d.Name)
		}
		names[d.Name] = true
		sel := d.Spec.Selector
		if sel == nil || len(sel.MatchLabels) == 0 {
			p.add("deployment %s has no selector", d.Name)
		}
		if sel != nil {
			for k, v := range sel.MatchLabels {
				if d.Spec.Template.Labels[k] != v {
					p.add("deployment %s selector %s=%s does not match its pod template labels", d.Name, k, v)
				}
			}
		}
		if sa := d.Spec.Template.Spec.ServiceAccountName; sa == "" || !rbac[sa] {
			p.add("deployment %s runs as ServiceAccount %q, which has no permissions or clusterPermissions", d.Name, sa)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Image == "" {
				p.add("deployment %s container %s has no image", d.Name, c.Name)
			}
		}
	}
}

// validateWebhooks checks the CSV's webhook definitions for what OLM
// needs to install them: a fully qualified name (at least three
// DNS labels, as the apiserver requires of a webhook's name), a known
// type, a deployment of the install strategy to serve it, a target port,
// side effects None or NoneOnDryRun (dry-run requests reach it), v1
// among the AdmissionReview versions, and rules (admission webhooks).
func validateWebhooks(defs []WebhookDescription, deployments map[string]bool) []error {
	var errs []error
	add := func(format string, args ...interface{}) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, w := range defs {
		if msgs := validation.IsDNS1123Subdomain(w.GenerateName); len(msgs) > 0 || strings.Count(w.GenerateName, ".") < 2 {
			add("webhook %q: generateName is not a fully qualified name of at least three labels", w.GenerateName)
		}
		switch w.Type {
		case ValidatingAdmissionWebhook, MutatingAdmissionWebhook:
			if len(w.Rules) == 0 {
				add("webhook %s has no rules", w.GenerateName)
			}
		case ConversionWebhook:
		default:
			add("webhook %s: type %q is not %s, %s or %s", w.GenerateName, w.Type, ValidatingAdmissionWebhook, MutatingAdmissionWebhook, ConversionWebhook)
		}
		if !deployments[w.DeploymentName] {
			add("webhook %s: deploymentName %q is not a deployment of the install strategy", w.GenerateName, w.DeploymentName)
		}
		if w.TargetPort == nil {
			add("webhook %s has no targetPort", w.GenerateName)
		}
		if w.SideEffects == nil || (*w.SideEffects != admissionregistrationv1.SideEffectClassNone && *w.SideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun) {
			add("webhook %s: sideEffects must be None or NoneOnDryRun", w.GenerateName)
		}
		if !slices.Contains(w.AdmissionReviewVersions, "v1") {
			add("webhook %s: admissionReviewVersions %v do not hold v1", w.GenerateName, w.AdmissionReviewVersions)
		}
	}
	return errs
}

func servedVersion(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if v := &crd.Spec.Versions[i]; v.Name == name && v.Served {
			return v
		}
	}
	return nil
}

// topLevelFields are the property names of root (spec or status) in the
// schema, sorted.
func topLevelFields(v *apiextensionsv1.CustomResourceValidation, root string) []string {
	if v == nil || v.OpenAPIV3Schema == nil {
		return nil
	}
	var out []string
	for name := range v.OpenAPIV3Schema.Properties[root].Properties {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// schemaHasPath reports whether the dot-separated path names a property
// in the schema (array items are walked through; a schema that preserves
// unknown fields accepts any rest of the path).
func schemaHasPath(v *apiextensionsv1.CustomResourceValidation, path string) bool {
	if v == nil || v.OpenAPIV3Schema == nil {
		return false
	}
	s := v.OpenAPIV3Schema
	for _, part := range strings.Split(path, ".") {
		for s.Items != nil && s.Items.Schema != nil {
			s = s.Items.Schema
		}
		if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields && len(s.Properties) == 0 {
			return true
		}
		p, ok := s.Properties[part]
		if !ok {
			return false
		}
		s = &p
	}
	return true
}

// ChannelNameOK reports whether an OLM channel name follows the channel
// naming convention of the operator framework
// (olm.operatorframework.io/docs/best-practices/channel-naming), which
// operator-framework/api's good-practices validator checks: candidate,
// fast or stable, alone or followed by "-" and a suffix (stable-v1).
func ChannelNameOK(name string) bool {
	for _, p := range []string{"candidate", "fast", "stable"} {
		if name == p || strings.HasPrefix(name, p+"-") {
			return true
		}
	}
	return false
}

// Platform label prefixes of a CSV: operatorframework.io/arch.<arch>:
// supported and operatorframework.io/os.<os>: supported declare the
// platforms the operator's image runs on (OLM's multi-arch support;
// operator-framework/api's multiple-architectures validator).
const (
	ArchLabelPrefix = "operatorframework.io/arch."
	OSLabelPrefix   = "operatorframework.io/os."
)

// validatePlatformLabels wants at least one arch and one os label, each
// with the value supported.
func validatePlatformLabels(labels map[string]string) []error {
	var errs []error
	arch, os := false, false
	for k, v := range labels {
		isArch, isOS := strings.HasPrefix(k, ArchLabelPrefix), strings.HasPrefix(k, OSLabelPrefix)
		if (isArch || isOS) && v != "supported" {
			errs = append(errs, fmt.Errorf("CSV label %s=%q, want supported", k, v))
		}
		arch, os = arch || isArch, os || isOS
	}
	if !arch {
		errs = append(errs, fmt.Errorf("CSV has no %s<arch>: supported label", ArchLabelPrefix))
	}
	if !os {
		errs = append(errs, fmt.Errorf("CSV has no %s<os>: supported label", OSLabelPrefix))
	}
	return errs
}
