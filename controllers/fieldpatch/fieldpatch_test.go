/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/metrics"
)

const daemonSet = `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: aws-node, namespace: %s}
spec:
  selector: {matchLabels: {k8s-app: aws-node}}
  template:
    metadata: {labels: {k8s-app: aws-node}}
    spec:
      containers:
      - name: aws-node
        image: amazon-k8s-cni:v1.23.1
        env: [{name: AWS_VPC_K8S_CNI_LOGLEVEL, value: DEBUG}]
`

const proxyPatch = `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: %s, namespace: %s}
spec:
  target: {apiVersion: apps/v1, kind: DaemonSet, name: aws-node}
  patch:
    spec:
      template:
        spec:
          containers:
          - name: aws-node
            env: [{name: HTTP_PROXY, value: "http://proxy:3128"}]
`

// a. Adding an env var leaves the other Apply manager's fields alone and
// status lists exactly the patched fields.
func TestAddEnvKeepsOtherManagersFields(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "fp-a")
	ds := applyAs(t, "eks", fmt.Sprintf(daemonSet, ns))
	before := owners(t, live(t, ds))
	fp := fieldPatch(t, fmt.Sprintf(proxyPatch, "proxy", ns))
	waitReason(t, fp, "Applied")

	after := owners(t, live(t, ds))
	for p, ms := range before {
		if !slices.Contains(after[p], "eks/Apply") && slices.Contains(ms, "eks/Apply") {
			t.Errorf("eks lost %s", p)
		}
	}
	want := []string{
		`.spec.template.spec.containers[name="aws-node"].env[name="HTTP_PROXY"].name`,
		`.spec.template.spec.containers[name="aws-node"].env[name="HTTP_PROXY"].value`,
		`.spec.template.spec.containers[name="aws-node"].name`,
	}
	slices.Sort(want)
	if !reflect.DeepEqual(fp.Status.ManagedFields, want) {
		t.Fatalf("status.managedFields = %v, want %v", fp.Status.ManagedFields, want)
	}
	if fp.Status.FieldManager != "fieldops-fieldpatch/fp-a/proxy" || fp.Status.ObservedGeneration != fp.Generation {
		t.Fatalf("status = %+v", fp.Status)
	}
	hasEvent(t, ns, "proxy", "Applied", "DaemonSet")
}

const hpaDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: %s, labels: {app: web}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: "nginx:1.27"}]
`

// b and c. Forced fields of an Update and an Apply manager go back to each
// on delete, values stay, added fields go; an interrupted deletion
// finishes without handing back twice.
func TestDeleteHandsBackEachFieldToItsOwner(t *testing.T) {
	t.Parallel()
	for _, interrupted := range []bool{false, true} {
		t.Run(fmt.Sprintf("interrupted=%v", interrupted), func(t *testing.T) {
			ctx := context.Background()
			ns := namespace(t, fmt.Sprintf("fp-b-%v", interrupted))
			d := applyAs(t, "helm", fmt.Sprintf(hpaDeployment, ns))
			if err := k8s.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`)), client.FieldOwner("hpa")); err != nil {
				t.Fatal(err)
			}
			fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: tune, namespace: `+ns+`}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  patch:
    spec:
      replicas: 5
      template:
        spec:
          containers: [{name: app, image: "nginx:1.28", env: [{name: HTTP_PROXY, value: "http://proxy"}]}]
`)
			waitReason(t, fp, "Applied")
			own := owners(t, live(t, d))
			if got := own[".spec.replicas"]; !reflect.DeepEqual(got, []string{"fieldops-fieldpatch/" + ns + "/tune/Apply"}) {
				t.Fatalf("replicas owners = %v", got)
			}
			if len(fp.Status.PreviousOwners) != 2 {
				t.Fatalf("previousOwners = %+v, want hpa and helm", fp.Status.PreviousOwners)
			}
			if interrupted {
				// The controller crashed after the hand-back, before relinquishing.
				a := testApplier(t)
				prev, err := decodeStatusOwners(fp)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := a.HandBack(ctx, d, fp.Status.FieldManager, prev); err != nil {
					t.Fatal(err)
				}
			}
			handBacks := testutil.ToFloat64(metrics.HandBacksTotal.WithLabelValues(metrics.ControllerFieldPatch, "Deployment", metrics.StepHandBack))
			deleteAndWait(t, fp)
			if got := testutil.ToFloat64(metrics.HandBacksTotal.WithLabelValues(metrics.ControllerFieldPatch, "Deployment", metrics.StepHandBack)) - handBacks; !interrupted && got < 1 {
				t.Errorf("fieldops_handbacks_total{step=HandBack} grew by %v, want at least 1", got)
			}

			l := live(t, d)
			own = owners(t, l)
			for path, want := range map[string][]string{
				".spec.replicas": {"hpa/Update"},
				`.spec.template.spec.containers[name="app"].image`: {"helm/Apply"},
			} {
				if got := own[path]; !reflect.DeepEqual(got, want) {
					t.Errorf("%s owners = %v, want %v", path, got, want)
				}
			}
			for _, e := range l.GetManagedFields() {
				if strings.HasPrefix(e.Manager, "fieldops-") {
					t.Errorf("entry of %s (%s) left on the target", e.Manager, e.Operation)
				}
			}
			if r, _, _ := unstructured.NestedInt64(l.Object, "spec", "replicas"); r != 5 {
				t.Errorf("replicas = %d, want 5 (values stay)", r)
			}
			c, _, _ := unstructured.NestedSlice(l.Object, "spec", "template", "spec", "containers")
			if ctr := c[0].(map[string]interface{}); ctr["image"] != "nginx:1.28" || ctr["env"] != nil {
				t.Errorf("container = %v, want image nginx:1.28 and no env (added by the patch)", ctr)
			}
		})
	}
}

// d. Drift on a patched field is repaired; a change elsewhere costs no write.
func TestDriftRepairedOnlyOnPatchedFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "fp-d")
	ds := applyAs(t, "eks", fmt.Sprintf(daemonSet, ns))
	fp := fieldPatch(t, fmt.Sprintf(proxyPatch, "proxy", ns))
	waitReason(t, fp, "Applied")
	path := "/namespaces/" + ns + "/daemonsets/aws-node"
	reconciled(t, fp) // the reconciles after Applied are done
	n := requests.Writes(path)

	// A field we did not patch: no write, once a reconcile that saw the
	// change has finished.
	applyAs(t, "eks", strings.Replace(fmt.Sprintf(daemonSet, ns), "v1.23.1", "v1.23.2", 1))
	kit.TargetSeen(t, ds)
	reconciled(t, fp)
	if got := requests.Writes(path); got != n {
		t.Fatalf("%d writes after an unrelated change, want 0", got-n)
	}
	// A patched field: repaired.
	if err := k8s.Patch(ctx, ds, client.RawPatch(types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"aws-node","env":[{"name":"HTTP_PROXY","value":"http://evil"}]}]}}}}`)),
		client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "repair", func() (bool, string) {
		env := envOf(t, live(t, ds))
		return env["HTTP_PROXY"] == "http://proxy:3128", fmt.Sprint(env)
	})
	hasEvent(t, ns, "proxy", "DriftRepaired", "kubectl-edit")
}

func envOf(t testing.TB, u *unstructured.Unstructured) map[string]interface{} {
	c, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	out := map[string]interface{}{}
	for _, e := range c[0].(map[string]interface{})["env"].([]interface{}) {
		m := e.(map[string]interface{})
		out[m["name"].(string)] = m["value"]
	}
	return out
}

// f. Fail writes nothing and names the manager and path; Yield applies the rest.
func TestConflictPolicies(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "fp-f")
	d := applyAs(t, "helm", fmt.Sprintf(hpaDeployment, ns))
	patch := `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: %s, namespace: ` + ns + `}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  conflictPolicy: %s
  patch:
    spec:
      replicas: 7
      template: {metadata: {annotations: {example.com/%s: "yes"}}}
`
	before := live(t, d).GetResourceVersion()
	fail := fieldPatch(t, fmt.Sprintf(patch, "strict", "Fail", "strict"))
	waitReason(t, fail, "Conflict")
	if c := readyCondition(fail); !strings.Contains(c.Message, `.spec.replicas owned by "helm"`) {
		t.Fatalf("message %q does not name the manager and path", c.Message)
	}
	if live(t, d).GetResourceVersion() != before {
		t.Fatal("Fail wrote to the target")
	}
	hasEvent(t, ns, "strict", "Conflict", "helm")

	yield := fieldPatch(t, fmt.Sprintf(patch, "polite", "Yield", "polite"))
	waitReason(t, yield, "Applied")
	l := live(t, d)
	if r, _, _ := unstructured.NestedInt64(l.Object, "spec", "replicas"); r != 1 {
		t.Fatalf("replicas = %d, want 1 (yielded)", r)
	}
	if v, _, _ := unstructured.NestedString(l.Object, "spec", "template", "metadata", "annotations", "example.com/polite"); v != "yes" {
		t.Fatal("the rest of the intent was not applied")
	}
	if c := readyCondition(yield); !strings.Contains(c.Message, "yielded") {
		t.Fatalf("Ready message %q does not say what was yielded", c.Message)
	}
}

// h. Two patches on different fields coexist; on one field the second
// reports the conflict unless it forces.
func TestTwoPatchesOnOneObject(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "fp-h")
	d := applyAs(t, "helm", fmt.Sprintf(hpaDeployment, ns))
	p := `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: %s, namespace: ` + ns + `}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  conflictPolicy: %s
  patch: {metadata: {labels: {%s: %s}}}
`
	one := fieldPatch(t, fmt.Sprintf(p, "one", "Force", "team", "a"))
	two := fieldPatch(t, fmt.Sprintf(p, "two", "Force", "cost", "b"))
	waitReason(t, one, "Applied")
	waitReason(t, two, "Applied")
	labels := live(t, d).GetLabels()
	if labels["team"] != "a" || labels["cost"] != "b" {
		t.Fatalf("labels = %v", labels)
	}
	three := fieldPatch(t, fmt.Sprintf(p, "three", "Fail", "team", "c"))
	waitReason(t, three, "Conflict")
	if c := readyCondition(three); !strings.Contains(c.Message, "fieldops-fieldpatch/"+ns+"/one") {
		t.Fatalf("conflict message %q does not name patch one's manager", c.Message)
	}
	three.Spec.ConflictPolicy = v1alpha1.ConflictPolicyForce
	if err := k8s.Update(context.Background(), three); err != nil {
		t.Fatal(err)
	}
	waitReason(t, three, "Applied")
	if live(t, d).GetLabels()["team"] != "c" {
		t.Fatal("forcing patch did not take the label")
	}
}

// i. Argo CD's swapping field manager: two apps contribute to one Service.
// With one manager per patch, removing one never loses the other's fields
// (the selector in the proposal's demo).
func TestSharedServiceKeepsOtherPatchFields(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "fp-i")
	svc := applyAs(t, "creator", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"gw","namespace":"`+ns+`"},"spec":{"ports":[{"name":"http","port":80}]}}`)
	p := `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: %s, namespace: ` + ns + `}
spec:
  target: {apiVersion: v1, kind: Service, name: gw}
  patch: %s
`
	appA := fieldPatch(t, fmt.Sprintf(p, "app-a", `{spec: {selector: {app: gw}, ports: [{name: metrics, port: 9090}]}}`))
	appB := fieldPatch(t, fmt.Sprintf(p, "app-b", `{spec: {ports: [{name: https, port: 443}]}}`))
	waitReason(t, appA, "Applied")
	waitReason(t, appB, "Applied")
	deleteAndWait(t, appB)
	l := live(t, svc)
	sel, _, _ := unstructured.NestedStringMap(l.Object, "spec", "selector")
	ports, _, _ := unstructured.NestedSlice(l.Object, "spec", "ports")
	var names []string
	for _, port := range ports {
		names = append(names, port.(map[string]interface{})["name"].(string))
	}
	slices.Sort(names)
	if sel["app"] != "gw" || !reflect.DeepEqual(names, []string{"http", "metrics"}) {
		t.Fatalf("after removing app-b: selector %v ports %v, want app-a's selector and ports http, metrics", sel, names)
	}
}
