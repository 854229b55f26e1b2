/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/internal/bundle"
)

// Every reason a controller can put on a condition or an event is
// explained in docs/troubleshooting.md.
func TestTroubleshootingCoversEveryReason(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"controllers/fieldpatch", "controllers/workload", "controllers/podset"} {
		for _, reason := range reasons(t, filepath.Join(root, pkg)) {
			if !strings.Contains(string(doc), "`"+reason+"`") {
				t.Errorf("%s reason %s is not in docs/troubleshooting.md", pkg, reason)
			}
		}
	}
}

// reasons are the values of the Reason* string constants of a package.
func reasons(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Reason") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					out = append(out, v)
				}
			}
			return true
		})
	}
	if len(out) == 0 {
		t.Fatalf("no Reason constants in %s", dir)
	}
	return out
}

// Relative links in README.md and docs/ point at files that exist, and
// their #anchors at headings of those files.
func TestDocsLinks(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"))
	link := regexp.MustCompile(`\]\(([^)#\s]*)(#[^)\s]*)?\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target, anchor := m[1], strings.TrimPrefix(m[2], "#")
			if strings.Contains(target, "://") {
				continue
			}
			path := f
			if target != "" {
				path = filepath.Join(filepath.Dir(f), target)
			}
			body, err := os.ReadFile(path)
			if err != nil {
				if _, serr := os.Stat(path); serr != nil {
					t.Errorf("%s: link to %s: no such file", rel(f), target)
				}
				continue
			}
			if anchor != "" && !hasAnchor(string(body), anchor) {
				t.Errorf("%s: link to %s#%s: no such heading", rel(f), target, anchor)
			}
		}
	}
}

// hasAnchor: a heading whose GitHub anchor is a.
func hasAnchor(md, a string) bool {
	drop := regexp.MustCompile("[^a-z0-9 _-]")
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		if strings.ReplaceAll(drop.ReplaceAllString(h, ""), " ", "-") == a {
			return true
		}
	}
	return false
}

func rel(path string) string {
	r, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return r
}

// The YAML examples of the tenant isolation docs are real: each section
// creates the namespaces and ServiceAccounts its objects use, no two
// sections share a namespace, and the apiserver accepts every object
// (server-side dry run, the namespaces created for real).
func TestTenantDocsExamples(t *testing.T) {
	seen := map[string]string{} // namespace → section
	for _, sec := range []struct{ file, heading string }{
		{"docs/operators-guide.md", "## Tenant isolation"},
		{"docs/fieldpatch.md", "## Multi-tenancy and RBAC"},
		{"docs/managedworkload.md", "## Multi-tenancy and RBAC"},
	} {
		where := sec.file + " " + sec.heading
		objs := yamlExamples(t, sec.file, sec.heading)
		namespaces, accounts := map[string]bool{}, map[string]bool{}
		for _, o := range objs {
			switch o.GetKind() {
			case "Namespace":
				namespaces[o.GetName()] = true
				if other, ok := seen[o.GetName()]; ok {
					t.Errorf("%s and %s both create namespace %s", other, where, o.GetName())
				}
				seen[o.GetName()] = where
			case "ServiceAccount":
				accounts[o.GetNamespace()+"/"+o.GetName()] = true
			}
		}
		if len(namespaces) == 0 {
			t.Errorf("%s: no example creates its namespace", where)
		}
		for _, o := range objs {
			if ns := o.GetNamespace(); ns != "" && !namespaces[ns] {
				t.Errorf("%s: %s %s is in namespace %s, which the section does not create", where, o.GetKind(), o.GetName(), ns)
			}
			if sa, _, _ := unstructured.NestedString(o.Object, "spec", "serviceAccountName"); sa != "" && !accounts[o.GetNamespace()+"/"+sa] {
				t.Errorf("%s: %s %s acts as %s/%s, which the section does not create", where, o.GetKind(), o.GetName(), o.GetNamespace(), sa)
			}
		}
		install(t, objs)
		dryRun(t, where, objs, "")
	}
}

// yamlExamples decodes the objects (documents with a kind) of the yaml
// code blocks under heading, up to the next heading of its level or above.
func yamlExamples(t *testing.T, file, heading string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	level := strings.Index(heading, " ")
	var section []string
	in, code := false, false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			code = !code
		}
		if !code && strings.HasPrefix(line, "#") {
			n := len(line) - len(strings.TrimLeft(line, "#"))
			if line == heading {
				in = true
				continue
			}
			if in && n <= level {
				break
			}
		}
		if in {
			section = append(section, line)
		}
	}
	if !in {
		t.Fatalf("%s has no heading %q", file, heading)
	}
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	var out []*unstructured.Unstructured
	for _, m := range block.FindAllStringSubmatch(strings.Join(section, "\n"), -1) {
		objs, err := bundle.DecodeObjects([]byte(m[1]))
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", file, heading, err, m[1])
		}
		for _, o := range objs {
			// A kustomization.yaml is built, not applied (TestDocsExamples).
			if o.GetKind() != "" && o.GroupVersionKind().Group != "kustomize.config.k8s.io" {
				out = append(out, o)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s %s has no YAML example", file, heading)
	}
	return out
}
