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
//nolint:gocyclo // one check per rule of operator-framework's bundle validation, in its order.
func (b *Bundle) Validate() []error {
	var errs []error
	add := func(format string, args ...interface{}) { errs = append(errs, fmt.Errorf(format, args...)) }

	pkg := b.Annotations["operators.operatorframework.io.bundle.package.v1"]
	for _, k := range []string{"mediatype", "manifests", "metadata", "package", "channels", "channel.default"} {
		key := "operators.operatorframework.io.bundle." + k + ".v1"
		if b.Annotations[key] == "" {
			add("metadata/annotations.yaml: %s is missing", key)
		}
	}
	if mt := b.Annotations["operators.operatorframework.io.bundle.mediatype.v1"]; mt != "" && mt != "registry+v1" {
		add("metadata/annotations.yaml: media type %q, want registry+v1", mt)
	}
	if d := b.Annotations["operators.operatorframework.io.bundle.manifests.v1"]; d != "" && d != "manifests/" {
		add("metadata/annotations.yaml: manifests directory %q, want manifests/", d)
	}
	if d := b.Annotations["operators.operatorframework.io.bundle.metadata.v1"]; d != "" && d != "metadata/" {
		add("metadata/annotations.yaml: metadata directory %q, want metadata/", d)
	}
	if def := b.Annotations["operators.operatorframework.io.bundle.channel.default.v1"]; def != "" {
		found := false
		for _, c := range strings.Split(b.Annotations["operators.operatorframework.io.bundle.channels.v1"], ",") {
			found = found || strings.TrimSpace(c) == def
		}
		if !found {
			add("metadata/annotations.yaml: default channel %q is not among the channels", def)
		}
	}
	for _, c := range strings.Split(b.Annotations["operators.operatorframework.io.bundle.channels.v1"], ",") {
		if c = strings.TrimSpace(c); c != "" && !ChannelNameOK(c) {
			add("metadata/annotations.yaml: channel %q does not follow the channel naming convention (candidate, fast or stable, optionally with a suffix: stable-v1)", c)
		}
	}
	for k, v := range b.Annotations {
		if b.Labels[k] != v {
			add("bundle.Dockerfile: LABEL %s=%q, want %q as in metadata/annotations.yaml", k, b.Labels[k], v)
		}
	}

	csv := b.CSV
	if csv == nil {
		add("manifests/: no ClusterServiceVersion")
		return errs
	}
	errs = append(errs, validateCSV(csv, pkg)...)
	errs = append(errs, validatePlatformLabels(csv.Labels)...)

	owned := map[string]CRDDescription{}
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		owned[d.Name] = d
	}
	crdByName := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for file, crd := range b.CRDs {
		crdByName[crd.Name] = crd
		if _, ok := owned[crd.Name]; !ok {
			add("manifests/%s: CRD %s is not owned by the CSV", file, crd.Name)
		}
	}
	ownedKinds := map[schema.GroupVersionKind]bool{}
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		crd, ok := crdByName[d.Name]
		if !ok {
			add("CSV owns CRD %s, which is not in manifests/", d.Name)
			continue
		}
		if crd.Spec.Names.Kind != d.Kind {
			add("CSV owns %s as kind %s, the CRD says %s", d.Name, d.Kind, crd.Spec.Names.Kind)
		}
		v := servedVersion(crd, d.Version)
		if v == nil {
			add("CSV owns %s version %s, which the CRD does not serve", d.Name, d.Version)
			continue
		}
		ownedKinds[schema.GroupVersionKind{Group: crd.Spec.Group, Version: d.Version, Kind: d.Kind}] = true
		if d.DisplayName == "" || d.Description == "" {
			add("CSV owned CRD %s has no displayName or description", d.Name)
		}
		for _, ds := range []struct {
			root string
			list []Descriptor
		}{{"spec", d.SpecDescriptors}, {"status", d.StatusDescriptors}} {
			described := map[string]bool{}
			for _, desc := range ds.list {
				described[strings.SplitN(desc.Path, ".", 2)[0]] = true
				if !schemaHasPath(v.Schema, ds.root+"."+desc.Path) {
					add("CSV %s %sDescriptor %q is not a field of the CRD's schema", d.Name, ds.root, desc.Path)
				}
			}
			// The scorecard's olm-spec-descriptors and
			// olm-status-descriptors tests want every field described.
			for _, field := range topLevelFields(v.Schema, ds.root) {
				if !described[field] {
					add("CSV %s has no %sDescriptor for %s.%s", d.Name, ds.root, ds.root, field)
				}
			}
		}
	}

	var examples []map[string]interface{}
	if raw, ok := csv.Annotations["alm-examples"]; !ok {
		add("CSV has no alm-examples annotation")
	} else if err := json.Unmarshal([]byte(raw), &examples); err != nil {
		add("CSV alm-examples is not a JSON array of objects: %v", err)
	}
	seen := map[schema.GroupVersionKind]bool{}
	for i, ex := range examples {
		gvk := (&unstructured.Unstructured{Object: ex}).GroupVersionKind()
		if !ownedKinds[gvk] {
			add("alm-examples[%d]: %s is not an owned kind", i, gvk)
		}
		seen[gvk] = true
	}
	for gvk := range ownedKinds {
		if !seen[gvk] {
			add("alm-examples has no example of %s", gvk.Kind)
		}
	}

	for file, obj := range b.Others {
		if !supportedKinds[obj.GetKind()] {
			add("manifests/%s: OLM does not install %s objects from a bundle", file, obj.GetKind())
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs
}

//nolint:gocyclo // one check per CSV rule of operator-framework's validation, in its order.
func validateCSV(csv *ClusterServiceVersion, pkg string) []error {
	var errs []error
	add := func(format string, args ...interface{}) { errs = append(errs, fmt.Errorf(format, args...)) }
	s := csv.Spec
	if csv.APIVersion != "operators.coreos.com/v1alpha1" {
		add("CSV apiVersion %q, want operators.coreos.com/v1alpha1", csv.APIVersion)
	}
	if _, err := version.ParseSemantic(s.Version); err != nil {
		add("CSV spec.version %q is not semver: %v", s.Version, err)
	}
	if want := pkg + ".v" + s.Version; csv.Name != want {
		add("CSV name %q, want %q (package.vVERSION)", csv.Name, want)
	}
	if _, err := version.ParseSemantic(s.MinKubeVersion); err != nil {
		add("CSV spec.minKubeVersion %q is not semver: %v", s.MinKubeVersion, err)
	}
	for field, empty := range map[string]bool{
		"displayName": s.DisplayName == "", "description": s.Description == "", "provider.name": s.Provider.Name == "",
		"maintainers": len(s.Maintainers) == 0, "keywords": len(s.Keywords) == 0, "links": len(s.Links) == 0, "maturity": s.Maturity == "",
	} {
		if empty {
			add("CSV spec.%s is empty", field)
		}
	}
	if len(s.Icon) == 0 {
		add("CSV spec.icon is empty")
	}
	for _, icon := range s.Icon {
		if _, err := base64.StdEncoding.DecodeString(icon.Data); err != nil || icon.Data == "" {
			add("CSV icon is not base64 data: %v", err)
		}
		switch icon.MediaType {
		case "image/svg+xml", "image/png", "image/jpeg", "image/gif":
		default:
			add("CSV icon media type %q is not svg, png, jpeg or gif", icon.MediaType)
		}
	}
	modes := map[string]int{}
	supported := false
	for _, m := range s.InstallModes {
		modes[m.Type]++
		supported = supported || m.Supported
	}
	for _, t := range []string{InstallModeOwnNamespace, InstallModeSingleNamespace, InstallModeMultiNamespace, InstallModeAllNamespaces} {
		if modes[t] != 1 {
			add("CSV installModes state %s %d times, want once", t, modes[t])
		}
	}
	if !supported {
		add("CSV supports no install mode")
	}

	if s.Install.Strategy != "deployment" {
		add("CSV install strategy %q, want deployment", s.Install.Strategy)
	}
	if len(s.Install.Spec.Deployments) == 0 {
		add("CSV install strategy has no deployments")
	}
	rbac := map[string]bool{}
	for _, p := range append(append([]Permissions{}, s.Install.Spec.Permissions...), s.Install.Spec.ClusterPermissions...) {
		if p.ServiceAccountName == "" || len(p.Rules) == 0 {
			add("CSV permissions entry for %q has no ServiceAccount or no rules", p.ServiceAccountName)
		}
		rbac[p.ServiceAccountName] = true
	}
	names := map[string]bool{}
	for _, d := range s.Install.Spec.Deployments {
		if d.Name == "" || names[d.Name] {
			add("CSV install strategy deployment name %q is empty or repeated", d.Name)
		}
		names[d.Name] = true
		sel := d.Spec.Selector
		if sel == nil || len(sel.MatchLabels) == 0 {
			add("deployment %s has no selector", d.Name)
		}
		if sel != nil {
			for k, v := range sel.MatchLabels {
				if d.Spec.Template.Labels[k] != v {
					add("deployment %s selector %s=%s does not match its pod template labels", d.Name, k, v)
				}
			}
		}
		sa := d.Spec.Template.Spec.ServiceAccountName
		if sa == "" || !rbac[sa] {
			add("deployment %s runs as ServiceAccount %q, which has no permissions or clusterPermissions", d.Name, sa)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Image == "" {
				add("deployment %s container %s has no image", d.Name, c.Name)
			}
		}
	}
	errs = append(errs, validateWebhooks(s.WebhookDefinitions, names)...)
	return errs
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
