/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package chartgen writes the generated part of the Helm chart
// (charts/fieldops) from the kustomize configuration in config/, so that
// the chart installs the same CRDs, RBAC, admission policies, metrics
// Service, NetworkPolicy and Prometheus objects as config/, each with the
// chart's standard labels: the chart's Deployment template, values and
// schema are written by hand, everything else is rendered from config/
// (and the README from values.yaml's comments) by Generate and checked
// stale by `make verify-generated`.
package chartgen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/internal/bundle"
)

// ChartDir is the chart's directory relative to the module root.
const ChartDir = "charts/fieldops"

// namespace is the namespace config/ installs the manager in; the chart
// installs into the release's namespace instead.
const namespace = "fieldops-system"

// releaseNamespace stands for {{ .Release.Namespace }} until the template
// text is escaped.
const releaseNamespace = "__FIELDOPS_RELEASE_NAMESPACE__"

// Options say what to generate.
type Options struct {
	// Root is the module root, holding config/.
	Root string
	// Version is the chart's version, semver without a leading v; the
	// chart's appVersion (and default image tag) is "v" + Version.
	Version string
}

// A section is one generated template file: objects, each under an
// optional condition (a Helm template expression).
type section struct {
	file   string // templates/zz_generated.<file>.yaml
	source string // the directories of config/ it comes from
	parts  []part
}

type part struct {
	cond string // "" for always
	objs []*unstructured.Unstructured
}

// Generate renders config/ and returns every generated file of the chart
// by its path relative to Root: Chart.yaml, README.md (README.md.gotmpl
// with values.yaml's values and comments), crds/ (one file per CRD) and
// templates/zz_generated.*.yaml. It fails on an object of config/ it has
// no place for, so a new object in config/ needs a decision here.
func Generate(o Options) (map[string][]byte, error) {
	if o.Version == "" || strings.HasPrefix(o.Version, "v") {
		return nil, fmt.Errorf("chart version %q: want semver without a leading v", o.Version)
	}
	files := map[string][]byte{}
	files[filepath.Join(ChartDir, "Chart.yaml")] = chartYAML(o.Version)
	crds, err := bundle.Render(filepath.Join(o.Root, "config", "crd"))
	if err != nil {
		return nil, err
	}
	for _, crd := range crds {
		b, err := yaml.Marshal(crd.Object)
		if err != nil {
			return nil, err
		}
		files[filepath.Join(ChartDir, "crds", crd.GetName()+".yaml")] = append([]byte(header("config/crd")), b...)
	}
	readme, err := readmeFile(o.Root, o.Version)
	if err != nil {
		return nil, err
	}
	files[filepath.Join(ChartDir, "README.md")] = readme
	sections, err := templateSections(o.Root)
	if err != nil {
		return nil, err
	}
	for _, s := range sections {
		b, err := s.template()
		if err != nil {
			return nil, err
		}
		files[filepath.Join(ChartDir, "templates", "zz_generated."+s.file+".yaml")] = b
	}
	return files, nil
}

// readmeFile is the chart's README.md: README.md.gotmpl with the table of
// values.yaml's values, at the chart's version.
func readmeFile(root, version string) ([]byte, error) {
	tmpl, err := os.ReadFile(filepath.Join(root, ChartDir, "README.md.gotmpl"))
	if err != nil {
		return nil, err
	}
	vals, err := os.ReadFile(filepath.Join(root, ChartDir, "values.yaml"))
	if err != nil {
		return nil, err
	}
	return README(tmpl, vals, version)
}

// templateSections renders config/ into the chart's generated templates.
func templateSections(root string) ([]section, error) {
	r := renderer{root: root}
	// The default install (config/rbac and config/policy) and the opt-in
	// that acts with the manager's rights (the component
	// config/manager-rights over them).
	rbac := r.renderOverlay("resources: [../config/rbac, ../config/policy]\ncomponents: [../config/manager-rights]\n")
	locked := r.renderOverlay("resources: [../config/rbac, ../config/policy]\n")
	common, managerRights, lockdown := splitRBAC(rbac, locked)
	service := byKind(r.render("config/default"), "Service")
	netpol := r.render("config/network-policy")
	admission := r.render("config/admission")
	prom := r.render("config/prometheus")
	if r.err != nil {
		return nil, r.err
	}
	if len(service) != 1 {
		return nil, fmt.Errorf("config/default: want one Service (the metrics Service), got %d", len(service))
	}
	monitors, rules := byKind(prom, "ServiceMonitor"), byKind(prom, "PrometheusRule")
	if len(monitors)+len(rules) != len(prom) {
		return nil, fmt.Errorf("config/prometheus: the chart has a place for ServiceMonitors and PrometheusRules only")
	}
	return []section{
		{"rbac", "config/rbac", []part{{"", common}}},
		{"tenancy", "config/rbac and config/policy, and with config/manager-rights", []part{
			{"not .Values.tenancy.actWithManagerRights", lockdown},
			{".Values.tenancy.actWithManagerRights", managerRights},
		}},
		{"metrics", "config/default (the metrics Service) and config/network-policy", []part{
			{"", service}, {".Values.networkPolicy.enabled", netpol},
		}},
		{"admission", "config/admission", []part{{".Values.admissionPolicy.finalizers", admission}}},
		{"prometheus", "config/prometheus", []part{
			{".Values.metrics.serviceMonitor.enabled", monitors},
			{".Values.metrics.prometheusRule.enabled", rules},
		}},
	}, nil
}

// template is the section's template file.
func (s section) template() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(header(s.source))
	for _, p := range s.parts {
		if len(p.objs) == 0 {
			continue
		}
		if p.cond != "" {
			fmt.Fprintf(&buf, "{{- if %s }}\n", p.cond)
		}
		for _, obj := range p.objs {
			b, err := objectTemplate(obj)
			if err != nil {
				return nil, err
			}
			buf.WriteString("---\n")
			buf.Write(b)
		}
		if p.cond != "" {
			buf.WriteString("{{- end }}\n")
		}
	}
	return buf.Bytes(), nil
}

// renderer renders kustomizations of root, keeping the first error.
type renderer struct {
	root string
	err  error
}

func (r *renderer) render(dir string) []*unstructured.Unstructured {
	if r.err != nil {
		return nil
	}
	objs, err := bundle.Render(filepath.Join(r.root, dir))
	r.err = err
	return objs
}

func byKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// Write replaces the generated files of the chart under root with files.
func Write(root string, files map[string][]byte) error {
	old, err := filepath.Glob(filepath.Join(root, ChartDir, "crds", "*.yaml"))
	if err != nil {
		return err
	}
	gen, err := filepath.Glob(filepath.Join(root, ChartDir, "templates", "zz_generated.*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range append(old, gen...) {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	return bundle.WriteFiles(root, files, nil)
}

func header(source string) string {
	return "# Generated by `make chart` (internal/chartgen) from\n# " + source + ": edit those, not this file.\n"
}

func chartYAML(version string) []byte {
	return []byte(`# Generated by ` + "`make chart`" + ` (internal/chartgen) from the Makefile's VERSION:
# the chart's version is the operator's, its appVersion the manager
# image's tag.
apiVersion: v2
name: fieldops
description: Share Kubernetes objects field by field with Server-Side Apply ownership.
type: application
version: ` + version + `
appVersion: v` + version + `
kubeVersion: ">=1.30.0-0"
home: https://github.com/fieldops/fieldops
sources:
- https://github.com/fieldops/fieldops
keywords: [server-side-apply, operator, patch]
`)
}

// renderOverlay renders a kustomization (its text) laid in a temporary
// directory of root.
func (r *renderer) renderOverlay(k string) []*unstructured.Unstructured {
	if r.err != nil {
		return nil
	}
	// kustomize takes relative paths only: the overlay lives in root.
	dir, err := os.MkdirTemp(r.root, ".chartgen-")
	if err != nil {
		r.err = err
		return nil
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		r.err = err
		return nil
	}
	objs, err := bundle.Render(dir)
	r.err = err
	return objs
}

// splitRBAC returns the objects the same in both renders (common), the
// objects of plain whose lockdown version differs or that lockdown drops
// (managerRights), and the objects of locked that differ or are new
// (lockdown).
func splitRBAC(plain, locked []*unstructured.Unstructured) (common, managerRights, lockdown []*unstructured.Unstructured) {
	key := func(o *unstructured.Unstructured) string {
		return o.GetAPIVersion() + "/" + o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
	}
	byKey := map[string]*unstructured.Unstructured{}
	for _, o := range locked {
		byKey[key(o)] = o
	}
	seen := map[string]bool{}
	for _, o := range plain {
		l, ok := byKey[key(o)]
		seen[key(o)] = true
		switch {
		case ok && reflect.DeepEqual(o.Object, l.Object):
			common = append(common, o)
		case ok:
			managerRights = append(managerRights, o)
			lockdown = append(lockdown, l)
		default:
			managerRights = append(managerRights, o)
		}
	}
	for _, o := range locked {
		if !seen[key(o)] {
			lockdown = append(lockdown, o)
		}
	}
	return common, managerRights, lockdown
}

// standardLabels stands for the chart's standard labels (the template
// fieldops.labels of templates/_helpers.tpl) until the template text is
// written.
const standardLabels = "__FIELDOPS_STANDARD_LABELS__"

// StandardLabels are the labels the template fieldops.labels sets on
// every object the chart renders (Helm's best practices,
// https://helm.sh/docs/chart_best_practices/labels/).
var StandardLabels = []string{
	"app.kubernetes.io/name",
	"app.kubernetes.io/instance",
	"app.kubernetes.io/version",
	"app.kubernetes.io/managed-by",
	"helm.sh/chart",
}

// standardLabelsLine is the placeholder's line in yaml.Marshal's output,
// its indentation kept.
var standardLabelsLine = regexp.MustCompile(`(?m)^( *)` + standardLabels + `: ""$`)

// objectTemplate is obj as Helm template text: the namespace of config/
// becomes the release's, the chart's standard labels join config/'s (a
// standard label of config/ gives way to the chart's), and template
// delimiters inside values (the PrometheusRule's Prometheus templates)
// are escaped.
func objectTemplate(obj *unstructured.Unstructured) ([]byte, error) {
	obj = obj.DeepCopy()
	replaceNamespace(obj.Object)
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for _, k := range StandardLabels {
		delete(labels, k)
	}
	labels[standardLabels] = ""
	obj.SetLabels(labels)
	b, err := yaml.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	s := strings.NewReplacer("{{", `{{ "{{" }}`, "}}", `{{ "}}" }}`).Replace(string(b))
	s = strings.ReplaceAll(s, releaseNamespace, "{{ .Release.Namespace }}")
	if n := len(standardLabelsLine.FindAllString(s, -1)); n != 1 {
		return nil, fmt.Errorf("%s %s: %d places for the standard labels, want 1", obj.GetKind(), obj.GetName(), n)
	}
	s = standardLabelsLine.ReplaceAllStringFunc(s, func(line string) string {
		indent := len(line) - len(strings.TrimLeft(line, " "))
		return fmt.Sprintf(`%s{{- include "fieldops.labels" . | nindent %d }}`, line[:indent], indent)
	})
	return []byte(s), nil
}

// replaceNamespace replaces every string value equal to config/'s
// namespace (metadata.namespace, a binding's subjects) with the release
// namespace's placeholder.
func replaceNamespace(v interface{}) {
	switch v := v.(type) {
	case map[string]interface{}:
		for k, e := range v {
			if s, ok := e.(string); ok && s == namespace {
				v[k] = releaseNamespace
				continue
			}
			replaceNamespace(e)
		}
	case []interface{}:
		for i, e := range v {
			if s, ok := e.(string); ok && s == namespace {
				v[i] = releaseNamespace
				continue
			}
			replaceNamespace(e)
		}
	}
}
