/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package deploy

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/internal/bundle"
	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/test/testkit"
)

// fragmentMarker, on the line before a ```yaml block (blank lines
// between allowed), marks the block as a fragment that is not a whole
// object (a spec excerpt, two objects side by side): it is not applied.
const fragmentMarker = "<!-- fragment -->"

// illustrativeMarker, on the line before a ```yaml block (the rest of the
// comment says why), marks whole objects that cannot be applied as they
// stand (a kustomize overlay of a release tag, an OLM Subscription to a
// catalog of yours): they are checked (built, dry-run) but not applied,
// and TestDocsFieldPatchesGoReady leaves them out.
const illustrativeMarker = "<!-- illustrative"

// givenNamespaces exist before any example runs: every cluster's, and
// OLM's (the Subscription example is for clusters with OLM).
var givenNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease", "olm", "operators"}

// A yamlBlock is one ```yaml block of a Markdown file.
type yamlBlock struct {
	file     string // relative to the module root
	line     int    // of the opening fence
	text     string
	fragment bool
	// illustrative: marked illustrativeMarker.
	illustrative bool
}

func (b yamlBlock) String() string {
	if b.line == 0 {
		return b.file
	}
	return fmt.Sprintf("%s:%d", b.file, b.line)
}

// docFiles are the Markdown files whose examples are tested: the README
// and docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return append([]string{filepath.Join(root, "README.md")}, files...)
}

var fence = regexp.MustCompile("^```\\s*(\\S*)")

// yamlBlocks returns the ```yaml (or ```yml) blocks of a Markdown file in
// document order.
func yamlBlocks(t *testing.T, path string) []yamlBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var (
		out      []yamlBlock
		cur      *yamlBlock
		inOther  bool
		lastText string // the last non-blank line outside a block
		n        int
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		n++
		line := sc.Text()
		m := fence.FindStringSubmatch(line)
		closing := strings.TrimSpace(line) == "```" // a closing fence has no info string
		switch {
		case cur != nil && closing:
			out = append(out, *cur)
			cur, lastText = nil, line
		case cur != nil:
			cur.text += line + "\n"
		case inOther && closing:
			inOther, lastText = false, line
		case inOther:
		case m != nil && (m[1] == "yaml" || m[1] == "yml"):
			cur = &yamlBlock{file: rel(path), line: n, fragment: strings.TrimSpace(lastText) == fragmentMarker,
				illustrative: strings.HasPrefix(strings.TrimSpace(lastText), illustrativeMarker)}
		case m != nil:
			inOther = true
		case strings.TrimSpace(line) != "":
			lastText = line
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Errorf("%s: unterminated ```yaml block", cur)
	}
	return out
}

// An example is one object of a block.
type example struct {
	block yamlBlock
	obj   *unstructured.Unstructured
}

func (e example) String() string {
	return fmt.Sprintf("%s: %s %s", e.block, e.obj.GetKind(), objName(e.obj.GetNamespace(), e.obj.GetName()))
}

func objName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// examples parses the blocks of a file that are not fragments, reporting
// those that are not whole objects.
func examples(t *testing.T, blocks []yamlBlock) []example {
	t.Helper()
	var out []example
	for _, b := range blocks {
		if b.fragment {
			continue
		}
		objs, err := bundle.DecodeObjects([]byte(b.text))
		if err != nil {
			t.Errorf("%s: not YAML: %v (mark a fragment with %s on the line before)", b, err, fragmentMarker)
			continue
		}
		if len(objs) == 0 {
			t.Errorf("%s: an empty block", b)
		}
		for _, o := range objs {
			if o.GetAPIVersion() == "" || o.GetKind() == "" || o.GetName() == "" && o.GetKind() != "Kustomization" {
				t.Errorf("%s: a document without apiVersion, kind and metadata.name is not an object anyone can apply; complete it, or mark the block %s", b, fragmentMarker)
				continue
			}
			out = append(out, example{block: b, obj: o})
		}
	}
	return out
}

// Every YAML example of the README and docs/ is accepted by the apiserver
// (a server-side dry run) and is self-contained: a file's examples, taken
// in document order with its Namespaces created first, need nothing but
// the namespaces every cluster has (and OLM's, for OLM's kinds). Fragments
// are marked <!-- fragment -->. The kustomize overlay of the operator's
// guide is built with this checkout standing in for the remote
// github.com/fieldops/fieldops bases.
func TestDocsExamples(t *testing.T) {
	install(t, namespaceObjects(givenNamespaces...))
	total := 0
	for _, f := range docFiles(t) {
		blocks := yamlBlocks(t, f)
		if len(blocks) == 0 {
			continue
		}
		t.Run(rel(f), func(t *testing.T) {
			exs := examples(t, blocks)
			total += len(exs)
			created := map[string]bool{}
			for _, ns := range givenNamespaces {
				created["Namespace/"+ns] = true
			}
			// Namespaces and CRDs first, for real: a dry run of what is in
			// them needs them.
			var setup []*unstructured.Unstructured
			for _, e := range exs {
				if e.obj.GetKind() == "Namespace" || e.obj.GetKind() == "CustomResourceDefinition" {
					setup = append(setup, e.obj)
				}
				created[e.obj.GetKind()+"/"+objName(e.obj.GetNamespace(), e.obj.GetName())] = true
			}
			install(t, setup)
			for _, e := range exs {
				if e.obj.GroupVersionKind().Group == "kustomize.config.k8s.io" {
					objs := buildOverlay(t, e)
					install(t, objs)
					dryRun(t, e.String(), objs, "")
					continue
				}
				o := e.obj.DeepCopy()
				namespaced, err := k8s.IsObjectNamespaced(o)
				if err != nil {
					t.Errorf("%s: the apiserver serves no %s: %v", e, o.GroupVersionKind(), err)
					continue
				}
				if namespaced && o.GetNamespace() == "" {
					o.SetNamespace("default")
				}
				if namespaced && !created["Namespace/"+o.GetNamespace()] {
					t.Errorf("%s: namespace %s is created by no example of %s: add a Namespace before it", e, o.GetNamespace(), rel(f))
				}
				for _, sa := range serviceAccounts(o) {
					if !created["ServiceAccount/"+sa] {
						t.Errorf("%s: ServiceAccount %s is created by no example of %s: add it before", e, sa, rel(f))
					}
				}
				dryRun(t, e.String(), []*unstructured.Unstructured{o}, "")
			}
		})
	}
	if total == 0 {
		t.Fatal("no YAML example found in README.md and docs/")
	}
}

// namespaceObjects are Namespace objects of the names.
func namespaceObjects(names ...string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, n := range names {
		out = append(out, &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]interface{}{"name": n},
		}})
	}
	return out
}

// serviceAccounts are the accounts (namespace/name) a fieldops object acts
// as.
func serviceAccounts(o *unstructured.Unstructured) []string {
	if o.GroupVersionKind().Group != "fieldops.dev" {
		return nil
	}
	name, _, _ := unstructured.NestedString(o.Object, "spec", "serviceAccountName")
	if name == "" {
		return nil
	}
	ns, _, _ := unstructured.NestedString(o.Object, "spec", "serviceAccountNamespace")
	if ns == "" {
		ns = o.GetNamespace()
	}
	return []string{ns + "/" + name}
}

var remoteBase = regexp.MustCompile(`^github\.com/fieldops/fieldops/([^?]+)\?ref=\S+$`)

// buildOverlay builds a Kustomization example in a temporary directory,
// with the bases it takes from github.com/fieldops/fieldops read from
// this checkout instead.
func buildOverlay(t *testing.T, e example) []*unstructured.Unstructured {
	t.Helper()
	var err error
	k := e.obj.DeepCopy()
	dir := t.TempDir()
	for _, field := range []string{"resources", "components"} {
		refs, _, _ := unstructured.NestedStringSlice(k.Object, field)
		for i, r := range refs {
			m := remoteBase.FindStringSubmatch(r)
			if m == nil {
				t.Errorf("%s: %s %q is not a base of github.com/fieldops/fieldops", e, field, r)
				continue
			}
			local := filepath.Join(root, filepath.FromSlash(m[1]))
			if _, err := os.Stat(filepath.Join(local, "kustomization.yaml")); err != nil {
				t.Errorf("%s: %s %q: this repository has no %s/kustomization.yaml", e, field, r, m[1])
			}
			// kustomize takes bases by relative path only.
			if refs[i], err = filepath.Rel(dir, local); err != nil {
				t.Fatal(err)
			}
		}
		if len(refs) > 0 {
			_ = unstructured.SetNestedStringSlice(k.Object, refs, field)
		}
	}
	b, err := k.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	objs, err := bundle.Render(dir)
	if err != nil {
		t.Fatalf("%s: %v", e, err)
	}
	return objs
}

// The examples of the README, docs/ and config/samples can all be
// applied to one cluster without stepping on each other: an object
// defined twice is defined the same way, no FieldPatch targets an object
// a ManagedWorkload example owns (ForbiddenTarget), and no two
// FieldPatches set the same field of one object (they would contest it).
// Namespaces are mapped to their scope by the apiserver.
func TestDocsExamplesDoNotCollide(t *testing.T) {
	var all []example
	for _, f := range docFiles(t) {
		all = append(all, examples(t, yamlBlocks(t, f))...)
	}
	for _, o := range render(t, "config/samples") {
		all = append(all, example{block: yamlBlock{file: "config/samples"}, obj: o})
	}
	type key struct {
		gk      schema.GroupKind
		ns, str string
	}
	identity := func(gk schema.GroupKind, ns, name string) key {
		return key{gk: gk, ns: ns, str: gk.Kind + " " + objName(ns, name)}
	}
	scope := func(apiVersion, kind, ns, defaultNS string) string {
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil {
			return ns
		}
		m, err := k8s.RESTMapper().RESTMapping(schema.GroupKind{Group: gv.Group, Kind: kind}, gv.Version)
		if err != nil || m.Scope.Name() != "namespace" {
			return ""
		}
		if ns == "" {
			return defaultNS
		}
		return ns
	}
	defined := map[key]example{}
	owned := map[key]example{} // objects of ManagedWorkloads
	type patchOf struct {
		ex    example
		paths []string
	}
	patches := map[key][]patchOf{}
	for _, e := range all {
		o := e.obj
		if o.GroupVersionKind().Group == "kustomize.config.k8s.io" {
			continue
		}
		ns := scope(o.GetAPIVersion(), o.GetKind(), o.GetNamespace(), "default")
		k := identity(o.GroupVersionKind().GroupKind(), ns, o.GetName())
		if prev, ok := defined[k]; ok && !reflect.DeepEqual(prev.obj.Object, o.Object) {
			t.Errorf("%s and %s both define %s, differently", prev.block, e.block, k.str)
		}
		defined[k] = e
		switch o.GetKind() {
		case "ManagedWorkload":
			resources, _, _ := unstructured.NestedSlice(o.Object, "spec", "resources")
			for _, r := range resources {
				ru := &unstructured.Unstructured{Object: r.(map[string]interface{})}
				rns := scope(ru.GetAPIVersion(), ru.GetKind(), ru.GetNamespace(), ns)
				owned[identity(ru.GroupVersionKind().GroupKind(), rns, ru.GetName())] = e
			}
		case "FieldPatch", "ClusterFieldPatch":
			target, _, _ := unstructured.NestedStringMap(o.Object, "spec", "target")
			tns := target["namespace"]
			if o.GetKind() == "FieldPatch" {
				tns = ns
			}
			gv, _ := schema.ParseGroupVersion(target["apiVersion"])
			tk := identity(schema.GroupKind{Group: gv.Group, Kind: target["kind"]}, scope(target["apiVersion"], target["kind"], tns, tns), target["name"])
			typ, _, _ := unstructured.NestedString(o.Object, "spec", "type")
			patches[tk] = append(patches[tk], patchOf{ex: e, paths: patchPaths(typ, o.Object["spec"].(map[string]interface{})["patch"])})
		}
	}
	for target, ps := range patches {
		if mw, ok := owned[target]; ok {
			for _, p := range ps {
				t.Errorf("%s targets %s, an object of the ManagedWorkload of %s: the FieldPatch would be ForbiddenTarget", p.ex, target.str, mw)
			}
		}
		for i := range ps {
			for j := i + 1; j < len(ps); j++ {
				if a, b, ok := overlap(ps[i].paths, ps[j].paths); ok && !reflect.DeepEqual(ps[i].ex.obj.Object, ps[j].ex.obj.Object) {
					what := a
					if a != b {
						what = a + " and " + b
					}
					t.Errorf("%s and %s set %s of %s: they would contest it", ps[i].ex, ps[j].ex, what, target.str)
				}
			}
		}
	}
	if len(patches) == 0 {
		t.Fatal("no FieldPatch among the examples: the test reads nothing")
	}
}

// patchPaths are the field paths a patch sets, as dotted paths. A list is
// a leaf, except that items of a list of objects with a name are told
// apart by it ([name=x]); a JSON patch's pointer stops at the first index.
// This over-approximates: two patches on different items of an unkeyed
// list overlap.
func patchPaths(typ string, patch interface{}) []string {
	var out []string
	if typ == "JSON" {
		ops, _ := patch.([]interface{})
		for _, op := range ops {
			m, _ := op.(map[string]interface{})
			if m["op"] == "test" {
				continue
			}
			p, _ := m["path"].(string)
			var parts []string
			for _, s := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
				if _, err := strconv.Atoi(s); err == nil || s == "-" {
					break
				}
				parts = append(parts, strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~"))
			}
			out = append(out, "."+strings.Join(parts, "."))
		}
		return out
	}
	var walk func(prefix string, v interface{})
	walk = func(prefix string, v interface{}) {
		switch v := v.(type) {
		case map[string]interface{}:
			if len(v) == 0 {
				out = append(out, prefix)
			}
			for k, x := range v {
				walk(prefix+"."+k, x)
			}
		case []interface{}:
			for _, item := range v {
				m, ok := item.(map[string]interface{})
				name, named := m["name"].(string)
				if !ok || !named {
					out = append(out, prefix)
					return
				}
				walk(prefix+"[name="+name+"]", m)
			}
		default:
			out = append(out, prefix)
		}
	}
	walk("", patch)
	return out
}

// overlap reports a path of a that is, contains or lies in a path of b.
func overlap(a, b []string) (string, string, bool) {
	within := func(p, q string) bool {
		return p == q || strings.HasPrefix(p, q+".") || strings.HasPrefix(p, q+"[")
	}
	for _, p := range a {
		for _, q := range b {
			if within(p, q) || within(q, p) {
				return p, q, true
			}
		}
	}
	return "", "", false
}

// The extraction the docs tests rely on: ```yaml blocks in order,
// fragments marked on the line before, other fences skipped; and the
// field paths of patches.
func TestDocsExamplesExtraction(t *testing.T) {
	md := "# t\n\n<!-- fragment -->\n```yaml\na: 1\n```\n```yaml\nb: 2\n```\n\n```sh\n```yaml\n```\ntext\n```yml\nc: 3\n```\n"
	path := filepath.Join(t.TempDir(), "t.md")
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range yamlBlocks(t, path) {
		got = append(got, fmt.Sprintf("%d %v %q", b.line, b.fragment, b.text))
	}
	want := []string{`4 true "a: 1\n"`, `7 false "b: 2\n"`, `15 false "c: 3\n"`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("yamlBlocks = %q, want %q", got, want)
	}

	apply := patchPaths("Apply", map[string]interface{}{"spec": map[string]interface{}{
		"replicas": int64(2),
		"template": map[string]interface{}{"spec": map[string]interface{}{"containers": []interface{}{
			map[string]interface{}{"name": "app", "env": []interface{}{map[string]interface{}{"name": "A", "value": "1"}}},
		}}},
	}})
	sort.Strings(apply)
	wantApply := []string{".spec.replicas", ".spec.template.spec.containers[name=app].env[name=A].name", ".spec.template.spec.containers[name=app].env[name=A].value", ".spec.template.spec.containers[name=app].name"}
	if !reflect.DeepEqual(apply, wantApply) {
		t.Errorf("Apply paths = %q, want %q", apply, wantApply)
	}
	json := patchPaths("JSON", []interface{}{
		map[string]interface{}{"op": "test", "path": "/spec/replicas"},
		map[string]interface{}{"op": "add", "path": "/spec/template/spec/containers/0/env/-"},
		map[string]interface{}{"op": "replace", "path": "/metadata/annotations/a~1b"},
	})
	if want := []string{".spec.template.spec.containers", ".metadata.annotations.a/b"}; !reflect.DeepEqual(json, want) {
		t.Errorf("JSON paths = %q, want %q", json, want)
	}
	if _, _, ok := overlap(apply, json); !ok {
		t.Error("a patch of a container's env and a JSON add into the containers list do not overlap")
	}
	if _, _, ok := overlap([]string{".spec.replicas"}, []string{".spec.replicasX", ".metadata.labels.a"}); ok {
		t.Error(".spec.replicas overlaps .spec.replicasX")
	}
}

// Every FieldPatch and ClusterFieldPatch example of the README and docs/
// goes Ready as it stands. The pages with such an example are applied for
// real, each page's examples in document order (server-side apply, as
// kubectl apply --server-side does; illustrative blocks and fragments
// left out), on a cluster that also has the objects a real cluster has
// of its own (localcp.ApplyUpstream, as make run-local: EKS's aws-node,
// CoreDNS, gp2), with the manager running; then every patch must be
// Ready=True at its generation. A patch whose target no example shows
// stays TargetNotFound and fails here.
func TestDocsFieldPatchesGoReady(t *testing.T) {
	ctx := context.Background()
	install(t, namespaceObjects(givenNamespaces...))
	if _, err := localcp.ApplyUpstream(ctx, cfg, root); err != nil {
		t.Fatal(err)
	}
	startManager(t, cfg, controllers.Options{OwnNamespace: "fieldops-system"})
	type patch struct {
		where string
		obj   *unstructured.Unstructured
	}
	var patches []patch
	t.Cleanup(func() {
		// Delete the patches while the manager runs (their finalizers
		// hand the fields back), before its own cleanup stops it.
		for _, p := range patches {
			testkit.Kit{Client: k8s}.DeleteAndWait(t, p.obj)
		}
	})
	for _, f := range docFiles(t) {
		exs := examples(t, yamlBlocks(t, f))
		if !slices.ContainsFunc(exs, func(e example) bool { return isPatch(e.obj) && !e.block.illustrative }) {
			continue
		}
		setup := []*unstructured.Unstructured{}
		for _, e := range exs {
			if e.obj.GetKind() == "Namespace" || e.obj.GetKind() == "CustomResourceDefinition" {
				setup = append(setup, e.obj)
			}
		}
		install(t, setup)
		for _, e := range exs {
			if e.block.illustrative || e.obj.GroupVersionKind().Group == "kustomize.config.k8s.io" {
				continue
			}
			o := e.obj.DeepCopy()
			if namespaced, err := k8s.IsObjectNamespaced(o); err == nil && namespaced && o.GetNamespace() == "" {
				o.SetNamespace("default")
			}
			if err := k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("kubectl"), client.ForceOwnership); err != nil {
				t.Errorf("%s: apply: %v", e, err)
				continue
			}
			if isPatch(o) {
				patches = append(patches, patch{where: e.String(), obj: o})
			}
		}
	}
	if len(patches) == 0 {
		t.Fatal("no FieldPatch or ClusterFieldPatch example found")
	}
	for _, p := range patches {
		testkit.Eventually(t, p.where+" Ready", func() (bool, string) {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(p.obj), p.obj); err != nil {
				return false, err.Error()
			}
			conds, _, _ := unstructured.NestedSlice(p.obj.Object, "status", "conditions")
			for _, c := range conds {
				c := c.(map[string]interface{})
				if c["type"] == "Ready" {
					gen, _, _ := unstructured.NestedInt64(c, "observedGeneration")
					return c["status"] == "True" && gen == p.obj.GetGeneration(), fmt.Sprintf("Ready=%v %v: %v", c["status"], c["reason"], c["message"])
				}
			}
			return false, "no Ready condition"
		})
	}
}

// isPatch says o is a FieldPatch or ClusterFieldPatch.
func isPatch(o *unstructured.Unstructured) bool {
	return o.GroupVersionKind().Group == "fieldops.dev" && (o.GetKind() == "FieldPatch" || o.GetKind() == "ClusterFieldPatch")
}
