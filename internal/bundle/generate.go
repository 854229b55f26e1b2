/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package bundle writes fieldops's OLM bundle (registry+v1) from config/:
// Generate renders config/ with kustomize and fills the hand-written
// base of the ClusterServiceVersion (operator-framework/api's type) with
// what no library derives from it: the name, version and image, the
// icon, alm-examples, the install strategy (the Deployment and the RBAC
// bound to its ServiceAccount) and the account-impersonation webhook.
// The bundle format:
// https://olm.operatorframework.io/docs/tasks/creating-operator-bundle/.
// Package bundlecheck checks what Generate writes.
package bundle

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
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
	csv := &v1alpha1.ClusterServiceVersion{}
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
	if err := addManifests(files, rest); err != nil {
		return nil, err
	}
	almExamples, err := almExamples(samples)
	if err != nil {
		return nil, err
	}
	v, err := semver.Parse(o.Version)
	if err != nil {
		return nil, fmt.Errorf("version %q: %w", o.Version, err)
	}
	csv.Name = o.Package + ".v" + o.Version
	csv.Namespace = ""
	csv.Spec.Version = version.OperatorVersion{Version: v}
	if csv.Annotations == nil {
		csv.Annotations = map[string]string{}
	}
	csv.Annotations["alm-examples"] = almExamples
	csv.Annotations["containerImage"] = o.Image
	csv.Spec.Icon = []v1alpha1.Icon{{Data: base64.StdEncoding.EncodeToString(icon), MediaType: "image/svg+xml"}}
	csv.Spec.InstallStrategy = v1alpha1.NamedInstallStrategy{StrategyName: v1alpha1.InstallStrategyNameDeployment, StrategySpec: strategy}
	csv.Spec.WebhookDefinitions = webhooks
	if files[filepath.Join(ManifestsDir, o.Package+".clusterserviceversion.yaml")], err = csvManifest(csv); err != nil {
		return nil, err
	}

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

// csvManifest is the CSV as a manifest: without the status, which is
// OLM's to write (the type has no omitempty on it).
func csvManifest(csv *v1alpha1.ClusterServiceVersion) ([]byte, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(csv)
	if err != nil {
		return nil, err
	}
	delete(u, "status")
	return yaml.Marshal(u)
}

// addManifests adds each object to files, in bundle/manifests.
func addManifests(files map[string][]byte, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		name, b, err := manifestFile(obj)
		if err != nil {
			return err
		}
		files[filepath.Join(ManifestsDir, name)] = b
	}
	return nil
}

// almExamples is the CSV's alm-examples annotation: the samples of the
// owned kinds, as an indented JSON array (the samples' accounts,
// ServiceAccounts and Roles, are left out).
func almExamples(samples []*unstructured.Unstructured) (string, error) {
	examples := make([]map[string]interface{}, 0, len(samples))
	for _, s := range samples {
		if s.GroupVersionKind().Group == "fieldops.dev" {
			examples = append(examples, s.Object)
		}
	}
	b, err := json.MarshalIndent(examples, "", "  ")
	return string(b), err
}

// install is installStrategy and the account webhook its Deployment
// serves (accountWebhook).
func install(objs []*unstructured.Unstructured, image string) (v1alpha1.StrategyDetailsDeployment, []v1alpha1.WebhookDescription, []*unstructured.Unstructured, error) {
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
func installStrategy(objs []*unstructured.Unstructured, image string) (v1alpha1.StrategyDetailsDeployment, []*unstructured.Unstructured, error) {
	m := &managerObjects{
		image:          image,
		roles:          map[string][]rbacv1.PolicyRule{},
		clusterRoles:   map[string]*unstructured.Unstructured{},
		serviceAccount: map[string]bool{},
	}
	for _, obj := range objs {
		place, ok := placeByKind[obj.GroupVersionKind().GroupKind().String()]
		if !ok {
			return m.spec, nil, fmt.Errorf("config/default has a %s %s that the bundle has no place for", obj.GetKind(), obj.GetName())
		}
		if err := place(m, obj); err != nil {
			return m.spec, nil, err
		}
	}
	perms, err := m.permissions()
	if err != nil {
		return m.spec, nil, err
	}
	clusterPerms, bound, err := m.clusterPermissions()
	if err != nil {
		return m.spec, nil, err
	}
	rest := m.rest
	for _, obj := range objs {
		if obj.GetKind() == "ClusterRole" && !bound[obj.GetName()] {
			rest = append(rest, obj)
		}
	}
	m.spec.Permissions = sortedPermissions(perms)
	m.spec.ClusterPermissions = sortedPermissions(clusterPerms)
	return m.spec, rest, nil
}

// managerObjects are config/default's objects sorted by where the bundle
// puts them: the install strategy's Deployments, the RBAC that becomes
// its permissions, the manager's ServiceAccounts, and the rest.
type managerObjects struct {
	image          string
	spec           v1alpha1.StrategyDetailsDeployment
	rest           []*unstructured.Unstructured
	roles          map[string][]rbacv1.PolicyRule
	clusterRoles   map[string]*unstructured.Unstructured
	bindings       []*rbacv1.RoleBinding
	clusterBinds   []*rbacv1.ClusterRoleBinding
	serviceAccount map[string]bool
}

// placeByKind places each kind config/default holds, by group and kind;
// a kind not here is an error, so a new kind needs a decision.
var placeByKind = map[string]func(m *managerObjects, obj *unstructured.Unstructured) error{
	// OLM creates the Namespace and the ServiceAccount; the
	// ServiceAccount's name says whose RBAC becomes the permissions.
	"Namespace":      leaveOut,
	"ServiceAccount": (*managerObjects).addServiceAccount,
	// The install strategy: the Deployment and the RBAC bound to its
	// ServiceAccount.
	"Deployment.apps":                              (*managerObjects).addDeployment,
	"Role.rbac.authorization.k8s.io":               (*managerObjects).addRole,
	"RoleBinding.rbac.authorization.k8s.io":        (*managerObjects).addRoleBinding,
	"ClusterRole.rbac.authorization.k8s.io":        (*managerObjects).addClusterRole,
	"ClusterRoleBinding.rbac.authorization.k8s.io": (*managerObjects).addClusterRoleBinding,
	// bundle/manifests, as they are.
	"CustomResourceDefinition.apiextensions.k8s.io": (*managerObjects).addManifest,
	"Service": (*managerObjects).addManifest,
	// Not a kind every OLM release installs from a bundle; the
	// operator's guide applies config/network-policy separately.
	"NetworkPolicy.networking.k8s.io": leaveOut,
	// OLM installs no admission policy from a bundle: the manager adds
	// the finalizers itself (one write more per object); the operator's
	// guide applies config/admission separately.
	"MutatingAdmissionPolicy.admissionregistration.k8s.io":        leaveOut,
	"MutatingAdmissionPolicyBinding.admissionregistration.k8s.io": leaveOut,
	// Nor a validating policy: the manager serves the
	// account-impersonation policy's rule as a webhook the CSV declares
	// (accountWebhook), and refuses a patch over the patch-limits
	// policy's limits itself.
	"ValidatingAdmissionPolicy.admissionregistration.k8s.io":        leaveOut,
	"ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io": leaveOut,
}

// leaveOut places an object nowhere in the bundle.
func leaveOut(*managerObjects, *unstructured.Unstructured) error { return nil }

func (m *managerObjects) addServiceAccount(obj *unstructured.Unstructured) error {
	m.serviceAccount[obj.GetName()] = true
	return nil
}

// addDeployment adds a Deployment to the install strategy, its manager
// container running image.
func (m *managerObjects) addDeployment(obj *unstructured.Unstructured) error {
	d := &appsv1.Deployment{}
	if err := fromUnstructured(obj, d); err != nil {
		return err
	}
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == "manager" {
			d.Spec.Template.Spec.Containers[i].Image = m.image
		}
	}
	m.spec.DeploymentSpecs = append(m.spec.DeploymentSpecs, v1alpha1.StrategyDeploymentSpec{Name: d.Name, Label: d.Labels, Spec: d.Spec})
	return nil
}

func (m *managerObjects) addRole(obj *unstructured.Unstructured) error {
	r := &rbacv1.Role{}
	if err := fromUnstructured(obj, r); err != nil {
		return err
	}
	m.roles[r.Name] = r.Rules
	return nil
}

func (m *managerObjects) addRoleBinding(obj *unstructured.Unstructured) error {
	rb := &rbacv1.RoleBinding{}
	if err := fromUnstructured(obj, rb); err != nil {
		return err
	}
	m.bindings = append(m.bindings, rb)
	return nil
}

func (m *managerObjects) addClusterRole(obj *unstructured.Unstructured) error {
	m.clusterRoles[obj.GetName()] = obj
	return nil
}

func (m *managerObjects) addClusterRoleBinding(obj *unstructured.Unstructured) error {
	crb := &rbacv1.ClusterRoleBinding{}
	if err := fromUnstructured(obj, crb); err != nil {
		return err
	}
	m.clusterBinds = append(m.clusterBinds, crb)
	return nil
}

// addManifest puts obj in bundle/manifests as it is.
func (m *managerObjects) addManifest(obj *unstructured.Unstructured) error {
	m.rest = append(m.rest, obj)
	return nil
}

// permissions are the rules of the Roles bound to the manager's
// ServiceAccounts, by ServiceAccount; a binding to a Role config/default
// does not define is an error.
func (m *managerObjects) permissions() (map[string][]rbacv1.PolicyRule, error) {
	perms := map[string][]rbacv1.PolicyRule{}
	for _, rb := range m.bindings {
		for _, s := range rb.Subjects {
			if s.Kind != rbacv1.ServiceAccountKind || !m.serviceAccount[s.Name] {
				continue
			}
			rules, ok := m.roles[rb.RoleRef.Name]
			if !ok || rb.RoleRef.Kind != "Role" {
				return nil, fmt.Errorf("RoleBinding %s binds %s %s, which config/default does not define", rb.Name, rb.RoleRef.Kind, rb.RoleRef.Name)
			}
			perms[s.Name] = append(perms[s.Name], rules...)
		}
	}
	return perms, nil
}

// clusterPermissions are the rules of the ClusterRoles bound to the
// manager's ServiceAccounts, by ServiceAccount, and the names of those
// ClusterRoles; a binding to a ClusterRole config/default does not define
// is an error.
func (m *managerObjects) clusterPermissions() (map[string][]rbacv1.PolicyRule, map[string]bool, error) {
	clusterPerms := map[string][]rbacv1.PolicyRule{}
	bound := map[string]bool{}
	for _, crb := range m.clusterBinds {
		for _, s := range crb.Subjects {
			if s.Kind != rbacv1.ServiceAccountKind || !m.serviceAccount[s.Name] {
				continue
			}
			obj, ok := m.clusterRoles[crb.RoleRef.Name]
			if !ok {
				return nil, nil, fmt.Errorf("ClusterRoleBinding %s binds ClusterRole %s, which config/default does not define", crb.Name, crb.RoleRef.Name)
			}
			cr := &rbacv1.ClusterRole{}
			if err := fromUnstructured(obj, cr); err != nil {
				return nil, nil, err
			}
			clusterPerms[s.Name] = append(clusterPerms[s.Name], cr.Rules...)
			bound[cr.Name] = true
		}
	}
	return clusterPerms, bound, nil
}

func sortedPermissions(m map[string][]rbacv1.PolicyRule) []v1alpha1.StrategyDeploymentPermissions {
	var out []v1alpha1.StrategyDeploymentPermissions
	for sa, rules := range m {
		out = append(out, v1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: rules})
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
