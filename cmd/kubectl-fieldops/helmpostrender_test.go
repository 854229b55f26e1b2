/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/internal/names"
	"github.com/fieldops/fieldops/test/testkit"
)

// splitDocuments keeps every byte, and cuts only at document markers.
func TestSplitDocuments(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a: 1\n", []string{"a: 1\n"}},
		{"---\na: 1\n---\nb: 2\n", []string{"---\na: 1\n", "---\nb: 2\n"}},
		{"a: 1\n--- # x\nb: '---'\n----\n---\t\n", []string{"a: 1\n", "--- # x\nb: '---'\n----\n", "---\t\n"}},
		{"---\r\na: 1\r\n---\r\n", []string{"---\r\na: 1\r\n", "---\r\n"}},
		{"a: |\n  ---x\n---", []string{"a: |\n  ---x\n", "---"}},
	} {
		var got []string
		for _, d := range splitDocuments([]byte(tc.in)) {
			got = append(got, string(d))
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitDocuments(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// helmNamespaces are the namespaces of TestHelmPostrender, the only ones
// its manager watches.
var helmNamespaces = []string{"helm-pr", "helm-pr-yield", "helm-pr-new", "helm-pr-secret"}

// TestHelmPostrender runs helm-postrender between "Helm" (server-side
// apply as field manager helm without force, as Helm 4 applies) and a
// manager of every fieldops controller watching helmNamespaces.
func TestHelmPostrender(t *testing.T) {
	namespaces := map[string]cache.Config{}
	for _, ns := range helmNamespaces {
		namespaces[ns] = cache.Config{}
	}
	cfg := rest.CopyConfig(restConfig)
	writes := &testkit.WriteCounter{}
	writes.Wrap(cfg)
	// TestPlan starts a manager of the same controllers in this process:
	// their names are registered once per process.
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: controllers.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: cache.Options{DefaultNamespaces: namespaces}, Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := controllers.SetupWith(mgr, controllers.Options{Concurrency: 1, OwnNamespace: planOwnNamespace}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(testkit.Start(mgr))
	t.Run("YieldsToFieldPatch", func(t *testing.T) { testHelmYieldsToFieldPatch(t, writes) })
	t.Run("YieldTo", testHelmYieldTo)
	t.Run("ReleaseNamespace", testHelmReleaseNamespace)
	t.Run("SecretNoLiveValues", testHelmSecretNoLiveValues)
	t.Run("PassThrough", testHelmPassThrough)
	t.Run("Unreadable", testHelmUnreadable)
}

// renderedWeb is the Deployment web as Helm renders it: a document
// marker, Helm's "# Source:" comment, no namespace (Helm applies it into
// the release's).
func renderedWeb(image, note, env string) string {
	return fmt.Sprintf(`---
# Source: web/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    note: %q
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: %s
        env: [{name: A, value: a}%s]
        resources:
          requests: {cpu: 100m, memory: 64Mi}
          limits: {memory: 128Mi}
`, note, image, env)
}

// helmApply applies every object of the manifests into ns as Helm 4
// does: server-side apply, field manager helm, no force.
func helmApply(t *testing.T, ns, manifests string) error {
	t.Helper()
	for _, doc := range splitDocuments([]byte(manifests)) {
		_, body := splitMarker(doc)
		obj := decodeObject(body)
		if obj == nil {
			continue
		}
		obj.SetNamespace(ns)
		if err := k8s.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("helm")); err != nil {
			return err
		}
	}
	return nil
}

// postrender runs helm-postrender on in, with args and the kubeconfig of
// the tests.
func postrender(t *testing.T, in string, args ...string) (string, string, error) {
	t.Helper()
	return pluginIn(t, in, append([]string{"helm-postrender", "--kubeconfig", kubeconfig}, args...)...)
}

func liveWeb(t *testing.T, ns string) *unstructured.Unstructured {
	t.Helper()
	live := &unstructured.Unstructured{}
	live.SetAPIVersion("apps/v1")
	live.SetKind("Deployment")
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, live); err != nil {
		t.Fatal(err)
	}
	return live
}

// webState is what the tests watch of the live Deployment web.
func webState(t *testing.T, ns string) string {
	t.Helper()
	live := liveWeb(t, ns)
	replicas, _, _ := unstructured.NestedInt64(live.Object, "spec", "replicas")
	note, _, _ := unstructured.NestedString(live.Object, "metadata", "annotations", "note")
	containers, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	c := containers[0].(map[string]interface{})
	memory, _, _ := unstructured.NestedString(c, "resources", "limits", "memory")
	env, _, _ := unstructured.NestedSlice(c, "env")
	return fmt.Sprintf("replicas %d, image %s, memory %s, note %s, %d env", replicas, c["image"], memory, note, len(env))
}

// withoutYielded is the object of the rendered manifest without
// .spec.replicas and the container's resources.limits (its only field,
// memory, yielded).
func withoutYielded(t *testing.T, rendered string) map[string]interface{} {
	t.Helper()
	_, body := splitMarker([]byte(rendered))
	obj := decodeObject(body)
	unstructured.RemoveNestedField(obj.Object, "spec", "replicas")
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	unstructured.RemoveNestedField(containers[0].(map[string]interface{}), "resources", "limits")
	if err := unstructured.SetNestedSlice(obj.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	return obj.Object
}

// A FieldPatch pins replicas 5 and a memory limit of a Deployment Helm
// applied. Three upgrades (image, annotation, a new env var) through the
// post-renderer leave exactly those two fields out, apply without a
// conflict, and fieldops writes nothing after them. Once the patch is
// deleted (HandBack) the fields are Helm's: the manifest passes through
// and the chart's values are applied.
func testHelmYieldsToFieldPatch(t *testing.T, writes *testkit.WriteCounter) {
	ns := "helm-pr"
	createNamespace(t, ns)
	if err := helmApply(t, ns, renderedWeb("nginx:1.27", "v1", "")); err != nil {
		t.Fatal(err)
	}
	fp := &v1alpha1.FieldPatch{}
	createReady(t, `apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: helm-pr}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  patch: {spec: {replicas: 5, template: {spec: {containers: [{name: app, resources: {limits: {memory: 256Mi}}}]}}}}
`, fp)
	t.Setenv("HELM_NAMESPACE", ns)
	wantNote := fmt.Sprintf("Deployment helm-pr/web: left to %q (FieldPatch helm-pr/pin): .spec.replicas, .spec.template.spec.containers[name=\"app\"].resources.limits.memory\n", names.FieldPatch(false, ns, "pin"))
	var in string
	for i, step := range []struct{ image, note, env string }{
		{"nginx:1.28", "v2", ""},
		{"nginx:1.28", "v3", ", {name: B, value: b}"},
		{"nginx:1.29", "v3", ", {name: B, value: b}"},
	} {
		in = renderedWeb(step.image, step.note, step.env)
		out, stderr, err := postrender(t, in)
		if err != nil {
			t.Fatalf("upgrade %d: %v\n%s", i, err, stderr)
		}
		if stderr != wantNote {
			t.Errorf("upgrade %d: standard error\n%s\nwant\n%s", i, stderr, wantNote)
		}
		if !strings.HasPrefix(out, "---\n# Source: web/templates/deployment.yaml\n") {
			t.Errorf("upgrade %d: the marker and Helm's comment are lost:\n%s", i, out)
		}
		_, body := splitMarker([]byte(out))
		if got, want := decodeObject(body).Object, withoutYielded(t, in); !reflect.DeepEqual(got, want) {
			t.Fatalf("upgrade %d: post-rendered\n%s\nwant the manifest without .spec.replicas and the memory limit", i, out)
		}
		before := writes.Writes("/deployments/web")
		if err := helmApply(t, ns, out); err != nil {
			t.Fatalf("upgrade %d: apply without force: %v", i, err)
		}
		envs := 1 + strings.Count(step.env, "name:")
		want := fmt.Sprintf("replicas 5, image %s, memory 256Mi, note %s, %d env", step.image, step.note, envs)
		rv := liveWeb(t, ns).GetResourceVersion()
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
			if got := webState(t, ns); got != want {
				t.Fatalf("upgrade %d: %s, want %s", i, got, want)
			}
		}
		if n := writes.Writes("/deployments/web") - before; n != 0 || liveWeb(t, ns).GetResourceVersion() != rv {
			t.Errorf("upgrade %d: fieldops wrote the Deployment %d times after Helm's apply", i, n)
		}
	}

	testHelmKeepLiveValues(t, in, wantNote)

	testkit.Kit{Client: k8s}.DeleteAndWait(t, fp)
	out, stderr, err := postrender(t, in)
	if err != nil || out != in || stderr != "" {
		t.Fatalf("after the hand-back: %v, standard error %q, post-rendered\n%s\nwant the manifest as rendered", err, stderr, out)
	}
	if err := helmApply(t, ns, out); err != nil {
		t.Fatalf("upgrade after the hand-back: %v", err)
	}
	if got, want := webState(t, ns), "replicas 1, image nginx:1.29, memory 128Mi, note v3, 2 env"; got != want {
		t.Errorf("after the hand-back and an upgrade: %s, want %s", got, want)
	}
}

// With --keep-live-values (for Helm 3's three-way merge), the yielded
// fields keep their live values instead of being left out.
func testHelmKeepLiveValues(t *testing.T, in, wantNote string) {
	t.Helper()
	out, stderr, err := postrender(t, in, "--keep-live-values")
	if err != nil || stderr != wantNote {
		t.Fatalf("--keep-live-values: %v, standard error\n%s\nwant\n%s", err, stderr, wantNote)
	}
	_, body := splitMarker([]byte(in))
	want := decodeObject(body)
	if err := unstructured.SetNestedField(want.Object, int64(5), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(want.Object, "spec", "template", "spec", "containers")
	if err := unstructured.SetNestedField(containers[0].(map[string]interface{}), "256Mi", "resources", "limits", "memory"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(want.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	_, body = splitMarker([]byte(out))
	if got := decodeObject(body); got == nil || !reflect.DeepEqual(got.Object, want.Object) {
		t.Errorf("--keep-live-values: post-rendered\n%s\nwant the manifest with replicas 5 and the memory limit 256Mi", out)
	}
}

// An autoscaler writing replicas through the scale subresource (an
// Update entry) owns spec.replicas: the chart's replicas conflicts with
// it, unless --yield-to names it.
func testHelmYieldTo(t *testing.T) {
	ctx := context.Background()
	ns := "helm-pr-yield"
	createNamespace(t, ns)
	if err := helmApply(t, ns, renderedWeb("nginx:1.27", "v1", "")); err != nil {
		t.Fatal(err)
	}
	if err := k8s.SubResource("scale").Patch(ctx, liveWeb(t, ns), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`)), client.FieldOwner("autoscaler")); err != nil {
		t.Fatal(err)
	}
	in := renderedWeb("nginx:1.28", "v2", "")
	out, stderr, err := postrender(t, in, "-n", ns)
	if err != nil || out != in || stderr != "" {
		t.Fatalf("without --yield-to: %v, %q, post-rendered\n%s", err, stderr, out)
	}
	if err := helmApply(t, ns, out); !apierrors.IsConflict(err) {
		t.Fatalf("applying the chart's replicas over the autoscaler's: %v, want a conflict", err)
	}
	out, stderr, err = postrender(t, in, "-n", ns, "--yield-to", "autoscaler", "--yield-to", "other")
	if err != nil {
		t.Fatal(err)
	}
	if want := "Deployment helm-pr-yield/web: left to \"autoscaler\": .spec.replicas\n"; stderr != want {
		t.Errorf("standard error %q, want %q", stderr, want)
	}
	if err := helmApply(t, ns, out); err != nil {
		t.Fatalf("with --yield-to: %v", err)
	}
	if got, want := webState(t, ns), "replicas 3, image nginx:1.28, memory 128Mi, note v2, 1 env"; got != want {
		t.Errorf("%s, want %s", got, want)
	}
}

// The release's namespace is --namespace, else HELM_NAMESPACE, never
// the kubeconfig's: given neither, the post-renderer fails and writes
// nothing (Helm then applies nothing), even though the kubeconfig's
// context names the namespace of the Deployment (testHelmYieldTo's,
// whose replicas the autoscaler holds). --namespace wins over
// HELM_NAMESPACE.
func testHelmReleaseNamespace(t *testing.T) {
	const ns = "helm-pr-yield"
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts[cfg.CurrentContext].Namespace = ns
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	in := renderedWeb("nginx:1.28", "v2", "")
	run := func(args ...string) (string, string, error) {
		return pluginIn(t, in, append([]string{"helm-postrender", "--kubeconfig", path, "--yield-to", "autoscaler"}, args...)...)
	}
	t.Setenv("HELM_NAMESPACE", "")
	out, stderr, err := run()
	if err == nil || out != "" || !strings.Contains(err.Error(), "--namespace") || !strings.Contains(err.Error(), "HELM_NAMESPACE") {
		t.Errorf("no release namespace: error %v, standard error %q, post-rendered %q; want an error asking for --namespace or HELM_NAMESPACE, nothing written", err, stderr, out)
	}
	want := "Deployment helm-pr-yield/web: left to \"autoscaler\": .spec.replicas\n"
	t.Setenv("HELM_NAMESPACE", ns)
	if _, stderr, err := run(); err != nil || stderr != want {
		t.Errorf("HELM_NAMESPACE=%s: %v, standard error %q, want %q", ns, err, stderr, want)
	}
	t.Setenv("HELM_NAMESPACE", "helm-pr-new")
	if _, stderr, err := run("--namespace", ns); err != nil || stderr != want {
		t.Errorf("--namespace %s over HELM_NAMESPACE: %v, standard error %q, want %q", ns, err, stderr, want)
	}
}

// A FieldPatch holds a Secret's password. With --keep-live-values as
// without it, the post-rendered Secret leaves the password out: its live
// value would otherwise be stored in Helm's release record. Neither
// standard output nor standard error holds the live value, in base64 or
// decoded; standard error says the Secret got no live values.
func testHelmSecretNoLiveValues(t *testing.T) {
	const ns = "helm-pr-secret"
	const live = "live-s3cret"
	liveB64 := base64.StdEncoding.EncodeToString([]byte(live))
	createNamespace(t, ns)
	in := `---
# Source: db/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: db
type: Opaque
data:
  user: YWRtaW4=
  password: Y2hhcnQ=
`
	if err := helmApply(t, ns, in); err != nil {
		t.Fatal(err)
	}
	fp := &v1alpha1.FieldPatch{}
	createReady(t, `apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: password, namespace: helm-pr-secret}
spec:
  target: {apiVersion: v1, kind: Secret, name: db}
  patch: {data: {password: `+liveB64+`}}
`, fp)
	// Gone before the next test: kubectl fieldops status -A lists every
	// patch (TestStatus's golden file).
	defer testkit.Kit{Client: k8s}.DeleteAndWait(t, fp)
	leftOut := fmt.Sprintf("Secret helm-pr-secret/db: left to %q (FieldPatch helm-pr-secret/password): .data.password\n", names.FieldPatch(false, ns, "password"))
	for _, tc := range []struct {
		args []string
		note string
	}{
		{[]string{"-n", ns}, leftOut},
		{[]string{"-n", ns, "--keep-live-values"}, leftOut + "Secret helm-pr-secret/db: " + secretNotKept + "\n"},
	} {
		out, stderr, err := postrender(t, in, tc.args...)
		if err != nil || stderr != tc.note {
			t.Fatalf("%v: %v, standard error\n%s\nwant\n%s", tc.args, err, stderr, tc.note)
		}
		for _, v := range []string{live, liveB64} {
			if strings.Contains(out, v) || strings.Contains(stderr, v) {
				t.Errorf("%v: the Secret's live value %q is written out", tc.args, v)
			}
		}
		_, body := splitMarker([]byte(out))
		obj := decodeObject(body)
		if data, _, _ := unstructured.NestedStringMap(obj.Object, "data"); !reflect.DeepEqual(data, map[string]string{"user": "YWRtaW4="}) {
			t.Errorf("%v: post-rendered data %v, want the user alone (the password left out)", tc.args, data)
		}
	}
}

// passThrough is a release's manifests: an object on the cluster that
// only Helm and a person hold, an object new in this version, a
// comment-only document, an object of a kind not served yet (its CRD
// comes with the release), with Helm's markers and comments.
const passThrough = `---
# Source: c/templates/kept.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: kept   # a comment
data:   {a: "1"}
---
# Source: c/templates/new.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: new}
data:
  b: "2"
--- # Source: c/templates/empty.yaml
---
apiVersion: widgets.example.com/v1
kind: Widget
metadata:
  name: w
spec: {size: 3}
`

// Objects absent from the cluster, a first install (the release's
// namespace does not exist yet) and objects nobody yielded to holds a
// field of pass through byte for byte.
func testHelmPassThrough(t *testing.T) {
	ns := "helm-pr-new"
	createNamespace(t, ns)
	applyAs(t, "helm", `{apiVersion: v1, kind: ConfigMap, metadata: {name: kept, namespace: helm-pr-new}, data: {a: "0"}}`)
	kept := &unstructured.Unstructured{}
	kept.SetAPIVersion("v1")
	kept.SetKind("ConfigMap")
	kept.SetNamespace(ns)
	kept.SetName("kept")
	mergeAs(t, "kubectl-edit", kept, `{"metadata":{"labels":{"team":"a"}}}`)
	for _, args := range [][]string{{"-n", ns}, {"-n", "helm-pr-install"}} {
		out, stderr, err := postrender(t, passThrough+renderedWeb("nginx:1.27", "v1", ""), args...)
		if err != nil || out != passThrough+renderedWeb("nginx:1.27", "v1", "") || stderr != "" {
			t.Errorf("%v: %v, standard error %q, post-rendered\n%s", args, err, stderr, out)
		}
	}
}

// A user who may not read an object stops the post-renderer: non-zero
// exit, the object and the error named, nothing on standard output.
func testHelmUnreadable(t *testing.T) {
	const user = "helm-pr-nobody"
	path := testkit.Kubeconfig(t, controlPlane, envtest.User{Name: user})
	// May read ConfigMaps, not Deployments: the first object is read,
	// the second is not.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: "helm-pr-new"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: "helm-pr-new"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: user}}}
	for _, o := range []client.Object{role, binding} {
		if err := k8s.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	in := passThrough + renderedWeb("nginx:1.27", "v1", "")
	logFile := filepath.Join(t.TempDir(), "postrender.log")
	out, _, err := pluginIn(t, in, "helm-postrender", "--kubeconfig", path, "-n", "helm-pr-new", "--log-file", logFile)
	if err == nil || out != "" || !strings.Contains(err.Error(), "Deployment helm-pr-new/web") || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("unreadable Deployment: error %v, post-rendered %q; want an error naming Deployment helm-pr-new/web, forbidden, and nothing written", err, out)
	}
	if b, _ := os.ReadFile(logFile); err == nil || string(b) != "Error: "+err.Error()+"\n" {
		t.Errorf("--log-file holds %q, want the error", b)
	}
}
