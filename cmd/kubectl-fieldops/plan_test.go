package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/test/testkit"
)

// planNamespaces are the namespaces of the plan tests, the only ones
// TestPlan's manager watches.
var planNamespaces = []string{"plan-apply", "plan-strategicmerge", "plan-merge", "plan-json", "plan-fail", "plan-yield", "plan-workload"}

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
	if err := controllers.SetupWith(mgr, controllers.Options{Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(testkit.Start(mgr))
	t.Run("PatchTypes", testPlanPatchTypes)
	t.Run("FailConflict", testPlanFailConflict)
	t.Run("YieldTo", testPlanYieldTo)
	t.Run("Workload", testPlanWorkload)
}

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
func planJSON(t *testing.T, file string) []Plan {
	t.Helper()
	out, errOut, err := plugin(t, "plan", "-f", file, "-o", "json")
	if err != nil && !strings.Contains(err.Error(), "would fail") {
		t.Fatalf("plan: %v\n%s", err, errOut)
	}
	var plans []Plan
	if err := json.Unmarshal([]byte(out), &plans); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return plans
}

// createAndWaitReady creates the FieldPatch of y and waits until it is
// Ready for its generation.
func createAndWaitReady(t *testing.T, y string) *v1alpha1.FieldPatch {
	t.Helper()
	fp := &v1alpha1.FieldPatch{}
	if err := yaml.UnmarshalStrict([]byte(y), fp); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(context.Background(), fp); err != nil {
		t.Fatal(err)
	}
	// Gone before the other tests list every namespace (status -A).
	t.Cleanup(func() { testkit.Kit{Client: k8s}.DeleteAndWait(t, fp) })
	testkit.Eventually(t, "FieldPatch "+fp.Name+" Ready", func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fp), fp); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(fp.Status.Conditions, "Ready")
		if c == nil {
			return false, "no Ready condition"
		}
		return c.Status == "True" && c.ObservedGeneration == fp.Generation, c.Reason + ": " + c.Message
	})
	return fp
}

// comparePlan checks that the plan says what the controller did: the
// record of previous owners, the managed fields in status, and the
// target's managed fields entry of the patch's field manager.
func comparePlan(t *testing.T, plan Plan, fp *v1alpha1.FieldPatch, target *unstructured.Unstructured) {
	t.Helper()
	if plan.FieldManager != fp.Status.FieldManager {
		t.Errorf("plan's field manager %q, status %q", plan.FieldManager, fp.Status.FieldManager)
	}
	var got []PlannedOwner
	for _, e := range fp.Status.PreviousOwners {
		got = append(got, PlannedOwner{Manager: e.Manager, Operation: e.Operation, APIVersion: e.APIVersion, Subresource: e.Subresource, Paths: e.Paths})
	}
	if a, b := mustJSON(t, plan.Patch.PreviousOwners), mustJSON(t, got); a != b {
		t.Errorf("previous owners: plan %s, status %s", a, b)
	}
	if a, b := mustJSON(t, plan.Patch.ManagedFields), mustJSON(t, fp.Status.ManagedFields); a != b {
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
			if !slices.Contains(fp.Status.ManagedFields, f.Path) {
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
