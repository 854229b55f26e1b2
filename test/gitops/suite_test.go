/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fluxcd/cli-utils/pkg/object"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/test/testkit"
)

var (
	cfg *rest.Config
	k8s client.Client
	kit testkit.Kit
	// writes counts the fieldops manager's writes, by URL path.
	writes = &testkit.WriteCounter{}
)

// TestMain starts the local cluster and a manager of every
// fieldops controller (testkit.RunSuite), its writes counted.
func TestMain(m *testing.M) {
	// A small cluster: kube-controller-manager's garbage collector
	// finishes a foreground deletion (Argo CD's).
	os.Exit(testkit.RunSuite(m, testkit.SuiteOptions{Writes: writes, ControlPlane: localcp.Options{Cluster: &localcp.ClusterOptions{}}}, func(s *testkit.Suite) {
		cfg, k8s, kit = s.Config, s.Client, s.Kit
	}))
}

// recipeMarker starts the first line of a recipe's YAML block in
// docs/gitops.md: "# test/gitops <Test> [<Test>…]" names the tests that
// run it.
const recipeMarker = "# test/gitops "

// docNamespace is the namespace of the recipes' app in docs/gitops.md.
const docNamespace = "web"

// recipe returns the objects of the ```yaml blocks of docs/gitops.md whose
// first line is recipeMarker followed by test (the test's name, among
// others the block serves), in
// document order, moved from the doc's namespace (docNamespace: in
// metadata, in a RoleBinding's subjects, in a FieldPatch's field manager
// name) to ns; a namespaced object that names no namespace gets ns (as
// Flux's targetNamespace and Argo CD's destination give it). The test
// fails when the doc has no such block: the doc shows what the test
// runs.
func recipe(t *testing.T, test, ns string) []*unstructured.Unstructured {
	t.Helper()
	root, err := localcp.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "gitops.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	moved := strings.NewReplacer("namespace: "+docNamespace+"\n", "namespace: "+ns+"\n", "namespace: "+docNamespace+"}", "namespace: "+ns+"}",
		"fieldops-fieldpatch/"+docNamespace+"/", "fieldops-fieldpatch/"+ns+"/")
	for _, m := range block.FindAllStringSubmatch(string(b), -1) {
		first, _, _ := strings.Cut(m[1], "\n")
		names, ok := strings.CutPrefix(strings.TrimSpace(first), recipeMarker)
		if !ok || !slices.Contains(strings.Fields(names), test) {
			continue
		}
		objs, err := localcp.DecodeAll([]byte(moved.Replace(m[1])))
		if err != nil {
			t.Fatalf("docs/gitops.md, the recipe of %s: %v", test, err)
		}
		for _, o := range objs {
			if o.GetNamespace() != "" {
				continue
			}
			if namespaced, err := k8s.IsObjectNamespaced(o); err == nil && namespaced {
				o.SetNamespace(ns)
			}
		}
		out = append(out, objs...)
	}
	if len(out) == 0 {
		t.Fatalf("docs/gitops.md has no recipe of %s (a yaml block starting %q)", test, recipeMarker+test)
	}
	return out
}

// app is the recipes' app (the recipe "app": the Deployment as Git has
// it, and the FieldPatch) in ns, with test's recipe over it: an object of
// the same kind and name is merged over the app's (JSON merge patch,
// RFC 7386), another one added. An empty test is the app alone.
func app(t *testing.T, test, ns string) []*unstructured.Unstructured {
	t.Helper()
	objs := recipe(t, "app", ns)
	if test == "" {
		return objs
	}
	for _, r := range recipe(t, test, ns) {
		i := slices.IndexFunc(objs, func(o *unstructured.Unstructured) bool {
			return o.GetKind() == r.GetKind() && o.GetName() == r.GetName()
		})
		if i < 0 {
			objs = append(objs, r)
			continue
		}
		objs[i] = &unstructured.Unstructured{Object: mergeObjects(objs[i].Object, r.Object)}
	}
	return objs
}

// mergeObjects is over merged into base as a JSON merge patch does: maps
// merged key by key, anything else replaced, null deleting.
func mergeObjects(base, over map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		bm, bok := out[k].(map[string]any)
		om, ook := v.(map[string]any)
		switch {
		case v == nil:
			delete(out, k)
		case bok && ook:
			out[k] = mergeObjects(bm, om)
		default:
			out[k] = v
		}
	}
	return out
}

// pick returns the one object of kind among objs.
func pick(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the recipe has %d objects of kind %s, want 1", len(found), kind)
	}
	return found[0].DeepCopy()
}

// createPatch creates the FieldPatch fp describes and waits until it is
// Ready (reason Applied).
func createPatch(t *testing.T, u *unstructured.Unstructured) *v1alpha1.FieldPatch {
	t.Helper()
	fp := &v1alpha1.FieldPatch{}
	if err := runtimeConvert(u, fp); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(context.Background(), fp); err != nil {
		t.Fatal(err)
	}
	ready(t, fp)
	return fp
}

// runtimeConvert turns u into the typed object o.
func runtimeConvert(u *unstructured.Unstructured, o client.Object) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, o)
}

// ready waits until fp is Ready=True for its generation and returns the
// Ready condition.
func ready(t *testing.T, fp *v1alpha1.FieldPatch) metav1.Condition {
	t.Helper()
	var c metav1.Condition
	testkit.Eventually(t, "FieldPatch "+fp.Name+" Ready", func() (bool, string) {
		kit.Get(t, fp)
		r := meta.FindStatusCondition(fp.Status.Conditions, "Ready")
		if r == nil {
			return false, "no Ready"
		}
		c = *r
		return r.Status == metav1.ConditionTrue && r.ObservedGeneration == fp.Generation, r.Reason + ": " + r.Message
	})
	return c
}

// manager is the field manager of the FieldPatch.
func manager(fp *v1alpha1.FieldPatch) string {
	return "fieldops-fieldpatch/" + fp.Namespace + "/" + fp.Name
}

// owners are the managers ("name/Operation") of the field at path
// (ownershipcore.FormatPath form, ".spec.replicas") of the live object.
func owners(t *testing.T, u *unstructured.Unstructured, path string) []string {
	t.Helper()
	mf, err := ownershipcore.Owners(kit.Live(t, u))
	if err != nil {
		t.Fatal(err)
	}
	got := mf.ByPath()[path]
	slices.Sort(got)
	return got
}

// replicas is the live object's spec.replicas.
func replicas(t *testing.T, u *unstructured.Unstructured) int64 {
	t.Helper()
	n, _, _ := unstructured.NestedInt64(kit.Live(t, u).Object, "spec", "replicas")
	return n
}

// image is the live Deployment's first container image.
func image(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(kit.Live(t, u).Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return ""
	}
	s, _ := cs[0].(map[string]any)["image"].(string)
	return s
}

// setImage sets the Deployment manifest's first container image: a
// commit to Git.
func setImage(t *testing.T, u *unstructured.Unstructured, img string) {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	cs[0].(map[string]any)["image"] = img
	if err := unstructured.SetNestedSlice(u.Object, cs, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
}

// targetPath is the URL path of u: the manager's writes to it are counted
// there.
func targetPath(u *unstructured.Unstructured) string {
	return fmt.Sprintf("/apis/apps/v1/namespaces/%s/deployments/%s", u.GetNamespace(), u.GetName())
}

// quiet checks that fieldops writes nothing to target once it has seen
// the target as it is now: a reconcile of fp that read it finishes
// without a write.
func quiet(t *testing.T, fp *v1alpha1.FieldPatch, target *unstructured.Unstructured) {
	t.Helper()
	kit.TargetSeen(t, target)
	before := writes.Writes(targetPath(target))
	kit.Reconciled(t, "fieldpatch", fp)
	if n := writes.Writes(targetPath(target)) - before; n != 0 {
		t.Errorf("fieldops wrote %s %d times, want none", target.GetName(), n)
	}
}

// fight checks one round of a tool's apply over the patch: the apply
// takes spec.replicas (apply, which returns the action to log), fieldops
// takes it back, and the Deployment's spec was written twice, once by
// each (two generations: every write of a Deployment's spec makes one).
func fight(t *testing.T, fp *v1alpha1.FieldPatch, deploy *unstructured.Unstructured, apply func()) {
	t.Helper()
	gen := kit.Live(t, deploy).GetGeneration()
	apply()
	testkit.Eventually(t, "fieldops repairs spec.replicas", func() (bool, string) {
		got := owners(t, deploy, ".spec.replicas")
		return replicas(t, deploy) == 5 && slices.Equal(got, []string{manager(fp) + "/Apply"}), fmt.Sprint(replicas(t, deploy), got)
	})
	if n := kit.Live(t, deploy).GetGeneration() - gen; n != 2 {
		t.Errorf("the Deployment's spec was written %d times in the round, want 2 (the tool's apply, fieldops's repair)", n)
	}
}

// deletePatch deletes fp and waits until it is gone (its finalizer has
// handed the fields back).
func deletePatch(t *testing.T, fp *v1alpha1.FieldPatch) { t.Helper(); kit.DeleteAndWait(t, fp) }

// proxy is the value of HTTP_PROXY in the live Deployment's first
// container.
func proxy(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(kit.Live(t, u).Object, "spec", "template", "spec", "containers")
	env, _, _ := unstructured.NestedSlice(cs[0].(map[string]any), "env")
	for _, e := range env {
		if m := e.(map[string]any); m["name"] == "HTTP_PROXY" {
			v, _ := m["value"].(string)
			return v
		}
	}
	return ""
}

// setProxy sets HTTP_PROXY in the Deployment manifest's first container:
// a commit to Git.
func setProxy(t *testing.T, u *unstructured.Unstructured, value string) {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	cs[0].(map[string]any)["env"] = []any{map[string]any{"name": "HTTP_PROXY", "value": value}}
	if err := unstructured.SetNestedSlice(u.Object, cs, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
}

// clientKey is u's namespace and name.
func clientKey(u *unstructured.Unstructured) client.ObjectKey { return client.ObjectKeyFromObject(u) }

// setOf is the identities of objs, as kstatus and the ssa library take
// them.
func setOf(objs []*unstructured.Unstructured) object.ObjMetadataSet {
	return object.UnstructuredSetToObjMetadataSet(objs)
}

// testApp is the recipes' app with test's recipe over it (test empty:
// the app alone), in a namespace of the running test's own: the
// Deployment as Git has it, the FieldPatch, and every object.
func testApp(t *testing.T, test string) (deploy, patch *unstructured.Unstructured, objs []*unstructured.Unstructured) {
	t.Helper()
	ns := kit.Namespace(t, nsName(t.Name()))
	objs = app(t, test, ns)
	deploy, patch = pick(t, objs, "Deployment"), pick(t, objs, "FieldPatch")
	cleanup(t, patch, deploy)
	return deploy, patch, objs
}

// cleanup deletes objs, in order, at the end of the test and waits until
// each is gone (a FieldPatch's finalizer hands its fields back first), so
// that the test can run again (-count).
func cleanup(t *testing.T, objs ...*unstructured.Unstructured) {
	t.Helper()
	t.Cleanup(func() {
		for _, o := range objs {
			if kit.Exists(t, o) {
				kit.DeleteAndWait(t, o.DeepCopy())
			}
		}
	})
}

// yielded checks that the patch (yieldTo the tool) left replicas, which
// Git sets, to the tool and says so, and holds the proxy variable, which
// Git does not set.
func yielded(t *testing.T, fp *v1alpha1.FieldPatch, deploy *unstructured.Unstructured) {
	t.Helper()
	if c := ready(t, fp); !strings.Contains(c.Message, "yielded") || !strings.Contains(c.Message, "replicas") {
		t.Errorf("Ready message %q does not say replicas was yielded", c.Message)
	}
	if replicas(t, deploy) != 2 || proxy(t, deploy) != "http://proxy.internal:3128" {
		t.Errorf("with the patch: replicas %d, HTTP_PROXY %q; want Git's 2 and the patch's proxy", replicas(t, deploy), proxy(t, deploy))
	}
}

// gitTakesProxy is the end of a yieldTo recipe: Git comes to set the
// proxy variable the patch holds, with another value, and apply (the
// tool's apply of deploy) takes it; fieldops lets it (a reconcile after
// the apply writes nothing). After the patch is deleted, Git's values
// stand.
func gitTakesProxy(t *testing.T, fp *v1alpha1.FieldPatch, deploy *unstructured.Unstructured, apply func()) {
	t.Helper()
	setProxy(t, deploy, "http://proxy.git:3128")
	kit.ReconciledAfter(t, "fieldpatch", fp, apply)
	quiet(t, fp, deploy)
	if proxy(t, deploy) != "http://proxy.git:3128" {
		t.Errorf("HTTP_PROXY %q, want Git's, left to the tool", proxy(t, deploy))
	}
	deletePatch(t, fp)
	if proxy(t, deploy) != "http://proxy.git:3128" || replicas(t, deploy) != 2 {
		t.Errorf("after the deletion: HTTP_PROXY %q replicas %d, want Git's", proxy(t, deploy), replicas(t, deploy))
	}
}

// nsName is the namespace of a test: its name (of the top test), in kebab case.
func nsName(test string) string {
	test, _, _ = strings.Cut(test, "/")
	b := []byte(test)
	out := make([]byte, 0, len(b)+4)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			if i > 0 {
				out = append(out, '-')
			}
			c += 'a' - 'A'
		}
		out = append(out, c)
	}
	return string(out)
}
