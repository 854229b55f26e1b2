/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/workload"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/test/testkit"
)

func deploymentYAML(name string) string {
	return fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  labels: {app: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 8080}]
`, name)
}

func serviceYAML(name string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Service
metadata:
  name: %[1]s
spec:
  selector: {app: %[1]s}
  ports:
  - {name: http, port: 80, targetPort: 8080}
  - {name: metrics, port: 9090}
`, name)
}

func newWorkload(t testing.TB, ns, name string, docs ...string) *v1alpha1.ManagedWorkload {
	t.Helper()
	return createWorkload(t, ns, name, nil, docs...)
}

// newWorkloadNoWait is newWorkload with spec.wait false: Ready means
// applied. The test cluster runs no Deployment controller, so a test of
// ownership with a Deployment does not wait for a rollout that never
// comes (TestReadyWaitsForHealth tests waiting).
func newWorkloadNoWait(t testing.TB, ns, name string, docs ...string) *v1alpha1.ManagedWorkload {
	t.Helper()
	return createWorkload(t, ns, name, ptr.To(false), docs...)
}

func createWorkload(t testing.TB, ns, name string, wait *bool, docs ...string) *v1alpha1.ManagedWorkload {
	t.Helper()
	mw := &v1alpha1.ManagedWorkload{}
	mw.Name, mw.Namespace = name, ns
	mw.Spec.Resources = resources(t, docs...)
	mw.Spec.Wait = wait
	if err := k8s.Create(context.Background(), mw); err != nil {
		t.Fatal(err)
	}
	return mw
}

func ref(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func objectWrites(ns, resource, name string) int {
	return requests.Writes(fmt.Sprintf("/namespaces/%s/%s/%s", ns, resource, name))
}

// a. Strimzi #6938: a mutating webhook adds Kyverno's annotation and a
// label to every Deployment and Service. Server-Side Apply leaves them
// alone and stops writing; the legacy path loops.
func TestKyvernoWebhookServerSideApply(t *testing.T) {
	t.Parallel()
	ns := kit.Namespace(t, "kyverno-ssa", "kyverno-test", "true")
	mw := newWorkloadNoWait(t, ns, "web", deploymentYAML("web"), serviceYAML("web"))
	waitReason(t, mw, workload.ReasonApplied)
	if mw.Status.Mode != workload.ModeServerSideApply {
		t.Fatalf("mode %q", mw.Status.Mode)
	}
	dep, svc := ref("apps/v1", "Deployment", ns, "web"), ref("v1", "Service", ns, "web")
	for _, u := range []*unstructured.Unstructured{dep, svc} {
		l := kit.Live(t, u)
		if l.GetAnnotations()[kyvernoAnnotation] != kyvernoPatches || l.GetLabels()[kyvernoLabel] != "platform" {
			t.Fatalf("%s lacks the webhook's annotation or label: %v %v", u.GetKind(), l.GetAnnotations(), l.GetLabels())
		}
	}
	// Whatever was under way has finished once a reconcile that saw a
	// first nudge has; a reconcile of every object after a second nudge
	// then neither writes nor is admitted: converged, so no later
	// reconcile will either.
	reconciled(t, mw)
	before := objectWrites(ns, "deployments", "web") + objectWrites(ns, "services", "web")
	calls := webhookCalls.Load()
	st := reconciled(t, mw)
	if after := objectWrites(ns, "deployments", "web") + objectWrites(ns, "services", "web"); after != before {
		t.Fatalf("%d writes to the Deployment and Service in a reconcile after convergence, want 0 (%s)", after-before, st.Last)
	}
	if c := webhookCalls.Load(); c != calls {
		t.Fatalf("%d admissions in a reconcile after convergence, want 0 (%s)", c-calls, st.Last)
	}
	for _, u := range []*unstructured.Unstructured{dep, svc} {
		l := kit.Live(t, u)
		if l.GetAnnotations()[kyvernoAnnotation] != kyvernoPatches || l.GetLabels()[kyvernoLabel] != "platform" {
			t.Fatalf("%s lost the webhook's annotation or label: %v %v", u.GetKind(), l.GetAnnotations(), l.GetLabels())
		}
	}
}

func TestKyvernoWebhookLegacyLoops(t *testing.T) {
	setSSA(t, false)
	ns := kit.Namespace(t, "kyverno-legacy", "kyverno-test", "true")
	mw := newWorkloadNoWait(t, ns, "web", deploymentYAML("web"), serviceYAML("web"))
	waitReason(t, mw, workload.ReasonNotConverged)
	if mw.Status.Mode != workload.ModeLegacy {
		t.Fatalf("mode %q", mw.Status.Mode)
	}
	before := objectWrites(ns, "deployments", "web")
	var grew int
	testkit.Within(t, 15*time.Second, "the loop of Strimzi #6938 (a write every 5s)", func() (bool, string) {
		grew = objectWrites(ns, "deployments", "web") - before
		return grew >= 2, fmt.Sprintf("the legacy path wrote %d times, want at least 2 in 15 s", grew)
	})
	t.Logf("legacy path: %d writes to the Deployment (the loop)", grew)
	kit.DeleteAndWait(t, mw)
}

// b. A third party's label is left alone; a third party's change to an
// owned field is repaired.
func TestThirdParty(t *testing.T) {
	ns := kit.Namespace(t, "third-party")
	mw := newWorkloadNoWait(t, ns, "app", deploymentYAML("app"))
	waitReason(t, mw, workload.ReasonApplied)
	reconciled(t, mw) // the reconciles after Applied are done
	before := objectWrites(ns, "deployments", "app")
	dep := ref("apps/v1", "Deployment", ns, "app")
	kit.ApplyAs(t, "cost-tool", fmt.Sprintf(`{apiVersion: apps/v1, kind: Deployment, metadata: {name: app, namespace: %s, labels: {cost-center: "4711"}}}`, ns))
	// A reconcile that saw the label has finished.
	kit.TargetSeen(t, dep)
	reconciled(t, mw)
	if n := objectWrites(ns, "deployments", "app") - before; n != 0 {
		t.Fatalf("%d writes after a third party's label, want 0", n)
	}
	if kit.Live(t, dep).GetLabels()["cost-center"] != "4711" {
		t.Fatal("the third party's label is gone")
	}

	drift := testutil.ToFloat64(metrics.DriftTotal.WithLabelValues(metrics.ControllerWorkload, "Deployment"))
	live := kit.Live(t, dep)
	if err := k8s.Patch(context.Background(), live, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":5}}`)), client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "replicas repaired", func() (bool, string) {
		r, _, _ := unstructured.NestedInt64(kit.Live(t, dep).Object, "spec", "replicas")
		return r == 1, fmt.Sprint("replicas ", r)
	})
	kit.HasEvent(t, ns, "app", workload.ReasonDriftRepaired, "kubectl-edit")
	if got := testutil.ToFloat64(metrics.DriftTotal.WithLabelValues(metrics.ControllerWorkload, "Deployment")); got <= drift {
		t.Fatalf("fieldops_drift_total did not grow: %v", got)
	}
	// kubectl-edit's Update took spec.replicas; the repair forced it back.
	if got := testutil.ToFloat64(metrics.ConflictsTotal.WithLabelValues(metrics.ControllerWorkload, "kubectl-edit")); got < 1 {
		t.Fatalf("fieldops_conflicts_total{manager=kubectl-edit} = %v", got)
	}
	if kit.Live(t, dep).GetLabels()["cost-center"] != "4711" {
		t.Fatal("the third party's label is gone after the repair")
	}
}

// c. Legacy → SSA migration keeps every field; then a field left out of
// the intent is removed; back to legacy keeps working.
func TestMigration(t *testing.T) {
	setSSA(t, false)
	ns := kit.Namespace(t, "migration")
	dep := strings.Replace(deploymentYAML("api"), "  replicas: 1\n", "  replicas: 1\n  minReadySeconds: 5\n", 1)
	mw := newWorkloadNoWait(t, ns, "api", dep, serviceYAML("api"))
	waitReason(t, mw, workload.ReasonApplied)
	manager := workload.ManagerName(ns, "api")
	objs := []*unstructured.Unstructured{ref("apps/v1", "Deployment", ns, "api"), ref("v1", "Service", ns, "api")}
	before := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		l := kit.Live(t, u)
		if !ownershipcore.NeedsUpgrade(l, []string{manager}) {
			t.Fatalf("%s: no legacy Update entry of %s: %v", u.GetKind(), manager, l.GetManagedFields())
		}
		before[u.GetKind()] = l
	}

	setSSA(t, true)
	update(t, mw, func(mw *v1alpha1.ManagedWorkload) { mw.Annotations = map[string]string{"gate": "on"} })
	testkit.Eventually(t, "migration to an Apply entry", func() (bool, string) {
		for _, u := range objs {
			l := kit.Live(t, u)
			owners, err := ownershipcore.Owners(l)
			if err != nil {
				return false, err.Error()
			}
			if ownershipcore.NeedsUpgrade(l, []string{manager}) || owners.Applied(manager) == nil {
				return false, fmt.Sprintf("%s managers: %v", u.GetKind(), owners.Managers())
			}
		}
		return true, ""
	})
	// The objects are migrated before the reconcile writes its status: a
	// reconcile that started afterwards has written it.
	reconciled(t, mw)
	waitReason(t, mw, workload.ReasonApplied)
	if mw.Status.Mode != workload.ModeServerSideApply {
		t.Fatalf("mode %q", mw.Status.Mode)
	}
	kit.HasEvent(t, ns, "api", workload.ReasonMigrated, "Service "+ns+"/api")
	for _, u := range objs {
		after := kit.Live(t, u)
		if !reflect.DeepEqual(before[u.GetKind()].Object["spec"], after.Object["spec"]) {
			t.Fatalf("%s spec changed in the migration:\nbefore %v\nafter  %v", u.GetKind(), before[u.GetKind()].Object["spec"], after.Object["spec"])
		}
	}
	svc := kit.Live(t, objs[1])
	if sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector"); sel["app"] != "api" {
		t.Fatalf("Service selector lost: %v", sel)
	}
	if ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports"); len(ports) != 2 {
		t.Fatalf("Service ports: %v", ports)
	}

	// The intent drops minReadySeconds: the apiserver removes it.
	update(t, mw, func(mw *v1alpha1.ManagedWorkload) {
		mw.Spec.Resources = resources(t, deploymentYAML("api"), serviceYAML("api"))
	})
	testkit.Eventually(t, "minReadySeconds removed", func() (bool, string) {
		v, found, _ := unstructured.NestedInt64(kit.Live(t, objs[0]).Object, "spec", "minReadySeconds")
		return !found || v == 0, fmt.Sprint("minReadySeconds ", v)
	})

	// Back to the legacy path: it still applies changes.
	setSSA(t, false)
	update(t, mw, func(mw *v1alpha1.ManagedWorkload) {
		mw.Spec.Resources = resources(t, strings.Replace(deploymentYAML("api"), "replicas: 1", "replicas: 3", 1), serviceYAML("api"))
	})
	waitReason(t, mw, workload.ReasonApplied)
	if r, _, _ := unstructured.NestedInt64(kit.Live(t, objs[0]).Object, "spec", "replicas"); r != 3 {
		t.Fatalf("legacy path after migration: replicas %d, want 3", r)
	}
	if mw.Status.Mode != workload.ModeLegacy {
		t.Fatalf("mode %q", mw.Status.Mode)
	}
}

// d. Two workloads share a ConfigMap (data keys) and an IngressGateway
// (list-map entries); deleting one removes only its entries.
func TestSharedObjects(t *testing.T) {
	t.Parallel()
	ns := kit.Namespace(t, "shared")
	cm := func(key, value string) string {
		return fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: shared}, data: {%s: %q}}", key, value)
	}
	gw := func(name string, port int) string {
		return fmt.Sprintf("{apiVersion: gateway.example.com/v1, kind: IngressGateway, metadata: {name: gw}, spec: {listeners: [{name: %s, port: %d}]}}", name, port)
	}
	a := newWorkload(t, ns, "team-a", cm("a", "1"), gw("http", 80))
	b := newWorkload(t, ns, "team-b", cm("b", "2"), gw("https", 443))
	waitReason(t, a, workload.ReasonApplied)
	waitReason(t, b, workload.ReasonApplied)
	cmRef, gwRef := ref("v1", "ConfigMap", ns, "shared"), ref("gateway.example.com/v1", "IngressGateway", ns, "gw")
	if d, _, _ := unstructured.NestedStringMap(kit.Live(t, cmRef).Object, "data"); !reflect.DeepEqual(d, map[string]string{"a": "1", "b": "2"}) {
		t.Fatalf("shared data %v", d)
	}
	if names := listenerNames(t, gwRef); !reflect.DeepEqual(names, []string{"http", "https"}) {
		t.Fatalf("listeners %v", names)
	}

	kit.DeleteAndWait(t, a)
	if d, _, _ := unstructured.NestedStringMap(kit.Live(t, cmRef).Object, "data"); !reflect.DeepEqual(d, map[string]string{"b": "2"}) {
		t.Fatalf("after deleting team-a: data %v, want only b", d)
	}
	if names := listenerNames(t, gwRef); !reflect.DeepEqual(names, []string{"https"}) {
		t.Fatalf("after deleting team-a: listeners %v, want only https", names)
	}

	kit.DeleteAndWait(t, b)
	for _, u := range []*unstructured.Unstructured{cmRef, gwRef} {
		if kit.Exists(t, u) {
			t.Fatalf("%s survives its last workload", u.GetKind())
		}
	}
}

func listenerNames(t testing.TB, gw *unstructured.Unstructured) []string {
	t.Helper()
	ls, _, _ := unstructured.NestedSlice(kit.Live(t, gw).Object, "spec", "listeners")
	var names []string
	for _, l := range ls {
		names = append(names, l.(map[string]interface{})["name"].(string))
	}
	// Workloads reconcile concurrently: the list's order is the order of
	// their applies.
	sort.Strings(names)
	return names
}

// e. Prune: an object another manager co-owns is relinquished, one only
// the workload owns is deleted.
func TestPrune(t *testing.T) {
	t.Parallel()
	ns := kit.Namespace(t, "prune")
	mw := newWorkload(t, ns, "cfg",
		"{apiVersion: v1, kind: ConfigMap, metadata: {name: solo}, data: {k: v}}",
		"{apiVersion: v1, kind: ConfigMap, metadata: {name: co}, data: {k: v}}",
		"{apiVersion: v1, kind: ConfigMap, metadata: {name: stays}, data: {k: v}}")
	waitReason(t, mw, workload.ReasonApplied)
	kit.ApplyAs(t, "other-team", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: co, namespace: %s}, data: {extra: x}}", ns))

	update(t, mw, func(mw *v1alpha1.ManagedWorkload) {
		mw.Spec.Resources = resources(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: stays}, data: {k: v}}")
	})
	waitReason(t, mw, workload.ReasonApplied)
	solo, co := ref("v1", "ConfigMap", ns, "solo"), ref("v1", "ConfigMap", ns, "co")
	testkit.Eventually(t, "solo deleted", func() (bool, string) { return !kit.Exists(t, solo), "solo exists" })
	if d, _, _ := unstructured.NestedStringMap(kit.Live(t, co).Object, "data"); !reflect.DeepEqual(d, map[string]string{"extra": "x"}) {
		t.Fatalf("co-owned ConfigMap data %v, want only the other team's key", d)
	}
	kit.HasEvent(t, ns, "cfg", workload.ReasonPruned, "ConfigMap "+ns+"/solo")
	kit.HasEvent(t, ns, "cfg", workload.ReasonRelinquished, "other-team")
	if len(mw.Status.Inventory) != 1 || mw.Status.Inventory[0].Name != "stays" {
		t.Fatalf("inventory %+v", mw.Status.Inventory)
	}

	// prune: false relinquishes even an object only the workload owns.
	update(t, mw, func(mw *v1alpha1.ManagedWorkload) { off := false; mw.Spec.Prune = &off })
	waitReason(t, mw, workload.ReasonApplied)
	kit.DeleteAndWait(t, mw)
	stays := kit.Live(t, ref("v1", "ConfigMap", ns, "stays"))
	if owners, _ := ownershipcore.Owners(stays); owners.Applied(workload.ManagerName(ns, "cfg")) != nil {
		t.Fatal("the workload's field manager is still on the relinquished object")
	}
}

// The shipped sample is accepted and converges.
func TestSample(t *testing.T) {
	t.Parallel()
	mw := &v1alpha1.ManagedWorkload{}
	testkit.Sample(t, "fieldops_v1alpha1_managedworkload.yaml", mw)
	mw.Namespace = kit.Namespace(t, "sample")
	// The account the sample acts as, with exactly its rights.
	kit.SampleAccounts(t, "default", mw.Namespace)
	if err := k8s.Create(context.Background(), mw); err != nil {
		t.Fatal(err)
	}
	// Applied, then healthy once its Deployment rolls out (written here:
	// the test cluster runs no Deployment controller).
	waitReason(t, mw, workload.ReasonProgressing)
	rolledOut(t, mw.Namespace, "web", 2, progressed)
	waitReason(t, mw, workload.ReasonApplied)
	if mw.Status.Applied != 2 {
		t.Fatalf("inventory %+v", mw.Status.Inventory)
	}
	kit.DeleteAndWait(t, mw)
	if kit.Exists(t, ref("apps/v1", "Deployment", mw.Namespace, "web")) {
		t.Fatal("the sample's Deployment was not pruned")
	}
}

// With ServerSideApply off, the ignore-policy-annotations plugin (a real
// subprocess) keeps the legacy path off Kyverno's annotation: no loop.
func TestIgnorePluginStopsLegacyLoop(t *testing.T) {
	setSSA(t, false)
	ns := kit.Namespace(t, "kyverno-plugin", "kyverno-test", "true")
	mw := &v1alpha1.ManagedWorkload{}
	mw.Name, mw.Namespace = "web", ns
	mw.Spec.IgnorePlugins = []string{"ignore-policy-annotations"}
	mw.Spec.Wait = ptr.To(false) // no Deployment controller here
	// The workload sets the webhook's label itself; the annotation is the
	// plugin's to ignore.
	mw.Spec.Resources = resources(t, strings.Replace(deploymentYAML("web"), "  labels: {app: web}\n", "  labels: {app: web, team: platform}\n", 1))
	if err := k8s.Create(context.Background(), mw); err != nil {
		t.Fatal(err)
	}
	waitReason(t, mw, workload.ReasonApplied)
	// After the reconciles under way (a first nudge), a reconcile (a
	// second) writes nothing: the legacy path's periodic recheck finds
	// nothing to do either.
	reconciled(t, mw)
	before := objectWrites(ns, "deployments", "web")
	st := reconciled(t, mw)
	if n := objectWrites(ns, "deployments", "web") - before; n != 0 {
		kit.Get(t, mw)
		t.Fatalf("the legacy path wrote %d times in a reconcile despite the plugin (%s): %+v", n, st.Last, mw.Status.Conditions)
	}
	if kit.Live(t, ref("apps/v1", "Deployment", ns, "web")).GetAnnotations()[kyvernoAnnotation] != kyvernoPatches {
		t.Fatal("the webhook's annotation is gone")
	}
	kit.DeleteAndWait(t, mw)
}

// A workload naming a plugin the manager does not have is stalled.
func TestUnknownIgnorePlugin(t *testing.T) {
	t.Parallel()
	ns := kit.Namespace(t, "bad-input")
	mw := &v1alpha1.ManagedWorkload{}
	mw.Name, mw.Namespace = "no-such-plugin", ns
	mw.Spec.IgnorePlugins = []string{"nope"}
	if err := k8s.Create(context.Background(), mw); err != nil {
		t.Fatal(err)
	}
	waitReason(t, mw, workload.ReasonPluginUnavailable)
	kit.HasEvent(t, ns, "no-such-plugin", workload.ReasonPluginUnavailable, `unknown plugin "nope"`)
	kit.DeleteAndWait(t, mw)
}
