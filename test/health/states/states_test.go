/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package states_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/test/health"
	"github.com/fieldops/fieldops/test/testkit"
)

// hold is a finalizer of the tests': it keeps a deleted object readable
// once fieldops is done with it.
const hold = "test.fieldops.dev/hold"

// want is the health both tools must read from an object in one state.
type want struct {
	argo    string // Argo CD, through the kind's health.lua
	message string // a part of the script's hs.message
	kstatus status.Status
}

func root(t testing.TB) string {
	t.Helper()
	r, err := localcp.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkHealth reads u from the control plane and runs the kind's script
// and kstatus over it.
func checkHealth(t *testing.T, u *unstructured.Unstructured, w want) {
	t.Helper()
	live := kit.Live(t, u)
	src, err := health.Script(root(t), live.GetKind())
	if err != nil {
		t.Fatal(err)
	}
	h, err := health.Run(src, live.Object)
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(live)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Argo CD %s %q; kstatus %s", h.Status, h.Message, res.Status)
	if h.Status != w.argo || !strings.Contains(h.Message, w.message) {
		t.Errorf("Argo CD health %s %q, want %s with %q\nconditions: %s", h.Status, h.Message, w.argo, w.message, conditionsOf(live))
	}
	if res.Status != w.kstatus {
		t.Errorf("kstatus %s (%s), want %s\nconditions: %s", res.Status, res.Message, w.kstatus, conditionsOf(live))
	}
}

// conditionsOf prints u's generations and conditions, for failures.
func conditionsOf(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	return fmt.Sprintf("generation %d, observed %d: %v", u.GetGeneration(), observed, conds)
}

// ready returns u's Ready condition.
func ready(u *unstructured.Unstructured) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return m
		}
	}
	return nil
}

// waitReason waits until u's Ready condition has reason at u's current
// generation.
func waitReason(t *testing.T, u *unstructured.Unstructured, reason string) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("%s %s reason %s", u.GetKind(), u.GetName(), reason), func() (bool, string) {
		live := kit.Live(t, u)
		c := ready(live)
		if c == nil {
			return false, "no Ready condition"
		}
		gen, _ := c["observedGeneration"].(int64)
		return c["reason"] == reason && gen == live.GetGeneration(), conditionsOf(live)
	})
}

// create creates the object of the YAML and returns it.
func create(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := testkit.Obj(t, y)
	if err := k8s.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// edit merge-patches u.
func edit(t *testing.T, u *unstructured.Unstructured, patch string) {
	t.Helper()
	if err := k8s.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// deleteHeld deletes u, which carries the hold finalizer, and waits until
// only that finalizer is left (fieldops's own deletion is done); the
// test's end lets it go.
func deleteHeld(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	t.Cleanup(func() {
		_ = k8s.Patch(context.Background(), u, client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`)))
	})
	if err := k8s.Delete(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "deletion of "+u.GetName()+" down to the test's finalizer", func() (bool, string) {
		live := kit.Live(t, u)
		return live.GetDeletionTimestamp() != nil && fmt.Sprint(live.GetFinalizers()) == "["+hold+"]", fmt.Sprint(live.GetFinalizers())
	})
}

// accounts creates, in ns, ServiceAccount admin bound to the namespace
// admin role and ServiceAccount ci with no rights.
func accounts(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	for _, sa := range []string{"admin", "ci"} {
		if err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "admin", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: testkit.TenantAdminRole(t, k8s)},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "admin", Namespace: ns}},
	}
	if err := k8s.Create(ctx, rb); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// configMap applies ConfigMap name in ns as helm, with data a: "1".
func configMap(t *testing.T, ns, name string) {
	t.Helper()
	kit.ApplyAs(t, "helm", fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: %s}, data: {a: "1"}}`, name, ns))
}

func TestFieldPatchHealth(t *testing.T) {
	t.Parallel()
	testPatchHealth(t, "FieldPatch")
}

func TestClusterFieldPatchHealth(t *testing.T) {
	t.Parallel()
	testPatchHealth(t, "ClusterFieldPatch")
}

// testPatchHealth puts patches of kind in each state a patch can hold
// and reads their health. Each state has a target ConfigMap of its own.
func testPatchHealth(t *testing.T, kind string) {
	ns := kit.Namespace(t, "health-"+strings.ToLower(kind))
	accounts(t, ns)
	// patch creates a patch of kind named name on ConfigMap target;
	// spec holds further lines of its spec, indented by two spaces.
	patch := func(t *testing.T, name, target, spec string) *unstructured.Unstructured {
		t.Helper()
		meta, ref := fmt.Sprintf("{name: %s, namespace: %s}", name, ns), fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, name: %s}", target)
		if kind == "ClusterFieldPatch" {
			meta = fmt.Sprintf("{name: %s-%s}", ns, name)
			ref = fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, name: %s, namespace: %s}", target, ns)
			spec = strings.ReplaceAll(spec, "serviceAccountName:", "serviceAccountNamespace: "+ns+"\n  serviceAccountName:")
		}
		return create(t, fmt.Sprintf("apiVersion: fieldops.dev/v1alpha1\nkind: %s\nmetadata: %s\nspec:\n  target: %s\n%s\n", kind, meta, ref, spec))
	}
	for _, tc := range []struct {
		state string
		make  func(t *testing.T) *unstructured.Unstructured
		want  want
	}{
		{"ready", func(t *testing.T) *unstructured.Unstructured {
			configMap(t, ns, "ready")
			p := patch(t, "ready", "ready", "  patch: {metadata: {labels: {tuned: \"yes\"}}}")
			waitReason(t, p, "Applied")
			return p
		}, want{"Healthy", "Applied", status.CurrentStatus}},
		{"target not found", func(t *testing.T) *unstructured.Unstructured {
			p := patch(t, "missing", "missing", "  patch: {metadata: {labels: {tuned: \"yes\"}}}")
			waitReason(t, p, "TargetNotFound")
			return p
		}, want{"Progressing", "TargetNotFound", status.InProgressStatus}},
		// Another fieldops object took the field: the loser waits for it.
		{"contested", func(t *testing.T) *unstructured.Unstructured {
			configMap(t, ns, "contested")
			one := patch(t, "contested-one", "contested", "  patch: {metadata: {labels: {team: a}}}")
			waitReason(t, one, "Applied")
			two := patch(t, "contested-two", "contested", "  patch: {metadata: {labels: {team: b}}}")
			waitReason(t, two, "Applied")
			waitReason(t, one, "Contested")
			return one
		}, want{"Progressing", "Contested", status.InProgressStatus}},
		// The same contest past spec.contestTimeout.
		{"contest timeout", func(t *testing.T) *unstructured.Unstructured {
			configMap(t, ns, "timeout")
			one := patch(t, "timeout-one", "timeout", "  contestTimeout: 1s\n  patch: {metadata: {labels: {team: a}}}")
			waitReason(t, one, "Applied")
			two := patch(t, "timeout-two", "timeout", "  patch: {metadata: {labels: {team: b}}}")
			waitReason(t, two, "Applied")
			waitReason(t, one, "ContestTimeout")
			return one
		}, want{"Degraded", "ContestTimeout", status.FailedStatus}},
		{"conflict", func(t *testing.T) *unstructured.Unstructured {
			configMap(t, ns, "conflict")
			p := patch(t, "conflict", "conflict", "  conflictPolicy: Fail\n  patch: {data: {a: \"2\"}}")
			waitReason(t, p, "Conflict")
			return p
		}, want{"Degraded", "Conflict", status.FailedStatus}},
		// The same Conflict after an edit: not a terminal error, so
		// status.observedGeneration stays at the last applied generation
		// and kstatus reads InProgress; the script reads the conditions,
		// stamped with the current generation.
		{"conflict after an edit", func(t *testing.T) *unstructured.Unstructured {
			configMap(t, ns, "conflict-edit")
			p := patch(t, "conflict-edit", "conflict-edit", "  conflictPolicy: Fail\n  patch: {metadata: {labels: {tuned: \"yes\"}}}")
			waitReason(t, p, "Applied")
			edit(t, p, `{"spec":{"patch":{"data":{"a":"2"}}}}`)
			waitReason(t, p, "Conflict")
			return p
		}, want{"Degraded", "Conflict", status.InProgressStatus}},
		{"forbidden", func(t *testing.T) *unstructured.Unstructured {
			configMap(t, ns, "forbidden")
			p := patch(t, "forbidden", "forbidden", "  serviceAccountName: ci\n  patch: {metadata: {labels: {tuned: \"yes\"}}}")
			waitReason(t, p, "Forbidden")
			return p
		}, want{"Progressing", "Forbidden", status.InProgressStatus}},
		// Forbidden after an edit: observedGeneration behind generation.
		{"forbidden after an edit", func(t *testing.T) *unstructured.Unstructured {
			configMap(t, ns, "forbidden-edit")
			p := patch(t, "forbidden-edit", "forbidden-edit", "  serviceAccountName: admin\n  patch: {metadata: {labels: {tuned: \"yes\"}}}")
			waitReason(t, p, "Applied")
			edit(t, p, `{"spec":{"serviceAccountName":"ci"}}`)
			waitReason(t, p, "Forbidden")
			return p
		}, want{"Progressing", "Forbidden", status.InProgressStatus}},
		{"suspended", func(t *testing.T) *unstructured.Unstructured {
			configMap(t, ns, "suspended")
			p := patch(t, "suspended", "suspended", "  patch: {metadata: {labels: {tuned: \"yes\"}}}")
			waitReason(t, p, "Applied")
			edit(t, p, `{"spec":{"suspend":true}}`)
			waitReason(t, p, "Suspended")
			return p
		}, want{"Suspended", "Suspended", status.InProgressStatus}},
		{"deleting", func(t *testing.T) *unstructured.Unstructured {
			configMap(t, ns, "deleting")
			p := patch(t, "deleting", "deleting", "  patch: {metadata: {labels: {tuned: \"yes\"}}}")
			waitReason(t, p, "Applied")
			edit(t, p, `{"metadata":{"finalizers":["fieldops.dev/hand-back","`+hold+`"]}}`)
			deleteHeld(t, p)
			return p
		}, want{"Progressing", "being deleted", status.TerminatingStatus}},
	} {
		t.Run(tc.state, func(t *testing.T) {
			t.Parallel()
			checkHealth(t, tc.make(t), tc.want)
		})
	}
}

func TestManagedWorkloadHealth(t *testing.T) {
	t.Parallel()
	ns := kit.Namespace(t, "health-managedworkload")
	accounts(t, ns)
	const (
		configMap  = "{apiVersion: v1, kind: ConfigMap, metadata: {name: %s}, data: {mode: %s}}"
		deployment = "{apiVersion: apps/v1, kind: Deployment, metadata: {name: %s}, spec: {selector: {matchLabels: {app: %[1]s}}, template: {metadata: {labels: {app: %[1]s}}, spec: {containers: [{name: main, image: nginx}]}}}}"
	)
	// workload creates ManagedWorkload name with the resources and
	// further spec lines.
	workload := func(t *testing.T, name, spec string, resources ...string) *unstructured.Unstructured {
		t.Helper()
		return create(t, fmt.Sprintf("apiVersion: fieldops.dev/v1alpha1\nkind: ManagedWorkload\nmetadata: {name: %s, namespace: %s}\nspec:\n  resources: [%s]\n%s\n", name, ns, strings.Join(resources, ", "), spec))
	}
	for _, tc := range []struct {
		state string
		make  func(t *testing.T) *unstructured.Unstructured
		want  want
	}{
		{"ready", func(t *testing.T) *unstructured.Unstructured {
			w := workload(t, "ready", "", fmt.Sprintf(configMap, "ready", "fast"))
			waitReason(t, w, "Applied")
			return w
		}, want{"Healthy", "Applied", status.CurrentStatus}},
		// The control plane runs no Deployment controller: the rollout
		// never ends.
		{"progressing", func(t *testing.T) *unstructured.Unstructured {
			w := workload(t, "progressing", "", fmt.Sprintf(deployment, "progressing"))
			waitReason(t, w, "Progressing")
			return w
		}, want{"Progressing", "Progressing", status.InProgressStatus}},
		{"health check timeout", func(t *testing.T) *unstructured.Unstructured {
			w := workload(t, "timeout", "  timeout: 1s", fmt.Sprintf(deployment, "timeout"))
			waitReason(t, w, "HealthCheckTimeout")
			return w
		}, want{"Degraded", "HealthCheckTimeout", status.FailedStatus}},
		{"contested", func(t *testing.T) *unstructured.Unstructured {
			a := workload(t, "contested-a", "", fmt.Sprintf(configMap, "contested", "fast"))
			waitReason(t, a, "Applied")
			b := workload(t, "contested-b", "", fmt.Sprintf(configMap, "contested", "slow"))
			waitReason(t, b, "Applied")
			waitReason(t, a, "Contested")
			return a
		}, want{"Progressing", "Contested", status.InProgressStatus}},
		// An object the account may not write: ObjectsFailed, retried.
		{"forbidden", func(t *testing.T) *unstructured.Unstructured {
			w := workload(t, "forbidden", "  serviceAccountName: ci", fmt.Sprintf(configMap, "forbidden", "fast"))
			waitReason(t, w, "ObjectsFailed")
			return w
		}, want{"Progressing", "Forbidden", status.InProgressStatus}},
		{"suspended", func(t *testing.T) *unstructured.Unstructured {
			w := workload(t, "suspended", "", fmt.Sprintf(configMap, "suspended", "fast"))
			waitReason(t, w, "Applied")
			edit(t, w, `{"spec":{"suspend":true}}`)
			waitReason(t, w, "Suspended")
			return w
		}, want{"Suspended", "Suspended", status.InProgressStatus}},
		{"deleting", func(t *testing.T) *unstructured.Unstructured {
			w := workload(t, "deleting", "", fmt.Sprintf(configMap, "deleting", "fast"))
			waitReason(t, w, "Applied")
			edit(t, w, `{"metadata":{"finalizers":["fieldops.dev/prune","`+hold+`"]}}`)
			deleteHeld(t, w)
			return w
		}, want{"Progressing", "being deleted", status.TerminatingStatus}},
	} {
		t.Run(tc.state, func(t *testing.T) {
			t.Parallel()
			checkHealth(t, tc.make(t), tc.want)
		})
	}
}

func TestPodSetHealth(t *testing.T) {
	t.Parallel()
	ns := kit.Namespace(t, "health-podset")
	podSet := func(t *testing.T, name, selector string) *unstructured.Unstructured {
		t.Helper()
		return create(t, fmt.Sprintf(`
apiVersion: fieldops.dev/v1alpha1
kind: PodSet
metadata: {name: %s, namespace: %s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec: {containers: [{name: main, image: nginx}]}
`, name, ns, selector))
	}
	// podReady reports pod <name>-0 Ready, as its kubelet would.
	podReady := func(t *testing.T, name string) {
		t.Helper()
		testkit.Eventually(t, "pod "+name+"-0 Ready", func() (bool, string) {
			pod := &corev1.Pod{}
			if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-0"}, pod); err != nil {
				return false, err.Error()
			}
			pod.Status.Phase = corev1.PodRunning
			pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
			err := k8s.Status().Update(context.Background(), pod)
			return err == nil, fmt.Sprint(err)
		})
	}
	for _, tc := range []struct {
		state string
		make  func(t *testing.T) *unstructured.Unstructured
		want  want
	}{
		{"ready", func(t *testing.T) *unstructured.Unstructured {
			ps := podSet(t, "ready", "ready")
			podReady(t, "ready")
			waitReason(t, ps, "Ready")
			return ps
		}, want{"Healthy", "1/1 pods ready", status.CurrentStatus}},
		{"progressing", func(t *testing.T) *unstructured.Unstructured {
			ps := podSet(t, "progressing", "progressing")
			waitReason(t, ps, "Progressing")
			return ps
		}, want{"Progressing", "0/1 pods ready", status.InProgressStatus}},
		// A selector that does not match the template: Stalled.
		{"invalid spec", func(t *testing.T) *unstructured.Unstructured {
			ps := podSet(t, "invalid", "other")
			waitReason(t, ps, "InvalidSpec")
			return ps
		}, want{"Degraded", "InvalidSpec", status.FailedStatus}},
		{"deleting", func(t *testing.T) *unstructured.Unstructured {
			ps := podSet(t, "deleting", "deleting")
			podReady(t, "deleting")
			waitReason(t, ps, "Ready")
			edit(t, ps, `{"metadata":{"finalizers":["`+hold+`"]}}`)
			deleteHeld(t, ps)
			return ps
		}, want{"Progressing", "being deleted", status.TerminatingStatus}},
	} {
		t.Run(tc.state, func(t *testing.T) {
			t.Parallel()
			checkHealth(t, tc.make(t), tc.want)
		})
	}
}
