/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/kubectl/pkg/cmd/apply"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/workload"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/test/testkit"
)

// scaleAs sets the replicas of Deployment ns/name through the scale
// subresource under manager, as the HorizontalPodAutoscaler does (as
// kube-controller-manager, an Update of .spec.replicas on /scale).
func scaleAs(t *testing.T, manager, ns, name string, replicas int32) {
	t.Helper()
	d := ref("apps/v1", "Deployment", ns, name)
	scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	if err := k8s.SubResource("scale").Update(context.Background(), d, client.WithSubResourceBody(scale), client.FieldOwner(manager)); err != nil {
		t.Fatalf("scale %s/%s as %s: %v", ns, name, manager, err)
	}
}

func replicas(t *testing.T, ns, name string) int64 {
	t.Helper()
	n, _, _ := unstructured.NestedInt64(kit.Live(t, ref("apps/v1", "Deployment", ns, name)).Object, "spec", "replicas")
	return n
}

// waitOwnedFields waits until inventory entry i reports want owned fields:
// the signal that the workload reconciled after a change of the object.
func waitOwnedFields(t *testing.T, mw *v1alpha1.ManagedWorkload, i int, want func(int) bool, what string) {
	t.Helper()
	testkit.Eventually(t, what, func() (bool, string) {
		kit.Get(t, mw)
		e := entry(t, mw, i)
		return want(e.OwnedFields), fmt.Sprintf("inventory entry %d: %+v", i, e)
	})
}

// Issue 17 part 1: a workload that yields to the HorizontalPodAutoscaler's
// manager leaves spec.replicas to it, whether the autoscaler scales after
// the workload applied (not drift: no repair) or the workload's spec
// changes while the autoscaler owns the field (a conflict yielded, not
// forced); every other field stays the workload's.
func TestYieldToAutoscaler(t *testing.T) {
	t.Parallel()
	ns := kit.Namespace(t, "yield-hpa")
	mw := &v1alpha1.ManagedWorkload{}
	mw.Name, mw.Namespace = "web", ns
	mw.Spec.Resources = resources(t, deploymentYAML("web"))
	mw.Spec.Wait = ptr.To(false)
	mw.Spec.YieldTo = []v1alpha1.ManagerSelector{{Manager: "kube-controller-*", Operation: "Update"}}
	if err := k8s.Create(context.Background(), mw); err != nil {
		t.Fatal(err)
	}
	waitReason(t, mw, workload.ReasonApplied)
	owned := entry(t, mw, 0).OwnedFields
	path := "/namespaces/" + ns + "/deployments/web"

	// The autoscaler scales: the workload lets the field go, no repair.
	writes := requests.Writes(path)
	scaleAs(t, "kube-controller-manager", ns, "web", 5)
	waitOwnedFields(t, mw, 0, func(n int) bool { return n == owned-1 }, "the workload to see it no longer owns spec.replicas")
	if n := replicas(t, ns, "web"); n != 5 {
		t.Fatalf("replicas = %d after the autoscaler scaled to 5 (repaired?)", n)
	}
	if w := requests.Writes(path) - writes; w != 0 {
		t.Fatalf("the workload wrote the Deployment %d times after the autoscaler scaled it", w)
	}
	waitReason(t, mw, workload.ReasonApplied)

	// The spec changes (a label) while the autoscaler owns replicas: the
	// conflict on spec.replicas is yielded, the label applied.
	update(t, mw, func(mw *v1alpha1.ManagedWorkload) {
		mw.Spec.Resources = resources(t, strings.Replace(deploymentYAML("web"), "labels: {app: web}\nspec:", "labels: {app: web, tier: front}\nspec:", 1))
	})
	waitReason(t, mw, workload.ReasonApplied)
	live := kit.Live(t, ref("apps/v1", "Deployment", ns, "web"))
	if n := replicas(t, ns, "web"); n != 5 {
		t.Fatalf("replicas = %d after a spec change, want the autoscaler's 5", n)
	}
	if live.GetLabels()["tier"] != "front" {
		t.Fatalf("labels = %v, want tier=front applied", live.GetLabels())
	}
	owners, err := ownershipcore.Owners(live)
	if err != nil {
		t.Fatal(err)
	}
	if by := owners.ByPath()[".spec.replicas"]; len(by) != 1 || by[0] != "kube-controller-manager/Update" {
		t.Fatalf(".spec.replicas owned by %v, want the autoscaler's manager alone", by)
	}

	// Without the rule, the default policy (Force) takes it back.
	update(t, mw, func(mw *v1alpha1.ManagedWorkload) { mw.Spec.YieldTo = nil })
	waitReason(t, mw, workload.ReasonApplied)
	if n := replicas(t, ns, "web"); n != 1 {
		t.Fatalf("replicas = %d once yieldTo is gone, want the workload's 1 (forced)", n)
	}
}

// Issue 17 part 1: conflictPolicy Yield for a workload, with forceOver
// naming the one manager whose fields are taken anyway.
func TestWorkloadYieldPolicyWithForceOver(t *testing.T) {
	t.Parallel()
	ns := kit.Namespace(t, "yield-policy")
	kit.ApplyAs(t, "helm", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: %s}, data: {a: helm}}", ns))
	kit.ApplyAs(t, "ci-bot", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: %s}, data: {b: ci}}", ns))
	mw := &v1alpha1.ManagedWorkload{}
	mw.Name, mw.Namespace = "cfg", ns
	mw.Spec.Resources = resources(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg}, data: {a: mine, b: mine, c: mine}}")
	mw.Spec.ConflictPolicy = v1alpha1.WorkloadConflictPolicyYield
	mw.Spec.ForceOver = []v1alpha1.ManagerSelector{{Manager: "ci-*"}}
	if err := k8s.Create(context.Background(), mw); err != nil {
		t.Fatal(err)
	}
	waitReason(t, mw, workload.ReasonApplied)
	data, _, _ := unstructured.NestedStringMap(kit.Live(t, ref("v1", "ConfigMap", ns, "cfg")).Object, "data")
	if want := map[string]string{"a": "helm", "b": "mine", "c": "mine"}; fmt.Sprint(data) != fmt.Sprint(want) {
		t.Fatalf("data = %v, want %v (a yielded to helm, b forced over ci-bot)", data, want)
	}
}

// rolledOut writes the status a Deployment controller writes once
// replicas pods of the current generation are available (the test
// cluster runs no kube-controller-manager).
func rolledOut(t *testing.T, ns, name string, n int64, progressing metav1.Condition) {
	t.Helper()
	testkit.Eventually(t, "status of "+name, func() (bool, string) {
		d := kit.Live(t, ref("apps/v1", "Deployment", ns, name))
		conds := []interface{}{
			map[string]interface{}{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastUpdateTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"},
			map[string]interface{}{"type": progressing.Type, "status": string(progressing.Status), "reason": progressing.Reason, "message": progressing.Message, "lastUpdateTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"},
		}
		d.Object["status"] = map[string]interface{}{
			"observedGeneration": d.GetGeneration(), "replicas": n, "updatedReplicas": n, "readyReplicas": n, "availableReplicas": n,
			"conditions": conds,
		}
		err := k8s.Status().Update(context.Background(), d)
		return err == nil, fmt.Sprint(err)
	})
}

var progressed = metav1.Condition{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "NewReplicaSetAvailable"}

// Issue 17 part 2: Ready means healthy. A workload's Deployment that has
// not rolled out keeps Ready=False (Progressing) with the object's health
// in the inventory; once it rolls out the workload is Ready; a Deployment
// past its progress deadline is HealthCheckFailed (Stalled); one that does
// not become healthy within spec.timeout is HealthCheckTimeout (Stalled).
func TestReadyWaitsForHealth(t *testing.T) {
	t.Parallel()
	ns := kit.Namespace(t, "health")
	mw := newWorkload(t, ns, "web", deploymentYAML("web"), serviceYAML("web"))
	waitReason(t, mw, workload.ReasonProgressing)
	if e := entry(t, mw, 0); e.Health != "InProgress" || e.Reason != "" {
		t.Fatalf("Deployment entry %+v, want applied with health InProgress", e)
	}
	if e := entry(t, mw, 1); e.Health != "Current" {
		t.Fatalf("Service entry %+v, want health Current", e)
	}
	c := meta.FindStatusCondition(mw.Status.Conditions, "Reconciling")
	if c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Reconciling = %+v, want True while progressing", c)
	}

	rolledOut(t, ns, "web", 1, progressed)
	waitReason(t, mw, workload.ReasonApplied)
	if e := entry(t, mw, 0); e.Health != "Current" {
		t.Fatalf("Deployment entry %+v, want health Current after the rollout", e)
	}

	// A new image that never rolls out, with a short timeout.
	update(t, mw, func(mw *v1alpha1.ManagedWorkload) {
		mw.Spec.Resources = resources(t, strings.Replace(deploymentYAML("web"), "nginx:1.27", "nginx:1.28", 1), serviceYAML("web"))
		mw.Spec.Timeout = &metav1.Duration{Duration: 2 * 1e9}
	})
	waitReason(t, mw, workload.ReasonHealthCheckTimeout)
	if c := meta.FindStatusCondition(mw.Status.Conditions, "Stalled"); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "Deployment "+ns+"/web") {
		t.Fatalf("Stalled = %+v, want True naming the Deployment", c)
	}
	kit.HasEvent(t, ns, "web", workload.ReasonHealthCheckTimeout, "Deployment "+ns+"/web")

	// The Deployment controller gives up: Failed at once.
	rolledOut(t, ns, "web", 1, metav1.Condition{Type: "Progressing", Status: metav1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "ReplicaSet web-2 has timed out progressing."})
	waitReason(t, mw, workload.ReasonHealthCheckFailed)
	if e := entry(t, mw, 0); e.Health != "Failed" {
		t.Fatalf("Deployment entry %+v, want health Failed", e)
	}

	// wait: false: Ready means applied.
	update(t, mw, func(mw *v1alpha1.ManagedWorkload) { mw.Spec.Wait = ptr.To(false) })
	waitReason(t, mw, workload.ReasonApplied)
}

// kubectlApply runs client-side `kubectl apply -f` of doc in namespace ns
// with kubectl's own apply command (k8s.io/kubectl), in process: what a
// user's kubectl does, without needing a kubectl binary.
func kubectlApply(t *testing.T, cfg *rest.Config, ns, doc string) {
	t.Helper()
	dir := t.TempDir()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "user", Namespace: ns}
	kc.CurrentContext = "local"
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "obj.yaml")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &path
	var out, errOut strings.Builder
	cmd := apply.NewCmdApply("kubectl", cmdutil.NewFactory(flags), genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs([]string{"-f", file})
	// kubectl exits the process on a fatal error; make it a test failure.
	type fatal struct{ msg string }
	cmdutil.BehaviorOnFatal(func(msg string, code int) { panic(fatal{msg}) })
	defer cmdutil.DefaultBehaviorOnFatal()
	defer func() {
		if r := recover(); r != nil {
			if f, ok := r.(fatal); ok {
				t.Fatalf("kubectl apply: %s", f.msg)
			}
			panic(r)
		}
	}()
	if err := cmd.Execute(); err != nil {
		t.Fatalf("kubectl apply: %v: %s", err, errOut.String())
	}
}

// Issue 17 part 3: an object created and changed with client-side
// `kubectl apply`, then taken over by a workload whose intent drops a
// container env var and a label: after the first apply both are gone, the
// last-applied annotation is gone, and another manager's fields stay.
func TestAdoptClientSideApply(t *testing.T) {
	t.Parallel()
	ns := kit.Namespace(t, "adopt-csa")
	doc := func(extra string) string {
		return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  labels: {app: api%s}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata:
      labels: {app: api}
    spec:
      containers:
      - name: api
        image: nginx:1.27
        env:
        - {name: MODE, value: prod}%s
`, extra, map[bool]string{true: "\n        - {name: DEBUG, value: \"1\"}", false: ""}[extra != ""])
	}
	kubectlApply(t, cfg, ns, doc(", legacy: \"yes\""))
	kubectlApply(t, cfg, ns, doc(", legacy: \"yes\"")) // a second apply: a PATCH, as users do
	// Another actor's annotation, which must stay.
	kit.ApplyAs(t, "cost-tool", fmt.Sprintf("{apiVersion: apps/v1, kind: Deployment, metadata: {name: api, namespace: %s, annotations: {cost/center: web}}}", ns))
	// An Update manager's annotation (kubectl annotate
	// --field-manager=istio): its entry must not change at the adoption.
	target := ref("apps/v1", "Deployment", ns, "api")
	if err := k8s.Patch(context.Background(), target, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"istio/x":"1"}}}`)), client.FieldOwner("istio")); err != nil {
		t.Fatal(err)
	}
	live := kit.Live(t, target)
	if _, ok := live.GetAnnotations()[ownershipcore.LastAppliedAnnotation]; !ok {
		t.Fatal("kubectl apply left no last-applied annotation; not a client-side apply?")
	}
	istioBefore := managerFields(t, live, "istio")

	mw := &v1alpha1.ManagedWorkload{}
	mw.Name, mw.Namespace = "api", ns
	mw.Spec.Resources = resources(t, doc(""))
	mw.Spec.Wait = ptr.To(false)
	if err := k8s.Create(context.Background(), mw); err != nil {
		t.Fatal(err)
	}
	waitReason(t, mw, workload.ReasonApplied)
	kit.HasEvent(t, ns, "api", workload.ReasonMigrated, "adopted from client-side apply")

	live = kit.Live(t, ref("apps/v1", "Deployment", ns, "api"))
	if _, ok := live.GetLabels()["legacy"]; ok {
		t.Errorf("label legacy is still there: %v", live.GetLabels())
	}
	if _, ok := live.GetAnnotations()[ownershipcore.LastAppliedAnnotation]; ok {
		t.Error("the last-applied annotation is still there")
	}
	if live.GetAnnotations()["cost/center"] != "web" {
		t.Errorf("the cost tool's annotation is gone: %v", live.GetAnnotations())
	}
	containers, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	if env := fmt.Sprint(containers[0].(map[string]interface{})["env"]); strings.Contains(env, "DEBUG") || !strings.Contains(env, "MODE") {
		t.Errorf("env = %s, want MODE only", env)
	}
	owners, err := ownershipcore.Owners(live)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range owners.Managers() {
		if m == "kubectl-client-side-apply" || m == "before-first-apply" {
			t.Errorf("client-side apply's manager %s still owns fields: %v", m, owners.Managers())
		}
	}
	if got := managerFields(t, live, "istio"); !reflect.DeepEqual(got, istioBefore) {
		t.Errorf("istio's entry changed at the adoption: %v, was %v", got, istioBefore)
	}
}

// managerFields is the fields of manager's entries on live.
func managerFields(t *testing.T, live *unstructured.Unstructured, manager string) []string {
	t.Helper()
	owners, err := ownershipcore.Owners(live)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range owners {
		if e.Manager == manager {
			out = append(out, ownershipcore.FormatSet(e.Fields)...)
		}
	}
	return out
}

// adoptClientSideApply: false leaves client-side apply's fields alone: the
// dropped label stays, owned by kubectl-client-side-apply.
func TestAdoptClientSideApplyOff(t *testing.T) {
	t.Parallel()
	ns := kit.Namespace(t, "adopt-csa-off")
	kubectlApply(t, cfg, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, labels: {legacy: \"yes\"}}\ndata: {a: \"1\"}\n")
	mw := &v1alpha1.ManagedWorkload{}
	mw.Name, mw.Namespace = "cfg", ns
	mw.Spec.Resources = resources(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg}, data: {a: \"1\"}}")
	mw.Spec.AdoptClientSideApply = ptr.To(false)
	if err := k8s.Create(context.Background(), mw); err != nil {
		t.Fatal(err)
	}
	waitReason(t, mw, workload.ReasonApplied)
	if l := kit.Live(t, ref("v1", "ConfigMap", ns, "cfg")).GetLabels(); l["legacy"] != "yes" {
		t.Fatalf("labels = %v, want legacy kept when adoption is off", l)
	}
}
