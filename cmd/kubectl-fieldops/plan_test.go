/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/internal/fieldplan"
	"github.com/fieldops/fieldops/internal/names"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/plugins/host"
	"github.com/fieldops/fieldops/test/testkit"
)

// planNamespaces are the namespaces of the plan tests, the only ones
// TestPlan's manager watches.
var planNamespaces = []string{"plan-apply", "plan-strategicmerge", "plan-merge", "plan-json", "plan-fail", "plan-yield", "plan-workload", "plan-cluster", "plan-plugin", "plan-plugin-failure", "plan-refused", "plan-delete", "plan-selector", "plan-chain", "plan-account", "plan-selector-chain", "plan-convert"}

// planPluginConfig is the --plugin-config of TestPlan's manager, which
// plan is given too.
var planPluginConfig string

// TestPlan runs the plan tests with a manager of every fieldops
// controller (as test/testkit.RunSuite starts one) watching
// planNamespaces, stopped when they end: the other tests write the
// statuses they print, which a manager would overwrite.
func TestPlan(t *testing.T) {
	namespaces := map[string]cache.Config{}
	for _, ns := range planNamespaces {
		namespaces[ns] = cache.Config{}
	}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{Scheme: controllers.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: cache.Options{DefaultNamespaces: namespaces}})
	if err != nil {
		t.Fatal(err)
	}
	cfgPath, cleanup, err := testkit.ExamplePluginConfig("yield-to-autoscalers", "misbehave")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	planPluginConfig = cfgPath
	cfg, err := host.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	plugins, err := host.New(cfg, host.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plugins.Close)
	if err := controllers.SetupWith(mgr, controllers.Options{Concurrency: 1, Plugins: plugins, OwnNamespace: planOwnNamespace}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(testkit.Start(mgr))
	t.Run("PatchTypes", testPlanPatchTypes)
	t.Run("FailConflict", testPlanFailConflict)
	t.Run("YieldTo", testPlanYieldTo)
	t.Run("Workload", testPlanWorkload)
	t.Run("ClusterFieldPatch", testPlanClusterFieldPatch)
	t.Run("Plugin", testPlanPlugin)
	t.Run("PluginFailure", testPlanPluginFailure)
	t.Run("RefusedTargets", testPlanRefusesWhatTheControllerRefuses)
	t.Run("Delete", testPlanDelete)
	t.Run("Selector", testPlanSelector)
	t.Run("Chain", testPlanChain)
	t.Run("ActsAsTheAccount", testPlanActsAsTheAccount)
	t.Run("SelectorChain", testPlanSelectorChain)
	t.Run("RefusesForceAcrossVersions", testPlanRefusesForceAcrossVersions)
}

// A selector patch is planned for every object it matches, each
// as the controller reconciles that target (its record of previous owners
// included); once applied, every target plans Unchanged.
func testPlanSelector(t *testing.T) {
	createNamespace(t, "plan-selector")
	for _, n := range []string{"a", "b", "other"} {
		label := "yes"
		if n == "other" {
			label = "no"
		}
		applyAs(t, "helm", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: plan-selector, labels: {proxy: %q}}, data: {owned: helm}}", n, label))
	}
	y := `apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: proxy, namespace: plan-selector}
spec:
  targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {proxy: "yes"}}}
  patch: {data: {owned: mine, proxy: "http://proxy:3128"}}
`
	file := planFile(t, y)
	plans := planJSON(t, file)
	var got []string
	for _, p := range plans {
		owners := ""
		if p.Patch != nil && len(p.Patch.PreviousOwners) > 0 {
			owners = p.Patch.PreviousOwners[0].Manager
		}
		got = append(got, fmt.Sprintf("%s %s %s", p.Patch.Target, p.Action, owners))
	}
	if want := "[ConfigMap plan-selector/a Configured helm ConfigMap plan-selector/b Configured helm]"; fmt.Sprint(got) != want {
		t.Errorf("plans %v, want %s", got, want)
	}
	createAndWaitReady(t, y)
	plans = planJSON(t, file)
	got = nil
	for _, p := range plans {
		got = append(got, fmt.Sprintf("%s %s %v", p.Patch.Target, p.Action, p.Exists))
	}
	if want := "[ConfigMap plan-selector/a Unchanged true ConfigMap plan-selector/b Unchanged true]"; fmt.Sprint(got) != want {
		t.Errorf("plans once applied %v, want %s", got, want)
	}
	// plan --delete: each target given back, helm's field to helm.
	out, errOut, err := plugin(t, "plan", "--delete", "fieldpatch/proxy", "-n", "plan-selector", "-o", "json")
	if err != nil {
		t.Fatalf("plan --delete: %v\n%s", err, errOut)
	}
	var deletion []Plan
	if err := json.Unmarshal([]byte(out), &deletion); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got = nil
	for _, p := range deletion {
		rows := map[string]string{}
		for _, r := range p.Patch.Deletion {
			rows[r.Path] = r.Action + " " + strings.Join(r.OwnersAfter, ",")
		}
		got = append(got, fmt.Sprintf("%s: %v", p.Patch.Target, rows))
	}
	if len(got) != 2 || !strings.Contains(got[0], "ConfigMap plan-selector/a") || !strings.Contains(got[1], "ConfigMap plan-selector/b") {
		t.Fatalf("plan --delete %v, want one plan per target", got)
	}
	for _, g := range got {
		if !strings.Contains(g, ".data.owned:") || !strings.Contains(g, "helm") || !strings.Contains(g, ".data.proxy:") {
			t.Errorf("plan --delete: %s; want .data.owned back to helm and .data.proxy removed", g)
		}
	}
}

// planOwnNamespace is the namespace TestPlan's manager runs in, as far as
// it and plan know (--namespace, --fieldops-namespace's default).
const planOwnNamespace = "fieldops-system"

// deploymentAs is the target of the patch tests: a Deployment applied by
// helm, with a label a person set with kubectl edit (an Update entry).
func deploymentAs(t *testing.T, ns string) *unstructured.Unstructured {
	t.Helper()
	createNamespace(t, ns)
	d := applyAs(t, "helm", fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: %s, labels: {app: web}, annotations: {owner: helm}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        env: [{name: LOG_LEVEL, value: info}]
`, ns))
	mergeAs(t, "kubectl-edit", d, `{"metadata":{"labels":{"team":"payments"}}}`)
	return d
}

// planFile writes y to a file of the test and returns its path.
func planFile(t *testing.T, y string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// planJSON runs plan -o json on file and decodes it.
func planJSON(t *testing.T, file string, flags ...string) []Plan {
	t.Helper()
	out, errOut, err := plugin(t, append([]string{"plan", "-f", file, "-o", "json"}, flags...)...)
	if err != nil && !strings.Contains(err.Error(), "would fail") {
		t.Fatalf("plan: %v\n%s", err, errOut)
	}
	var plans []Plan
	if err := json.Unmarshal([]byte(out), &plans); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return plans
}

// patcher is a FieldPatch or ClusterFieldPatch.
type patcher interface {
	client.Object
	v1alpha1.Patcher
}

// createAndWaitReady creates the FieldPatch of y and waits until it is
// Ready for its generation.
func createAndWaitReady(t *testing.T, y string) *v1alpha1.FieldPatch {
	t.Helper()
	fp := &v1alpha1.FieldPatch{}
	createPatcherReady(t, y, fp)
	return fp
}

// createPatcherReady creates fp (a FieldPatch or ClusterFieldPatch) from
// y and waits until it is Ready for its generation.
func createPatcherReady(t *testing.T, y string, fp patcher) {
	t.Helper()
	createReady(t, y, fp)
	// Gone before the other tests list every namespace (status -A).
	t.Cleanup(func() { testkit.Kit{Client: k8s}.DeleteAndWait(t, fp) })
}

// createReady creates the patch of y and waits until it is Ready; the
// test deletes it.
func createReady(t *testing.T, y string, fp patcher) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(y), fp); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(context.Background(), fp); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "FieldPatch "+fp.GetName()+" Ready", func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fp), fp); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(fp.PatchStatus().Conditions, "Ready")
		if c == nil {
			return false, "no Ready condition"
		}
		return c.Status == "True" && c.ObservedGeneration == fp.GetGeneration(), c.Reason + ": " + c.Message
	})
}

// comparePlan checks that the plan says what the controller did: the
// record of previous owners, the managed fields in status, and the
// target's managed fields entry of the patch's field manager.
func comparePlan(t *testing.T, plan Plan, fp v1alpha1.Patcher, target *unstructured.Unstructured) {
	t.Helper()
	st := fp.PatchStatus()
	if plan.FieldManager != st.FieldManager {
		t.Errorf("plan's field manager %q, status %q", plan.FieldManager, st.FieldManager)
	}
	if a, b := ownerLeaves(t, plan.Patch.PreviousOwners), ownerLeaves(t, fieldplan.PlannedOwners(st.PreviousOwners)); a != b {
		t.Errorf("previous owners: plan %s, status %s", a, b)
	}
	if a, b := mustJSON(t, plan.Patch.ManagedFields), mustJSON(t, st.ManagedFields); a != b {
		t.Errorf("managed fields: plan %s, status %s", a, b)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(target.GroupVersionKind())
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(target), live); err != nil {
		t.Fatal(err)
	}
	owners, err := ownershipcore.Owners(live)
	if err != nil {
		t.Fatal(err)
	}
	ours := owners.Applied(plan.FieldManager)
	if ours == nil {
		t.Fatalf("the target has no entry of %s", plan.FieldManager)
	}
	if a, b := mustJSON(t, plan.Patch.ManagedFields), mustJSON(t, patchintent.Leaves(ours.Fields)); a != b {
		t.Errorf("managed fields: plan %s, target %s", a, b)
	}
	// Every field the plan takes or adds is ours now; every field it takes
	// is no longer its previous owner's.
	for _, f := range plan.Patch.Fields {
		switch f.Plan {
		case "take", "add", "share":
			if !slices.Contains(st.ManagedFields, f.Path) {
				t.Errorf("plan says %s %s, but the patch does not own it", f.Plan, f.Path)
			}
		}
		if f.Plan == "take" {
			for _, e := range owners {
				if e.Manager != plan.FieldManager && slices.Contains(ownershipcore.FormatSet(e.Fields), f.Path) {
					t.Errorf("plan says take %s, but %s still owns it", f.Path, e.Manager)
				}
			}
		}
	}
}

func mustJSON(t *testing.T, v interface{}) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every patch type is planned, then created: the plan's previous owners
// and managed fields are what the controller records and what the
// target's managed fields say.
func testPlanPatchTypes(t *testing.T) {
	for _, tc := range []struct{ typ, patch string }{
		{"Apply", `
    metadata: {labels: {team: platform}, annotations: {fieldops.dev/planned: "yes"}}
    spec: {replicas: 3}`},
		{"StrategicMerge", `
    metadata: {labels: {team: platform}, annotations: {fieldops.dev/planned: "yes"}}
    spec: {replicas: 3}`},
		{"Merge", `
    metadata: {labels: {team: platform}, annotations: {fieldops.dev/planned: "yes"}}
    spec: {replicas: 3}`},
		{"JSON", `
    - {op: replace, path: /metadata/labels/team, value: platform}
    - {op: add, path: /metadata/annotations/fieldops.dev~1planned, value: "yes"}
    - {op: replace, path: /spec/replicas, value: 3}`},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			ns := "plan-" + strings.ToLower(tc.typ)
			d := deploymentAs(t, ns)
			y := fmt.Sprintf(`apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: %s}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  type: %s
  patch:%s
`, ns, tc.typ, tc.patch)
			file := planFile(t, y)
			out, errOut, err := plugin(t, "plan", "-f", file)
			if err != nil {
				t.Fatalf("plan: %v\n%s", err, errOut)
			}
			golden(t, "plan-"+strings.ToLower(tc.typ)+".txt", strings.ReplaceAll(out, ns, "NS"))
			plans := planJSON(t, file)
			if len(plans) != 1 || plans[0].Action != "Configured" || plans[0].Exists {
				t.Fatalf("plan: %+v", plans)
			}
			fp := createAndWaitReady(t, y)
			comparePlan(t, plans[0], fp, d)
			// Planned again, the applied patch changes nothing.
			again := planJSON(t, file)
			if again[0].Action != "Unchanged" || !again[0].Exists {
				t.Errorf("plan of the applied patch: %s %q", again[0].Action, again[0].Message)
			}
			if a, b := mustJSON(t, again[0].Patch.PreviousOwners), mustJSON(t, plans[0].Patch.PreviousOwners); a != b {
				t.Errorf("previous owners planned again: %s, first %s", a, b)
			}
		})
	}
}

// A patch that takes fields from another patch inherits that patch's
// record: fp-a takes spec.replicas from helm, and the plan of fp-b, which
// takes it from fp-a, lists fp-a and helm via fp-a, as the controller then
// records them.
func testPlanChain(t *testing.T) {
	ns := "plan-chain"
	d := deploymentAs(t, ns)
	patch := func(name, replicas string) string {
		return fmt.Sprintf(`apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: %s, namespace: %s}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  patch: {spec: {replicas: %s}}
`, name, ns, replicas)
	}
	createAndWaitReady(t, patch("fp-a", "3"))
	y := patch("fp-b", "4")
	plans := planJSON(t, planFile(t, y))
	if len(plans) != 1 || plans[0].Action != "Configured" {
		t.Fatalf("plan: %+v", plans)
	}
	fpA := names.FieldPatch(false, ns, "fp-a")
	var got []string
	for _, o := range plans[0].Patch.PreviousOwners {
		got = append(got, fmt.Sprintf("%s via %q: %s", o.Manager, o.Via, strings.Join(leaves(t, o), ",")))
	}
	want := []string{fpA + ` via "": .spec.replicas`, `helm via "` + fpA + `": .spec.replicas`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("planned previous owners:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	comparePlan(t, plans[0], createAndWaitReady(t, y), d)
}

// Under conflictPolicy Fail the plan names the conflicts and the command
// fails, as the patch would stall.
func testPlanFailConflict(t *testing.T) {
	deploymentAs(t, "plan-fail")
	file := planFile(t, `apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: plan-fail}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  conflictPolicy: Fail
  patch:
    metadata: {annotations: {fieldops.dev/planned: "yes"}}
    spec: {replicas: 3}
`)
	out, _, err := plugin(t, "plan", "-f", file)
	if err == nil || !strings.Contains(err.Error(), "1 of 1 plan(s) would fail") {
		t.Fatalf("plan of a failing patch: %v", err)
	}
	golden(t, "plan-fail.txt", out)
	out, _, _ = plugin(t, "plan", "-f", file, "-o", "yaml")
	golden(t, "plan-fail.yaml", out)
}

// yieldTo leaves a conflicting field to the manager it names; the plan
// says so, and the controller then records what the plan said.
func testPlanYieldTo(t *testing.T) {
	d := deploymentAs(t, "plan-yield")
	y := `apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: plan-yield}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  deletionPolicy: Relinquish
  yieldTo: [{manager: kubectl-edit, operation: Update}]
  patch:
    metadata: {labels: {team: platform}, annotations: {owner: helm, fieldops.dev/planned: "yes"}}
    spec: {replicas: 3}
`
	file := planFile(t, y)
	out, errOut, err := plugin(t, "plan", "-f", file)
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, errOut)
	}
	golden(t, "plan-yield.txt", out)
	plans := planJSON(t, file)
	fp := createAndWaitReady(t, y)
	comparePlan(t, plans[0], fp, d)
}

// A ManagedWorkload's plan: per object created, configured (with the
// fields it takes from another manager) or unchanged; several documents
// of standard input are planned each.
func testPlanWorkload(t *testing.T) {
	createNamespace(t, "plan-workload")
	mw := &v1alpha1.ManagedWorkload{}
	if err := yaml.UnmarshalStrict([]byte(`apiVersion: fieldops.dev/v1alpha1
kind: ManagedWorkload
metadata: {name: shop, namespace: plan-workload}
spec:
  resources:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: settings}, data: {mode: fast}}
`), mw); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(context.Background(), mw); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testkit.Kit{Client: k8s}.DeleteAndWait(t, mw) })
	testkit.Eventually(t, "ManagedWorkload shop Ready", func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(mw), mw); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(mw.Status.Conditions, "Ready")
		return c != nil && c.Status == "True" && c.ObservedGeneration == mw.Generation, fmt.Sprint(c)
	})
	applyAs(t, "helm", `{apiVersion: v1, kind: ConfigMap, metadata: {name: shared, namespace: plan-workload}, data: {size: small, owner: helm}}`)

	stdin := `apiVersion: fieldops.dev/v1alpha1
kind: ManagedWorkload
metadata: {name: shop, namespace: plan-workload}
spec:
  resources:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: settings}, data: {mode: fast}}
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: shared}, data: {size: large}}
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: fresh}, data: {new: "true"}}
---
apiVersion: fieldops.dev/v1alpha1
kind: ManagedWorkload
metadata: {name: other, namespace: plan-workload}
spec:
  conflictPolicy: Fail
  resources:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: shared}, data: {owner: other}}
`
	out, _, err := pluginIn(t, stdin, "plan", "-f", "-", "--kubeconfig", kubeconfig)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 plan(s) would fail") {
		t.Fatalf("plan: %v", err)
	}
	golden(t, "plan-workload.txt", out)

	// A mixed stream (kubectl kustomize's, helm template's): the other
	// objects are skipped and named on standard error.
	mixed := `apiVersion: v1
kind: Namespace
metadata: {name: plan-workload}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: loose, namespace: plan-workload}
---
apiVersion: fieldops.dev/v1alpha1
kind: PodSet
metadata: {name: kafka, namespace: plan-workload}
spec:
  selector: {matchLabels: {app: kafka}}
  template: {metadata: {labels: {app: kafka}}, spec: {containers: [{name: c, image: kafka}]}}
---
` + strings.SplitN(stdin, "---\n", 2)[0]
	out, errOut, err := pluginIn(t, mixed, "plan", "-f", "-", "--kubeconfig", kubeconfig, "-o", "jsonpath={range .items[*]}{.kind}/{.name}: {.action}{end}")
	if err != nil || out != "ManagedWorkload/shop: Configured" {
		t.Errorf("plan of a mixed stream: %v %q (stderr %q)", err, out, errOut)
	}
	if want := "Skipped 3 object(s) that are not FieldPatches, ClusterFieldPatches or ManagedWorkloads: Namespace plan-workload, ConfigMap plan-workload/loose, PodSet plan-workload/kafka\n"; !strings.Contains(errOut, want) {
		t.Errorf("plan of a mixed stream: stderr %q, want %q", errOut, want)
	}
	if out, _, err := pluginIn(t, mixed, "plan", "-f", "-", "--kubeconfig", kubeconfig, "-o", "name"); err != nil || out != "managedworkload.fieldops.dev/shop\n" {
		t.Errorf("plan -o name: %v %q", err, out)
	}
	if _, _, err := pluginIn(t, strings.SplitN(mixed, "---\n", 2)[0], "plan", "-f", "-", "--kubeconfig", kubeconfig); err == nil || !strings.Contains(err.Error(), "no FieldPatch, ClusterFieldPatch or ManagedWorkload to plan") {
		t.Errorf("plan of a stream without fieldops objects: %v", err)
	}
	out, _, _ = pluginIn(t, stdin, "plan", "-f", "-", "--kubeconfig", kubeconfig, "-o", "json")
	var plans []Plan
	if err := json.Unmarshal([]byte(out), &plans); err != nil {
		t.Fatal(err)
	}
	actions := map[string]string{}
	for _, o := range plans[0].Objects {
		actions[o.Name] = o.Action
	}
	if want := map[string]string{"settings": "Unchanged", "shared": "Configured", "fresh": "Created"}; mustJSON(t, actions) != mustJSON(t, want) {
		t.Errorf("actions %v, want %v", actions, want)
	}
	// Nothing was written: the dry run created nothing.
	if (testkit.Kit{Client: k8s}).Exists(t, testkit.Obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: fresh, namespace: plan-workload}}`)) {
		t.Error("plan created ConfigMap fresh")
	}
}

// A ClusterFieldPatch is planned, then created: its field manager
// (fieldops-clusterfieldpatch/<name>), previous owners and managed fields
// are what the controller records.
func testPlanClusterFieldPatch(t *testing.T) {
	d := deploymentAs(t, "plan-cluster")
	y := `apiVersion: fieldops.dev/v1alpha1
kind: ClusterFieldPatch
metadata: {name: plan-cluster-pin}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, namespace: plan-cluster, name: web}
  patch:
    metadata: {labels: {team: platform}, annotations: {fieldops.dev/planned: "yes"}}
    spec: {replicas: 3}
`
	file := planFile(t, y)
	plans := planJSON(t, file)
	if len(plans) != 1 || plans[0].Kind != "ClusterFieldPatch" || plans[0].Action != "Configured" || plans[0].FieldManager != "fieldops-clusterfieldpatch/plan-cluster-pin" {
		t.Fatalf("plan: %s", mustJSON(t, plans))
	}
	cfp := &v1alpha1.ClusterFieldPatch{}
	createPatcherReady(t, y, cfp)
	comparePlan(t, plans[0], cfp, d)
}

// A patch whose conflicts a plugin decides (yield-to-autoscalers: yield
// .spec.replicas to an autoscaler, force the rest) is planned with the
// manager's --plugin-config: the plan yields the replicas the "hpa"
// manager set and takes the label kubectl-edit set, as the controller
// then does. Without --plugin-config the plan shows the fallback (Fail)
// and says so.
func testPlanPlugin(t *testing.T) {
	d := deploymentAs(t, "plan-plugin")
	mergeAs(t, "hpa", d, `{"spec":{"replicas":7}}`)
	y := `apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: plan-plugin}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  conflictPolicy: Plugin
  conflictPlugin: yield-to-autoscalers
  patch:
    metadata: {labels: {team: platform}, annotations: {fieldops.dev/planned: "yes"}}
    spec: {replicas: 1}
`
	file := planFile(t, y)
	// Without the plugin: its fallback, Fail, stands in.
	fallback := planJSON(t, file)
	if fallback[0].Action != "Conflicted" || !strings.Contains(strings.Join(fallback[0].Patch.Notes, " "), "shown is its fallback, Fail") {
		t.Errorf("plan without --plugin-config: %s %v", fallback[0].Action, fallback[0].Patch.Notes)
	}
	plans := planJSON(t, file, "--plugin-config", planPluginConfig)
	rows := map[string]string{}
	for _, f := range plans[0].Patch.Fields {
		rows[f.Path] = f.Plan
	}
	if rows[".spec.replicas"] != "yield" || rows[".metadata.labels.team"] != "take" || plans[0].Action != "Configured" {
		t.Fatalf("plan with the plugin: %s", mustJSON(t, plans[0]))
	}
	fp := createAndWaitReady(t, y)
	comparePlan(t, plans[0], fp, d)
	if r, _, _ := unstructured.NestedInt64((testkit.Kit{Client: k8s}).Live(t, d).Object, "spec", "replicas"); r != 7 {
		t.Errorf("replicas %d: the controller did not yield them as planned", r)
	}
}

// A plugin that fails (misbehave answers an unknown decision about a field
// of "bad-decision") leaves the conflict to its fallback, Yield, in the
// plan as in the controller, and the plan says the plugin failed.
func testPlanPluginFailure(t *testing.T) {
	d := deploymentAs(t, "plan-plugin-failure")
	mergeAs(t, "bad-decision", d, `{"spec":{"replicas":5}}`)
	y := `apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: plan-plugin-failure}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  conflictPolicy: Plugin
  conflictPlugin: misbehave
  conflictPluginFallback: Yield
  patch: {metadata: {labels: {tier: web}}, spec: {replicas: 1}}
`
	plans := planJSON(t, planFile(t, y), "--plugin-config", planPluginConfig)
	rows := map[string]string{}
	for _, f := range plans[0].Patch.Fields {
		rows[f.Path] = f.Plan
	}
	notes := strings.Join(plans[0].Patch.Notes, " ")
	if rows[".spec.replicas"] != "yield" || rows[".metadata.labels.tier"] != "add" || !strings.Contains(notes, `the plugin "misbehave" failed`) || !strings.Contains(notes, "unknown decision 42") {
		t.Fatalf("plan with a failing plugin: %s", mustJSON(t, plans[0]))
	}
	fp := createAndWaitReady(t, y)
	comparePlan(t, plans[0], fp, d)
	if c := meta.FindStatusCondition(fp.Status.Conditions, "PluginFailure"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("the controller did not report the plugin's failure: %+v", fp.Status.Conditions)
	}
}

// plan refuses the targets the controller refuses (patchtarget), with the
// reason and the message the controller stalls with.
func testPlanRefusesWhatTheControllerRefuses(t *testing.T) {
	createNamespace(t, "plan-refused")
	for _, tc := range []struct {
		name, y, reason string
		obj             patcher
	}{
		{"a fieldops object", `apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: own-kind, namespace: plan-refused}
spec:
  target: {apiVersion: fieldops.dev/v1alpha1, kind: FieldPatch, name: other}
  patch: {metadata: {labels: {x: "y"}}}
`, "ForbiddenTarget", &v1alpha1.FieldPatch{}},
		{"another namespace", `apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: cross, namespace: plan-refused}
spec:
  target: {apiVersion: v1, kind: ConfigMap, namespace: default, name: c}
  patch: {data: {a: "1"}}
`, "CrossNamespaceTarget", &v1alpha1.FieldPatch{}},
		{"a cluster-scoped target of a FieldPatch", `apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: cluster-scoped, namespace: plan-refused}
spec:
  target: {apiVersion: v1, kind: Namespace, name: plan-refused}
  patch: {metadata: {labels: {x: "y"}}}
`, "InvalidTarget", &v1alpha1.FieldPatch{}},
		{"fieldops's CRD", `apiVersion: fieldops.dev/v1alpha1
kind: ClusterFieldPatch
metadata: {name: plan-refused-crd}
spec:
  target: {apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, name: fieldpatches.fieldops.dev}
  patch: {metadata: {labels: {x: "y"}}}
`, "ForbiddenTarget", &v1alpha1.ClusterFieldPatch{}},
		{"fieldops's namespace", `apiVersion: fieldops.dev/v1alpha1
kind: ClusterFieldPatch
metadata: {name: plan-refused-own-namespace}
spec:
  target: {apiVersion: v1, kind: ConfigMap, namespace: ` + planOwnNamespace + `, name: fieldops-config}
  patch: {data: {a: "1"}}
`, "ForbiddenTarget", &v1alpha1.ClusterFieldPatch{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plans := planJSON(t, planFile(t, tc.y))
			if len(plans) != 1 || plans[0].Action != "Invalid" || plans[0].Reason != tc.reason {
				t.Fatalf("plan: %s, want Invalid with reason %s", mustJSON(t, plans), tc.reason)
			}
			if err := yaml.UnmarshalStrict([]byte(tc.y), tc.obj); err != nil {
				t.Fatal(err)
			}
			if err := k8s.Create(context.Background(), tc.obj); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { testkit.Kit{Client: k8s}.DeleteAndWait(t, tc.obj) })
			var stalled *metav1.Condition
			testkit.Eventually(t, tc.obj.GetName()+" Stalled", func() (bool, string) {
				if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(tc.obj), tc.obj); err != nil {
					return false, err.Error()
				}
				stalled = meta.FindStatusCondition(tc.obj.PatchStatus().Conditions, "Stalled")
				return stalled != nil && stalled.Status == "True" && stalled.ObservedGeneration == tc.obj.GetGeneration(), fmt.Sprint(stalled)
			})
			if stalled.Reason != plans[0].Reason {
				t.Errorf("the controller stalls with %s, the plan says %s", stalled.Reason, plans[0].Reason)
			}
			if want := "the patch would stall (reason " + stalled.Reason + "): " + stalled.Message; plans[0].Message != want {
				t.Errorf("plan's message\n%s\nwant\n%s", plans[0].Message, want)
			}
		})
	}
}

// Without --fieldops-namespace, plan finds the manager's namespace as the
// manager knows it: the namespace of its leader election Lease (OLM puts
// it in the shared namespace operators). There it refuses fieldops's own
// objects, and plans the other operators' objects.
func TestPlanFindsManagerNamespace(t *testing.T) {
	ctx := context.Background()
	const ns = "olm-operators"
	createNamespace(t, ns)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "fieldops.dev", Namespace: ns}}
	if err := k8s.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, lease) })
	applyAs(t, "other-operator", `{apiVersion: v1, kind: ConfigMap, metadata: {name: other-operator-config, namespace: `+ns+`}, data: {a: "1"}}`)
	plans := planJSON(t, planFile(t, `apiVersion: fieldops.dev/v1alpha1
kind: ClusterFieldPatch
metadata: {name: plan-own-objects}
spec:
  target: {apiVersion: v1, kind: ServiceAccount, namespace: `+ns+`, name: fieldops-controller-manager}
  patch: {metadata: {labels: {x: "y"}}}
---
apiVersion: fieldops.dev/v1alpha1
kind: ClusterFieldPatch
metadata: {name: plan-other-operator}
spec:
  target: {apiVersion: v1, kind: ConfigMap, namespace: `+ns+`, name: other-operator-config}
  patch: {data: {b: "2"}}
`))
	if len(plans) != 2 {
		t.Fatalf("plans: %s", mustJSON(t, plans))
	}
	if p := plans[0]; p.Action != "Invalid" || p.Reason != "ForbiddenTarget" || !strings.Contains(p.Message, `namespace "`+ns+`"`) {
		t.Errorf("fieldops's own ServiceAccount in %s: %s %s %q, want Invalid ForbiddenTarget naming the namespace", ns, p.Action, p.Reason, p.Message)
	}
	if p := plans[1]; p.Action != "Configured" {
		t.Errorf("another operator's ConfigMap in %s: %s %q, want Configured", ns, p.Action, p.Message)
	}
	// An explicit --fieldops-namespace wins.
	plans = planJSON(t, planFile(t, `apiVersion: fieldops.dev/v1alpha1
kind: ClusterFieldPatch
metadata: {name: plan-own-objects}
spec:
  target: {apiVersion: v1, kind: ServiceAccount, namespace: `+ns+`, name: fieldops-controller-manager}
  patch: {metadata: {labels: {x: "y"}}}
`), "--fieldops-namespace", "elsewhere")
	if len(plans) != 1 || plans[0].Reason == "ForbiddenTarget" {
		t.Errorf("with --fieldops-namespace elsewhere: %s, want no ForbiddenTarget", mustJSON(t, plans))
	}
}

// plan --delete says, field by field, what deleting a patch would do
// under each deletion policy, and the deletion then does exactly that:
// values and owners of every planned field as the plan said.
func testPlanDelete(t *testing.T) {
	createNamespace(t, "plan-delete")
	for i, policy := range []string{"HandBack", "Restore", "Relinquish", "Orphan"} {
		name := fmt.Sprintf("cm-%d", i)
		cm := applyAs(t, "helm", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: plan-delete}, data: {replicas: '3', keep: helm}}", name))
		mergeAs(t, "ops", cm, `{"data":{"keep":"ops"}}`)
		fp := &v1alpha1.FieldPatch{}
		createReady(t, fmt.Sprintf(`apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: %s, namespace: plan-delete}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: %s}
  deletionPolicy: %s
  patch: {data: {replicas: '10', added: 'yes'}}
`, name, name, policy), fp)
		out, errOut, err := plugin(t, "plan", "--delete", "fieldpatch/"+name, "-n", "plan-delete", "-o", "json")
		if err != nil {
			t.Fatalf("%s: plan --delete: %v\n%s", policy, err, errOut)
		}
		var plans []Plan
		if err := json.Unmarshal([]byte(out), &plans); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if len(plans) != 1 || plans[0].Patch == nil || len(plans[0].Patch.Deletion) == 0 {
			t.Fatalf("%s: plan: %s", policy, out)
		}
		testkit.Kit{Client: k8s}.DeleteAndWait(t, fp)
		after := &unstructured.Unstructured{}
		after.SetGroupVersionKind(cm.GroupVersionKind())
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(cm), after); err != nil {
			t.Fatal(err)
		}
		mf, err := ownershipcore.Owners(after)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range plans[0].Patch.Deletion {
			path, err := ownershipcore.ParsePath(row.Path)
			if err != nil {
				t.Fatal(err)
			}
			value := "(removed)"
			if v, ok := ownershipcore.ValueAt(after, path); ok {
				raw, _ := json.Marshal(v)
				value = string(raw)
			}
			if value != row.ValueAfter {
				t.Errorf("%s: %s is %s after the deletion, the plan said %s (%s)", policy, row.Path, value, row.ValueAfter, row.Action)
			}
			var owners []string
			for _, e := range mf {
				if slices.Contains(ownershipcore.FormatSet(e.Fields), row.Path) {
					owners = append(owners, fieldplan.DescribeEntry(e.ManagerKey))
				}
			}
			if !slices.Equal(owners, row.OwnersAfter) {
				t.Errorf("%s: %s owned by %v after the deletion, the plan said %v (%s)", policy, row.Path, owners, row.OwnersAfter, row.Action)
			}
		}
		if policy == "Restore" {
			for _, row := range plans[0].Patch.Deletion {
				if row.Path == ".data.replicas" && (row.Action != "restored" || row.ValueAfter != `"3"`) {
					t.Errorf("Restore plans %s for .data.replicas, want restored to \"3\"", mustJSON(t, row))
				}
			}
		}
	}
}

// leaves are the leaf paths of a planned owner's fields and shared
// fields together.
func leaves(t *testing.T, o PlannedOwner) []string {
	t.Helper()
	l, err := o.Leaves()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// ownerLeaves prints planned owners with their leaf paths: which fields
// an owner still co-owns is what fieldops saw when it last looked, which
// a plan and the controller may see at different times.
func ownerLeaves(t *testing.T, owners []PlannedOwner) string {
	t.Helper()
	var out []string
	for _, o := range owners {
		out = append(out, fmt.Sprintf("%s %s %s %s via %q: %v", o.Manager, o.Operation, o.APIVersion, o.Subresource, o.Via, leaves(t, o)))
	}
	return mustJSON(t, out)
}
