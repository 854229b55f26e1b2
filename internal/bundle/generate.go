/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package bundle

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Paths of the bundle, relative to the module root.
const (
	BundleDir       = "bundle"
	ManifestsDir    = "bundle/manifests"
	AnnotationsFile = "bundle/metadata/annotations.yaml"
	ScorecardFile   = "bundle/tests/scorecard/config.yaml"
	Dockerfile      = "bundle.Dockerfile"
	csvBase         = "config/manifests/bases/fieldops.clusterserviceversion.yaml"
	iconFile        = "config/manifests/bases/icon.svg"
	scorecardBase   = "config/scorecard/config.yaml"
)

// Options of Generate.
type Options struct {
	// Root is the module root, holding config/.
	Root string
	// Version is the operator version, semver without a leading v.
	Version string
	// Image is the manager image; default DefaultImageRepo:v<Version>.
	Image string
	// Package is the OLM package name; default fieldops.
	Package string
	// Channels the bundle is published in; default [candidate] (the
	// channel naming convention's channel for pre-releases). The first
	// one is the default channel.
	Channels []string
}

// DefaultImageRepo is the repository of the manager image a release
// builds (make release).
const DefaultImageRepo = "ghcr.io/fieldops/manager"

func (o *Options) defaults() {
	if o.Image == "" {
		o.Image = DefaultImageRepo + ":v" + o.Version
	}
	if o.Package == "" {
		o.Package = "fieldops"
	}
	if len(o.Channels) == 0 {
		o.Channels = []string{"candidate"}
	}
}

// Annotations are the bundle's metadata/annotations.yaml, which
// bundle.Dockerfile repeats as labels.
func Annotations(pkg string, channels []string) map[string]string {
	return map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         pkg,
		"operators.operatorframework.io.bundle.channels.v1":        strings.Join(channels, ","),
		"operators.operatorframework.io.bundle.channel.default.v1": channels[0],
		"operators.operatorframework.io.test.mediatype.v1":         "scorecard+v1",
		"operators.operatorframework.io.test.config.v1":            "tests/scorecard/",
	}
}

// Generate renders config/default and config/samples and returns every
// file of the bundle by its path relative to Root:
//
//   - bundle/manifests: the ClusterServiceVersion (the base in
//     config/manifests/bases with name, version, image, icon, alm-examples,
//     the install strategy and the account-impersonation webhook filled
//     in), the CRDs, the metrics Service
//     and the ClusterRoles not bound to the manager (metrics reader,
//     tenant roles);
//   - bundle/metadata/annotations.yaml, bundle/tests/scorecard/config.yaml
//     and bundle.Dockerfile.
//
// The Namespace, ServiceAccount, Deployment and the manager's Roles and
// bindings become the install strategy, which OLM turns back into objects.
// A kind Generate has no place for is an error, so adding an object to
// config/default needs a decision here.
func Generate(o Options) (map[string][]byte, error) {
	o.defaults()
	files := map[string][]byte{}
	objs, err := Render(filepath.Join(o.Root, "config", "default"))
	if err != nil {
		return nil, err
	}
	samples, err := Render(filepath.Join(o.Root, "config", "samples"))
	if err != nil {
		return nil, err
	}
	csv := &ClusterServiceVersion{}
	if err := readYAML(filepath.Join(o.Root, csvBase), csv); err != nil {
		return nil, err
	}
	icon, err := os.ReadFile(filepath.Join(o.Root, iconFile))
	if err != nil {
		return nil, err
	}

	strategy, webhooks, rest, err := install(objs, o.Image)
	if err != nil {
		return nil, err
	}
	for _, obj := range rest {
		name, b, err := manifestFile(obj)
		if err != nil {
			return nil, err
		}
		files[filepath.Join(ManifestsDir, name)] = b
	}

	// alm-examples are objects of the owned kinds: the samples' accounts
	// (ServiceAccounts, Roles) are left out.
	examples := make([]map[string]interface{}, 0, len(samples))
	for _, s := range samples {
		if s.GroupVersionKind().Group == "fieldops.dev" {
			examples = append(examples, s.Object)
		}
	}
	almExamples, err := json.MarshalIndent(examples, "", "  ")
	if err != nil {
		return nil, err
	}
	csv.Name = o.Package + ".v" + o.Version
	csv.Namespace = ""
	csv.Spec.Version = o.Version
	if csv.Annotations == nil {
		csv.Annotations = map[string]string{}
	}
	csv.Annotations["alm-examples"] = string(almExamples)
	csv.Annotations["containerImage"] = o.Image
	csv.Spec.Icon = []Icon{{Data: base64.StdEncoding.EncodeToString(icon), MediaType: "image/svg+xml"}}
	csv.Spec.Install = NamedInstallStrategy{Strategy: "deployment", Spec: strategy}
	csv.Spec.WebhookDefinitions = webhooks
	b, err := yaml.Marshal(csv)
	if err != nil {
		return nil, err
	}
	files[filepath.Join(ManifestsDir, o.Package+".clusterserviceversion.yaml")] = b

	ann := Annotations(o.Package, o.Channels)
	if files[AnnotationsFile], err = yaml.Marshal(map[string]interface{}{"annotations": ann}); err != nil {
		return nil, err
	}
	files[Dockerfile] = dockerfile(ann)
	if files[ScorecardFile], err = os.ReadFile(filepath.Join(o.Root, scorecardBase)); err != nil {
		return nil, err
	}
	return files, nil
}

// install is installStrategy and the account webhook its Deployment
// serves (accountWebhook).
func install(objs []*unstructured.Unstructured, image string) (InstallStrategySpec, []WebhookDescription, []*unstructured.Unstructured, error) {
	spec, rest, err := installStrategy(objs, image)
	if err != nil {
		return spec, nil, nil, err
	}
	webhooks, err := accountWebhook(objs, &spec)
	return spec, webhooks, rest, err
}

// installStrategy takes the manager's objects out of objs: its Deployment
// (with image), the rules bound to its ServiceAccount, and drops the
// Namespace and ServiceAccount OLM creates. It returns the other objects,
// which go to bundle/manifests.
//
//nolint:gocyclo // one case per kind config/default holds, so a new kind is an error here.
func installStrategy(objs []*unstructured.Unstructured, image string) (InstallStrategySpec, []*unstructured.Unstructured, error) {
	var (
		spec           InstallStrategySpec
		rest           []*unstructured.Unstructured
		roles          = map[string][]rbacv1.PolicyRule{}
		clusterRoles   = map[string]*unstructured.Unstructured{}
		bindings       []*rbacv1.RoleBinding
		clusterBinds   []*rbacv1.ClusterRoleBinding
		serviceAccount = map[string]bool{}
	)
	for _, obj := range objs {
		switch obj.GroupVersionKind().GroupKind().String() {
		case "Namespace", "ServiceAccount":
			if obj.GetKind() == "ServiceAccount" {
				serviceAccount[obj.GetName()] = true
			}
		case "Deployment.apps":
			d := &appsv1.Deployment{}
			if err := fromUnstructured(obj, d); err != nil {
				return spec, nil, err
			}
			for i := range d.Spec.Template.Spec.Containers {
				if d.Spec.Template.Spec.Containers[i].Name == "manager" {
					d.Spec.Template.Spec.Containers[i].Image = image
				}
			}
			spec.Deployments = append(spec.Deployments, DeploymentSpec{Name: d.Name, Label: d.Labels, Spec: d.Spec})
		case "Role.rbac.authorization.k8s.io":
			r := &rbacv1.Role{}
			if err := fromUnstructured(obj, r); err != nil {
				return spec, nil, err
			}
			roles[r.Name] = r.Rules
		case "RoleBinding.rbac.authorization.k8s.io":
			rb := &rbacv1.RoleBinding{}
			if err := fromUnstructured(obj, rb); err != nil {
				return spec, nil, err
			}
			bindings = append(bindings, rb)
		case "ClusterRole.rbac.authorization.k8s.io":
			clusterRoles[obj.GetName()] = obj
		case "ClusterRoleBinding.rbac.authorization.k8s.io":
			crb := &rbacv1.ClusterRoleBinding{}
			if err := fromUnstructured(obj, crb); err != nil {
				return spec, nil, err
			}
			clusterBinds = append(clusterBinds, crb)
		case "CustomResourceDefinition.apiextensions.k8s.io", "Service":
			rest = append(rest, obj)
		case "NetworkPolicy.networking.k8s.io":
			// Not a kind every OLM release installs from a bundle; the
			// operator's guide applies config/network-policy separately.
		case "MutatingAdmissionPolicy.admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding.admissionregistration.k8s.io":
			// OLM installs no admission policy from a bundle: the manager
			// adds the finalizers itself (one write more per object); the
			// operator's guide applies config/admission separately.
		case "ValidatingAdmissionPolicy.admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io":
			// Nor a validating policy: the manager serves the
			// account-impersonation policy's rule as a webhook the CSV
			// declares (accountWebhook), and refuses a patch over the
			// patch-limits policy's limits itself.
		default:
			return spec, nil, fmt.Errorf("config/default has a %s %s that the bundle has no place for", obj.GetKind(), obj.GetName())
		}
	}
	perms := map[string][]rbacv1.PolicyRule{}
	for _, rb := range bindings {
		for _, s := range rb.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && serviceAccount[s.Name] {
				rules, ok := roles[rb.RoleRef.Name]
				if !ok || rb.RoleRef.Kind != "Role" {
					return spec, nil, fmt.Errorf("RoleBinding %s binds %s %s, which config/default does not define", rb.Name, rb.RoleRef.Kind, rb.RoleRef.Name)
				}
				perms[s.Name] = append(perms[s.Name], rules...)
			}
		}
	}
	clusterPerms := map[string][]rbacv1.PolicyRule{}
	bound := map[string]bool{}
	for _, crb := range clusterBinds {
		for _, s := range crb.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && serviceAccount[s.Name] {
				obj, ok := clusterRoles[crb.RoleRef.Name]
				if !ok {
					return spec, nil, fmt.Errorf("ClusterRoleBinding %s binds ClusterRole %s, which config/default does not define", crb.Name, crb.RoleRef.Name)
				}
				cr := &rbacv1.ClusterRole{}
				if err := fromUnstructured(obj, cr); err != nil {
					return spec, nil, err
				}
				clusterPerms[s.Name] = append(clusterPerms[s.Name], cr.Rules...)
				bound[cr.Name] = true
			}
		}
	}
	for _, obj := range objs {
		if obj.GetKind() == "ClusterRole" && !bound[obj.GetName()] {
			rest = append(rest, obj)
		}
	}
	spec.Permissions = sortedPermissions(perms)
	spec.ClusterPermissions = sortedPermissions(clusterPerms)
	return spec, rest, nil
}

func sortedPermissions(m map[string][]rbacv1.PolicyRule) []Permissions {
	var out []Permissions
	for sa, rules := range m {
		out = append(out, Permissions{ServiceAccountName: sa, Rules: rules})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ServiceAccountName < out[j].ServiceAccountName })
	return out
}

// manifestFile names a manifest the way operator-sdk does: CRDs as
// <group>_<plural>.yaml, others as <name>_<group>_<version>_<kind>.yaml,
// lower case. The namespace is dropped: OLM installs into its own.
func manifestFile(obj *unstructured.Unstructured) (string, []byte, error) {
	obj = obj.DeepCopy()
	obj.SetNamespace("")
	var name string
	if obj.GetKind() == "CustomResourceDefinition" {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := fromUnstructured(obj, crd); err != nil {
			return "", nil, err
		}
		name = crd.Spec.Group + "_" + crd.Spec.Names.Plural + ".yaml"
	} else {
		gvk := obj.GroupVersionKind()
		parts := []string{obj.GetName()}
		if gvk.Group != "" {
			parts = append(parts, gvk.Group)
		}
		parts = append(parts, gvk.Version, gvk.Kind)
		name = strings.ToLower(strings.Join(parts, "_")) + ".yaml"
	}
	b, err := yaml.Marshal(obj.Object)
	return name, b, err
}

// dockerfile is bundle.Dockerfile: the bundle image, labelled with the
// annotations.
func dockerfile(ann map[string]string) []byte {
	var b strings.Builder
	b.WriteString("# The OLM bundle image. Generated by `make bundle`; do not edit.\n")
	b.WriteString("#   docker build -f bundle.Dockerfile -t REGISTRY/fieldops-bundle:vVERSION .\n")
	b.WriteString("FROM scratch\n\n")
	keys := make([]string, 0, len(ann))
	for k := range ann {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "LABEL %s=%s\n", k, ann[k])
	}
	b.WriteString("\nCOPY bundle/manifests /manifests/\nCOPY bundle/metadata /metadata/\nCOPY bundle/tests/scorecard /tests/scorecard/\n")
	return []byte(b.String())
}

func readYAML(path string, into interface{}) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func fromUnstructured(obj *unstructured.Unstructured, into interface{}) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, into, true); err != nil {
		return fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

// WriteFiles writes files (paths relative to root, contents) under root,
// in the order of their paths, creating directories as needed; wrote, when
// not nil, is called with each path written.
func WriteFiles(root string, files map[string][]byte, wrote func(name string)) error {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return err
		}
		if wrote != nil {
			wrote(name)
		}
	}
	return nil
}
