/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package helm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/test/testkit"
)

// ns is the Helm 4 release's namespace, ns3 the Helm 3 release's: the
// namespaces the manager watches.
const (
	ns  = "helm-sdk"
	ns3 = "helm3-sdk"
)

var (
	k8s        client.WithWatch
	writes     = &testkit.WriteCounter{}
	kit        testkit.Kit
	binDir     string
	helmEnv    []string
	root       string
	kubeconfig string
	cluster    *localcp.ControlPlane
)

// TestMain starts the local control plane and a manager of every
// fieldops controller, builds helm (the pinned Helm 4 CLI) and
// kubectl-fieldops, and installs the post-renderer plugin from
// deploy/helm-plugin into a Helm home of the test's.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 1 }
	var err error
	if root, err = localcp.ModuleRoot(); err != nil {
		return fail(err)
	}
	dir, err := os.MkdirTemp("", "fieldops-helm")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	if err := build(dir); err != nil {
		return fail(err)
	}
	// A small cluster: kube-controller-manager's Deployment controller
	// makes the ReplicaSets the test counts.
	cp, err := localcp.Start(localcp.Options{Cluster: &localcp.ClusterOptions{}})
	if err != nil {
		return fail(err)
	}
	defer func() { _ = cp.Stop() }()
	if err := setup(cp, dir); err != nil {
		return fail(err)
	}
	stop, err := startManager(cp.Config)
	if err != nil {
		return fail(err)
	}
	defer stop()
	return m.Run()
}

// build builds helm (the version go.mod pins) and kubectl-fieldops (of
// this checkout) into dir/bin.
func build(dir string) error {
	binDir = filepath.Join(dir, "bin")
	for _, pkg := range []string{"helm.sh/helm/v4/cmd/helm", "github.com/fieldops/fieldops/cmd/kubectl-fieldops"} {
		out, err := exec.Command("go", "build", "-trimpath", "-o", binDir+"/", pkg).CombinedOutput()
		if err != nil {
			return fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
		}
	}
	return nil
}

// setup writes a kubeconfig, a client, the environment of helm, and
// installs the plugin.
func setup(cp *localcp.ControlPlane, dir string) error {
	cluster = cp
	user, err := cp.Env.ControlPlane.AddUser(envtest.User{Name: "helm-test", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return err
	}
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		return err
	}
	if k8s, err = client.NewWithWatch(cp.Config, client.Options{Scheme: controllers.Scheme()}); err != nil {
		return err
	}
	helmEnv = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig,
		"HELM_CONFIG_HOME="+filepath.Join(dir, "config"), "HELM_CACHE_HOME="+filepath.Join(dir, "cache"), "HELM_DATA_HOME="+filepath.Join(dir, "data"))
	if out, err := helm("plugin", "install", filepath.Join(root, "deploy", "helm-plugin", "fieldops-postrender")); err != nil {
		return fmt.Errorf("helm plugin install: %w\n%s", err, out)
	}
	return nil
}

// startManager runs every fieldops controller, watching ns, its writes
// and reconciles counted (kit). The manager logs nothing: its logger only
// feeds testkit.Reconciles.
func startManager(cfg *rest.Config) (func(), error) {
	ctrl.SetLogger(logr.Discard())
	cfg = rest.CopyConfig(cfg)
	writes.Wrap(cfg)
	reconciles := &testkit.Reconciles{}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: controllers.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}, ns3: {}, nsForce: {}}},
		Logger: reconciles.Logger(funcr.New(func(string, string) {}, funcr.Options{})), NewCache: reconciles.NewCache})
	if err != nil {
		return nil, err
	}
	if err := controllers.SetupWith(mgr, controllers.Options{Concurrency: 1, OwnNamespace: "fieldops-system"}); err != nil {
		return nil, err
	}
	targets, err := controllers.TargetReader(mgr)
	if err != nil {
		return nil, err
	}
	kit = testkit.Kit{Client: k8s, Reconciles: reconciles, Targets: targets}
	return testkit.Start(mgr), nil
}

// helm runs the helm binary with args in the test's Helm home.
func helm(args ...string) (string, error) {
	return helmWith(nil, args...)
}

// helmWith runs helm with env added to the test's Helm environment.
func helmWith(env []string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(binDir, "helm"), args...)
	cmd.Env = append(slices.Clone(helmEnv), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The release's plugin archive (make helm-plugin-dist) installs with
// helm plugin install, at the release's version. It is not signed:
// Helm 4 verifies archives unless told --verify=false.
func TestPluginArchive(t *testing.T) {
	dist := t.TempDir()
	make := exec.Command("make", "helm-plugin-dist", "VERSION=0.9.1", "DIST="+dist)
	make.Dir = root
	if out, err := make.CombinedOutput(); err != nil {
		t.Fatalf("make helm-plugin-dist: %v\n%s", err, out)
	}
	env := []string{"HELM_DATA_HOME=" + t.TempDir()}
	archive := filepath.Join(dist, "fieldops-postrender-0.9.1.tgz")
	if out, err := helmWith(env, "plugin", "install", archive, "--verify=false"); err != nil {
		t.Fatalf("helm plugin install %s: %v\n%s", archive, err, out)
	}
	out, err := helmWith(env, "plugin", "list")
	if err != nil || !regexp.MustCompile(`fieldops-postrender\s+0\.9\.1\s+postrenderer/v1`).MatchString(out) {
		t.Errorf("helm plugin list: %v\n%s", err, out)
	}
}

// chart is the chart of the tests: a Deployment with replicas 1 and
// resources; the image tag, an annotation and extra env vars are values.
var chart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: web\nversion: 0.1.0\n",
	"values.yaml": "tag: \"1.27\"\nnote: v1\nextraEnv: []\n",
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    note: {{ .Values.note | quote }}
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
        image: nginx:{{ .Values.tag }}
        env:
        - {name: A, value: a}
        {{- range .Values.extraEnv }}
        - {name: {{ . }}, value: x}
        {{- end }}
        resources:
          requests: {cpu: 100m, memory: 64Mi}
          limits: {memory: 128Mi}
`,
}

func writeChart(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range chart {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// release runs helm verb (install or upgrade) of the chart with the
// post-renderer plugin and the values given.
func release(t *testing.T, verb, chartDir string, values ...string) {
	t.Helper()
	args := []string{verb, "web", chartDir, "-n", ns, "--post-renderer", "fieldops-postrender", "--post-renderer-args", "--namespace=" + ns}
	for _, v := range values {
		args = append(args, "--set", v)
	}
	if out, err := helm(args...); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
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

// state is what the test checks of the live Deployment of ns.
func state(t *testing.T, ns string) string {
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

// waitReplicaSets waits until the Deployment of ns has finished rolling
// out its spec and ns has n ReplicaSets, and returns their pod templates'
// memory limits, oldest first.
//
// The count must not be taken while a ReplicaSet is still to come (a late
// rollout). The Deployment controller creates the ReplicaSet of a new pod
// template before it writes the status of that spec, and counts as
// updated only the pods of the current template's ReplicaSet: once the
// status has observed the Deployment's generation and every replica is
// updated and available with no old one left (rolledOut), the current
// template's ReplicaSet exists and no other comes unless the spec changes
// again, which the callers rule out (fieldops wrote nothing, helm has
// returned). The Deployment is read before the ReplicaSets, so the list
// is at least as new as the status.
func waitReplicaSets(t *testing.T, ns string, n int) []string {
	t.Helper()
	var memory []string
	testkit.Eventually(t, fmt.Sprintf("the rollout of web and %d ReplicaSets", n), func() (bool, string) {
		d := &appsv1.Deployment{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil {
			return false, err.Error()
		}
		if ok, msg := rolledOut(d); !ok {
			return false, msg
		}
		rs := &appsv1.ReplicaSetList{}
		if err := k8s.List(context.Background(), rs, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		revision := func(r appsv1.ReplicaSet) int {
			n, _ := strconv.Atoi(r.Annotations["deployment.kubernetes.io/revision"])
			return n
		}
		slices.SortFunc(rs.Items, func(a, b appsv1.ReplicaSet) int { return revision(a) - revision(b) })
		memory = memory[:0]
		for _, r := range rs.Items {
			memory = append(memory, r.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String())
		}
		return len(memory) == n, fmt.Sprintf("%d ReplicaSets %v, want %d", len(memory), memory, n)
	})
	return memory
}

// rolledOut reports whether the Deployment controller has finished the
// rollout of d's spec (the checks of kubectl rollout status), and d's
// rollout status.
func rolledOut(d *appsv1.Deployment) (bool, string) {
	s := d.Status
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	msg := fmt.Sprintf("generation %d observed %d, replicas %d: %d updated, %d in all, %d available", d.Generation, s.ObservedGeneration, want, s.UpdatedReplicas, s.Replicas, s.AvailableReplicas)
	return s.ObservedGeneration == d.Generation && s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want, msg
}

// reconciled waits until fieldops has answered the Deployment of fp's
// namespace as it is now (after a helm upgrade): every write it decides
// on is done, so a write count or state checked afterwards holds its
// answer. Two signals, in order: the controllers' target cache holds the
// Deployment at its current resourceVersion or a later one
// (testkit.Kit.TargetSeen); then a reconcile of fp that started after
// that has finished (testkit.Kit.Reconciled nudges fp and waits for the
// end of a reconcile that read the nudge), so it read the Deployment with
// the upgrade's change.
func reconciled(t *testing.T, fp *v1alpha1.FieldPatch) {
	t.Helper()
	kit.TargetSeen(t, liveWeb(t, fp.Namespace))
	kit.Reconciled(t, "fieldpatch", fp)
}

// watchReplicas records the lowest spec.replicas the Deployment has
// from now until the returned function is called, which returns it.
func watchReplicas(t *testing.T, ns string) func() int64 {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("apps/v1")
	list.SetKind("DeploymentList")
	w, err := k8s.Watch(context.Background(), list, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	lowest := int64(1 << 30)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok && u.GetName() == "web" {
				r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
				mu.Lock()
				lowest = min(lowest, r)
				mu.Unlock()
			}
		}
	}()
	return func() int64 {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return lowest
	}
}

// Issue 40: a FieldPatch pins replicas 5 and a memory limit of a
// release's Deployment. Three helm upgrades with the post-renderer,
// each changing other values, exit 0, apply their changes, leave
// replicas at 5 throughout and cause no write of fieldops. After the
// patch is deleted (HandBack) the next upgrade applies the chart's
// values; a Restore patch gives them back at its deletion.
func TestHelmUpgradesYieldToFieldPatch(t *testing.T) {
	ctx := context.Background()
	if out, err := helm("plugin", "list"); err != nil || !strings.Contains(out, "fieldops-postrender") {
		t.Fatalf("helm plugin list: %v\n%s", err, out)
	}
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	chartDir := writeChart(t)
	// A first install passes through.
	release(t, "install", chartDir)
	if got, want := state(t, ns), "replicas 1, image nginx:1.27, memory 128Mi, note v1, 1 env"; got != want {
		t.Fatalf("installed: %s, want %s", got, want)
	}
	fp := createReady(t, `apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: helm-sdk}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  patch: {spec: {replicas: 5, template: {spec: {containers: [{name: app, resources: {limits: {memory: 256Mi}}}]}}}}
`)
	// Without the post-renderer, Helm 4's apply (no force) conflicts
	// with the patch.
	if out, err := helm("upgrade", "web", chartDir, "-n", ns, "--set", "tag=1.28"); err == nil || !strings.Contains(out, "conflict") || !strings.Contains(out, "fieldops-fieldpatch/helm-sdk/pin") {
		t.Fatalf("helm upgrade without the post-renderer: %v, want a conflict with the patch\n%s", err, out)
	}
	lowest := watchReplicas(t, ns)
	// The patch's own rollout: the ReplicaSet of its memory limit.
	waitReplicaSets(t, ns, 2)
	rollouts := 2
	for i, step := range []struct {
		values []string
		want   string
		// rollouts is how many ReplicaSets the chart's change makes: one
		// per change of the pod template, none for the patch's fields.
		rollouts int
	}{
		{[]string{"tag=1.28"}, "replicas 5, image nginx:1.28, memory 256Mi, note v1, 1 env", 1},
		{[]string{"tag=1.28", "note=v2"}, "replicas 5, image nginx:1.28, memory 256Mi, note v2, 1 env", 0},
		{[]string{"tag=1.28", "note=v2", "extraEnv={B}"}, "replicas 5, image nginx:1.28, memory 256Mi, note v2, 2 env", 1},
	} {
		before := writes.Writes("/deployments/web")
		release(t, "upgrade", chartDir, step.values...)
		reconciled(t, fp)
		if got := state(t, ns); got != step.want {
			t.Fatalf("upgrade %d: %s, want %s", i, got, step.want)
		}
		if n := writes.Writes("/deployments/web") - before; n != 0 {
			t.Errorf("upgrade %d: fieldops wrote the Deployment %d times", i, n)
		}
		rollouts += step.rollouts
		for _, memory := range waitReplicaSets(t, ns, rollouts)[2:] {
			if memory != "256Mi" {
				t.Errorf("upgrade %d: a ReplicaSet of the memory limit %q", i, memory)
			}
		}
	}
	if l := lowest(); l != 5 {
		t.Errorf("replicas went down to %d during the upgrades", l)
	}
	// The release records what Helm applied: without the yielded fields.
	if out, err := helm("get", "manifest", "web", "-n", ns); err != nil || strings.Contains(out, "replicas:") || strings.Contains(out, "limits:") || !strings.Contains(out, "name: B") {
		t.Errorf("helm get manifest: %v, want the last upgrade's manifest without replicas and limits\n%s", err, out)
	}

	kit.DeleteAndWait(t, fp)
	release(t, "upgrade", chartDir, "tag=1.29", "note=v2", "extraEnv={B}")
	if got, want := state(t, ns), "replicas 1, image nginx:1.29, memory 128Mi, note v2, 2 env"; got != want {
		t.Errorf("after the hand-back and an upgrade: %s, want %s", got, want)
	}
	if out, err := helm("get", "manifest", "web", "-n", ns); err != nil || !strings.Contains(out, "replicas: 1") || !strings.Contains(out, "memory: 128Mi") {
		t.Errorf("helm get manifest after the hand-back: %v, want the chart's manifest whole\n%s", err, out)
	}
	testRestore(t, chartDir)
}

// With deletionPolicy Restore, the chart's values are back at the
// patch's deletion: Helm, behind the post-renderer, wrote none of the
// patch's fields meanwhile. The next upgrade passes through.
func testRestore(t *testing.T, chartDir string) {
	fp := createReady(t, `apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: restore, namespace: helm-sdk}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  deletionPolicy: Restore
  patch: {spec: {replicas: 5, template: {spec: {containers: [{name: app, resources: {limits: {memory: 256Mi}}}]}}}}
`)
	release(t, "upgrade", chartDir, "tag=1.29", "note=v3", "extraEnv={B}")
	if got, want := state(t, ns), "replicas 5, image nginx:1.29, memory 256Mi, note v3, 2 env"; got != want {
		t.Fatalf("upgrade beside a Restore patch: %s, want %s", got, want)
	}
	kit.DeleteAndWait(t, fp)
	if got, want := state(t, ns), "replicas 1, image nginx:1.29, memory 128Mi, note v3, 2 env"; got != want {
		t.Errorf("at the Restore patch's deletion: %s, want %s", got, want)
	}
	release(t, "upgrade", chartDir, "tag=1.29", "note=v4", "extraEnv={B}")
	if got, want := state(t, ns), "replicas 1, image nginx:1.29, memory 128Mi, note v4, 2 env"; got != want {
		t.Errorf("upgrade after the Restore: %s, want %s", got, want)
	}
}

// createReady creates the FieldPatch of y and waits until it is Ready.
func createReady(t *testing.T, y string) *v1alpha1.FieldPatch {
	t.Helper()
	fp := &v1alpha1.FieldPatch{}
	if err := yaml.UnmarshalStrict([]byte(y), fp); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(context.Background(), fp); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "FieldPatch Ready", func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fp), fp); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(fp.Status.Conditions, "Ready")
		if c == nil {
			return false, "no Ready condition"
		}
		return c.Status == metav1.ConditionTrue && c.ObservedGeneration == fp.GetGeneration(), c.Reason + ": " + c.Message
	})
	return fp
}
