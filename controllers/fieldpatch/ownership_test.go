/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/fieldpatch"
	"github.com/fieldops/fieldops/metrics"
)

// sharedConfigMap is owned by "base" (Apply: a, b, label tier) and "hpa"
// (Update: u).
func sharedConfigMap(t *testing.T, ns string) *unstructured.Unstructured {
	t.Helper()
	cm := applyAs(t, "base", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"shared","namespace":"`+ns+`","labels":{"tier":"web"}},"data":{"a":"1","b":"2"}}`)
	if err := k8s.Patch(context.Background(), cm, client.RawPatch(types.MergePatchType, []byte(`{"data":{"u":"1"}}`)), client.FieldOwner("hpa")); err != nil {
		t.Fatal(err)
	}
	return cm
}

func cmPatch(name, ns, policy, patch string) string {
	return fmt.Sprintf(`
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: %s, namespace: %s}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: shared}
  deletionPolicy: %s
  patch: %s
`, name, ns, policy, patch)
}

// noFieldopsEntry fails when a fieldops manager still has an entry.
func noFieldopsEntry(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	for _, e := range u.GetManagedFields() {
		if strings.HasPrefix(e.Manager, "fieldops-") {
			t.Errorf("entry of %s (%s) left on the target", e.Manager, e.Operation)
		}
	}
}

func stringMap(u *unstructured.Unstructured, path ...string) map[string]string {
	m, _, _ := unstructured.NestedStringMap(u.Object, path...)
	return m
}

// Defect 1: no deletion policy removes or changes a value that existed
// before the patch; Relinquish removes only the fields the patch added,
// Orphan leaves every value.
func TestDeletionPoliciesKeepTakenValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy string
		data   map[string]string
		owner  map[string][]string // path → owners after deletion
	}{
		{"HandBack", map[string]string{"a": "A", "b": "2", "u": "U"}, map[string][]string{".data.a": {"base/Apply"}, ".data.u": {"hpa/Update"}, `.metadata.labels.tier`: {"base/Apply"}}},
		{"Relinquish", map[string]string{"a": "A", "b": "2", "u": "U"}, map[string][]string{".data.a": nil, ".data.u": nil, `.metadata.labels.tier`: nil}},
		{"Orphan", map[string]string{"a": "A", "b": "2", "u": "U", "x": "X"}, map[string][]string{".data.a": nil, ".data.x": nil}},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			ns := namespace(t, "fp-policy-"+strings.ToLower(tc.policy))
			cm := sharedConfigMap(t, ns)
			fp := fieldPatch(t, cmPatch("take", ns, tc.policy, `{metadata: {labels: {tier: batch}}, data: {a: A, u: U, x: X}}`))
			waitReason(t, fp, "Applied")
			deleteAndWait(t, fp)
			l := live(t, cm)
			if got := stringMap(l, "data"); !reflect.DeepEqual(got, tc.data) {
				t.Errorf("data = %v, want %v", got, tc.data)
			}
			if got := stringMap(l, "metadata", "labels")["tier"]; got != "batch" {
				t.Errorf("label tier = %q, want the patched value to stay", got)
			}
			own := owners(t, l)
			for p, want := range tc.owner {
				if got := own[p]; !reflect.DeepEqual(got, want) {
					t.Errorf("%s owners = %v, want %v", p, got, want)
				}
			}
			noFieldopsEntry(t, l)
		})
	}
	// A Deployment pinned from replicas 10 keeps 10 under Relinquish.
	ns := namespace(t, "fp-policy-replicas")
	d := applyAs(t, "helm", fmt.Sprintf(hpaDeployment, ns))
	if err := k8s.Patch(context.Background(), d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`)), client.FieldOwner("hpa")); err != nil {
		t.Fatal(err)
	}
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: `+ns+`}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  deletionPolicy: Relinquish
  patch: {spec: {replicas: 10}}
`)
	waitReason(t, fp, "Applied")
	deleteAndWait(t, fp)
	if r, _, _ := unstructured.NestedInt64(live(t, d).Object, "spec", "replicas"); r != 10 {
		t.Fatalf("replicas = %d after Relinquish, want 10", r)
	}
}

// Defect 4: a previous owner that removes a field, or lets go of a field it
// shared, gets nothing back at deletion: the field counts as added.
func TestOwnerThatLetGoGetsNothingBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("removed", func(t *testing.T) {
		ns := namespace(t, "fp-letgo-removed")
		cm := applyAs(t, "base", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"shared","namespace":"`+ns+`"},"data":{"b":"2"}}`)
		if err := k8s.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(`{"data":{"mode":"slow"}}`)), client.FieldOwner("ops")); err != nil {
			t.Fatal(err)
		}
		fp := fieldPatch(t, cmPatch("mode", ns, "HandBack", `{data: {mode: fast}}`))
		waitReason(t, fp, "Applied")
		if err := k8s.Patch(ctx, cm, client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/data/mode"}]`)), client.FieldOwner("ops")); err != nil {
			t.Fatal(err)
		}
		hasEvent(t, ns, "mode", "DriftRepaired", "removed")
		eventually(t, "ops forgotten", func() (bool, string) {
			get(t, fp)
			return len(fp.Status.PreviousOwners) == 0, fmt.Sprint(fp.Status.PreviousOwners)
		})
		deleteAndWait(t, fp)
		l := live(t, cm)
		if got := stringMap(l, "data"); !reflect.DeepEqual(got, map[string]string{"b": "2"}) {
			t.Fatalf("data = %v, want mode gone (ops removed it), b kept", got)
		}
		noFieldopsEntry(t, l)
	})
	t.Run("relinquished", func(t *testing.T) {
		// Argo CD's "swapping field manager": argocd-controller applies the
		// selector, a patch applies the same selector (shared), then
		// argocd-controller stops applying it.
		ns := namespace(t, "fp-letgo-relinquished")
		svc := `{"apiVersion":"v1","kind":"Service","metadata":{"name":"gw","namespace":"` + ns + `"},"spec":{"ports":[{"name":"http","port":80}]%s}}`
		s := applyAs(t, "argocd-controller", fmt.Sprintf(svc, `,"selector":{"app":"gw"}`))
		fp := fieldPatch(t, fmt.Sprintf(`
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: sel, namespace: %s}
spec:
  target: {apiVersion: v1, kind: Service, name: gw}
  patch: {spec: {selector: {app: gw}}}
`, ns))
		waitReason(t, fp, "Applied")
		eventually(t, "shared selector observed", func() (bool, string) {
			get(t, fp)
			return len(fp.Status.PreviousOwners) == 1 && len(fp.Status.PreviousOwners[0].Shared) > 0, fmt.Sprint(fp.Status.PreviousOwners)
		})
		applyAs(t, "argocd-controller", fmt.Sprintf(svc, ""))
		eventually(t, "argocd-controller forgotten", func() (bool, string) {
			get(t, fp)
			return len(fp.Status.PreviousOwners) == 0, fmt.Sprint(fp.Status.PreviousOwners)
		})
		deleteAndWait(t, fp)
		l := live(t, s)
		if sel := stringMap(l, "spec", "selector"); len(sel) != 0 {
			t.Fatalf("selector = %v, want it removed (its owner let it go)", sel)
		}
		noFieldopsEntry(t, l)
	})
}

// Defect 11: a taken field that leaves an Apply patch goes back to its
// previous owner with its value, as at deletion.
func TestDroppedFieldGoesBack(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "fp-drop")
	cm := sharedConfigMap(t, ns)
	fp := fieldPatch(t, cmPatch("edit", ns, "HandBack", `{data: {a: A, u: U, x: X}}`))
	waitReason(t, fp, "Applied")
	for i, patch := range []string{`{"data":{"u":"U","x":"X"}}`, `{"data":{"x":"X"}}`} {
		get(t, fp)
		fp.Spec.Patch.Raw = []byte(patch)
		if err := k8s.Update(context.Background(), fp); err != nil {
			t.Fatal(err)
		}
		eventually(t, "edit observed", func() (bool, string) {
			get(t, fp)
			return fp.Status.ObservedGeneration == fp.Generation, fmt.Sprint(fp.Status.ObservedGeneration)
		})
		l := live(t, cm)
		if got := stringMap(l, "data"); !reflect.DeepEqual(got, map[string]string{"a": "A", "b": "2", "u": "U", "x": "X"}) {
			t.Fatalf("edit %d: data = %v, want every value kept", i, got)
		}
		own := owners(t, l)
		if got := own[".data.a"]; !reflect.DeepEqual(got, []string{"base/Apply"}) {
			t.Fatalf("edit %d: .data.a owners = %v, want base", i, got)
		}
		if i == 1 {
			if got := own[".data.u"]; !reflect.DeepEqual(got, []string{"hpa/Update"}) {
				t.Fatalf(".data.u owners = %v, want hpa", got)
			}
		}
	}
	deleteAndWait(t, fp)
	if got := stringMap(live(t, cm), "data"); !reflect.DeepEqual(got, map[string]string{"a": "A", "b": "2", "u": "U"}) {
		t.Fatalf("after deletion data = %v", got)
	}
}

// Defect 7: a write to the target is conditional on its UID, so a drift
// repair racing the target's deletion never recreates it.
func TestDeletedTargetIsNeverRecreated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "fp-recreate")
	fp := fieldPatch(t, cmPatch("race", ns, "HandBack", `{data: {p: patched}}`))
	for i := 0; i < 50; i++ {
		cm := applyAs(t, "base", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"shared","namespace":"`+ns+`"},"data":{"b":"2"}}`)
		uid := live(t, cm).GetUID()
		eventually(t, "applied to the new target", func() (bool, string) {
			get(t, fp)
			return fp.Status.TargetUID == string(uid) && readyCondition(fp).Reason == "Applied", readyCondition(fp).Reason
		})
		if err := k8s.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(`{"data":{"p":"drift"}}`)), client.FieldOwner("ops")); err != nil {
			t.Fatal(err)
		}
		if err := k8s.Delete(ctx, cm); err != nil {
			t.Fatal(err)
		}
		waitReason(t, fp, "TargetNotFound")
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap"}}); !apierrors.IsNotFound(err) {
			t.Fatalf("try %d: the deleted target exists again (%v)", i, err)
		}
	}
}

// staleClient serves one FieldPatch as it was first created (no status):
// a watch that lags behind the controller's own writes.
type staleClient struct {
	client.Client
	stale *v1alpha1.FieldPatch
}

func (c staleClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if fp, ok := obj.(*v1alpha1.FieldPatch); ok && key.Name == c.stale.Name && key.Namespace == c.stale.Namespace {
		c.stale.DeepCopyInto(fp)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// Defect 10: a reconcile that reads a stale FieldPatch (no record yet) after
// the first write never replaces the record made before it.
func TestStaleFieldPatchKeepsRecord(t *testing.T) {
	ns := namespace(t, "fp-stale")
	cm := sharedConfigMap(t, ns)
	fp := fieldPatch(t, cmPatch("lag", ns, "HandBack", `{data: {a: A, u: U}}`))
	stale := fp.DeepCopy()
	waitReason(t, fp, "Applied")
	if len(fp.Status.PreviousOwners) != 2 {
		t.Fatalf("previousOwners = %v, want base and hpa", fp.Status.PreviousOwners)
	}
	r := &fieldpatch.Reconciler{Client: staleClient{Client: k8s, stale: stale}, APIReader: k8s, Applier: testApplier(t)}
	for i := 0; i < 3; i++ {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "lag"}}); err != nil {
			t.Fatal(err)
		}
	}
	get(t, fp)
	if len(fp.Status.PreviousOwners) != 2 {
		t.Fatalf("after stale reconciles previousOwners = %+v, want base and hpa", fp.Status.PreviousOwners)
	}
	deleteAndWait(t, fp)
	own := owners(t, live(t, cm))
	if !reflect.DeepEqual(own[".data.a"], []string{"base/Apply"}) || !reflect.DeepEqual(own[".data.u"], []string{"hpa/Update"}) {
		t.Fatalf("after deletion a: %v, u: %v; want base and hpa", own[".data.a"], own[".data.u"])
	}
}

// events lists the reasons and notes of events about name.
func events(t *testing.T, ns, name string) []string {
	t.Helper()
	var l eventsv1.EventList
	if err := k8s.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range l.Items {
		if e.Regarding.Name == name {
			out = append(out, e.Reason+": "+e.Note)
		}
	}
	return out
}

// Defect 8: an edit that starts forcing a field another manager owns is an
// apply: nobody is blamed for drift or contest.
func TestEditTakingAFieldBlamesNobody(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "fp-blame")
	d := applyAs(t, "helm", fmt.Sprintf(hpaDeployment, ns))
	if err := k8s.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`)), client.FieldOwner("hpa")); err != nil {
		t.Fatal(err)
	}
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: grow, namespace: `+ns+`}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  patch: {metadata: {labels: {team: a}}}
`)
	waitReason(t, fp, "Applied")
	get(t, fp)
	fp.Spec.Patch.Raw = []byte(`{"metadata":{"labels":{"team":"a"}},"spec":{"replicas":7}}`)
	if err := k8s.Update(ctx, fp); err != nil {
		t.Fatal(err)
	}
	hasEvent(t, ns, "grow", "Applied", "Deployment")
	eventually(t, "replicas taken", func() (bool, string) {
		r, _, _ := unstructured.NestedInt64(live(t, d).Object, "spec", "replicas")
		return r == 7, fmt.Sprint(r)
	})
	waitReason(t, fp, "Applied")
	for _, e := range events(t, ns, "grow") {
		if strings.HasPrefix(e, "DriftRepaired") || strings.HasPrefix(e, "Contested") {
			t.Errorf("event %q after an edit nobody else wrote", e)
		}
	}
}

// Defect 14: a contest ends when a repair holds: Ready turns True and the
// fieldops_contested series goes.
func TestContestClears(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "fp-clears")
	d := applyAs(t, "helm", fmt.Sprintf(hpaDeployment, ns))
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: `+ns+`}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  patch: {spec: {replicas: 4}}
`)
	waitReason(t, fp, "Applied")
	// The rival takes replicas back after each repair, twice.
	for i := 0; i < 2; i++ {
		if err := k8s.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, 10+i))), client.FieldOwner("rival")); err != nil {
			t.Fatal(err)
		}
		eventually(t, "repair", func() (bool, string) {
			r, _, _ := unstructured.NestedInt64(live(t, d).Object, "spec", "replicas")
			return r == 4, fmt.Sprint(r)
		})
	}
	waitReason(t, fp, "Contested")
	if v := testutil.ToFloat64(metrics.Contested.WithLabelValues(metrics.ControllerFieldPatch, ns, "pin", "rival")); v != 1 {
		t.Fatalf("fieldops_contested = %v, want 1", v)
	}
	// The rival stopped: the last repair holds.
	waitReason(t, fp, "Applied")
	if get(t, fp); fp.Status.ContestedBy != "" {
		t.Fatalf("contestedBy = %q after the contest", fp.Status.ContestedBy)
	}
	for _, m := range gatherContested(t) {
		if m == ns+"/pin" {
			t.Fatal("fieldops_contested series left after the contest ended")
		}
	}
}

// Defect 2, FieldPatch side: two FieldPatches that want one field do not
// write in turn; the one that lost names the other.
func TestFieldPatchesDoNotFight(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "fp-nofight")
	d := applyAs(t, "helm", fmt.Sprintf(hpaDeployment, ns))
	p := `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: %s, namespace: ` + ns + `}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  patch: {metadata: {labels: {team: %s}}}
`
	path := "/namespaces/" + ns + "/deployments/web"
	start := requests.Writes(path)
	one := fieldPatch(t, fmt.Sprintf(p, "one", "a"))
	waitReason(t, one, "Applied")
	two := fieldPatch(t, fmt.Sprintf(p, "two", "b"))
	waitReason(t, two, "Applied")
	waitReason(t, one, "Contested")
	if c := readyCondition(one); !strings.Contains(c.Message, "FieldPatch "+ns+"/two") {
		t.Fatalf("Contested message %q does not name FieldPatch two", c.Message)
	}
	// A reconcile of each after the contest writes nothing to the target.
	for _, fp := range []*v1alpha1.FieldPatch{one, two} {
		get(t, fp)
		fp.Annotations = map[string]string{"touch": "1"}
		if err := k8s.Update(context.Background(), fp); err != nil {
			t.Fatal(err)
		}
	}
	hasEvent(t, ns, "one", "Contested", "two")
	waitReason(t, two, "Applied")
	if n := requests.Writes(path) - start; n > 6 {
		t.Fatalf("%d writes to the target, want at most 6", n)
	}
	if live(t, d).GetLabels()["team"] != "b" {
		t.Fatal("the later patch does not hold the label")
	}
	// Deleting the winner hands the label back to the loser's manager,
	// which then holds it again.
	deleteAndWait(t, two)
	waitReason(t, one, "Applied")
	eventually(t, "label back to a", func() (bool, string) {
		l := live(t, d).GetLabels()["team"]
		return l == "a", l
	})
}

// Defect 12: a patch that never wrote is deleted at once.
func TestNeverWrittenPatchIsDeleted(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "fp-neverwrote")
	fp := fieldPatch(t, cmPatch("early", ns, "HandBack", `{data: {a: A}}`))
	waitReason(t, fp, "TargetNotFound")
	deleteAndWait(t, fp)
}

// A field that leaves an imperative patch (Merge, StrategicMerge, JSON)
// is given back as at deletion, as for an Apply patch: data.u, taken from
// hpa, goes back to hpa with the patch's value; data.x, added, is removed.
// Before, the intent of an imperative patch kept every field the patch
// owned, so an edit never let one go (test/invariants seed 7202145).
func TestFieldDroppedFromAnImperativePatchGoesBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ typ, first, second string }{
		{"Merge", `{data: {u: U, x: X}}`, `{data: {z: Z}}`},
		{"StrategicMerge", `{data: {u: U, x: X}}`, `{data: {z: Z}}`},
		{"JSON", `[{op: add, path: /data/u, value: U}, {op: add, path: /data/x, value: X}]`, `[{op: add, path: /data/z, value: Z}]`},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			t.Parallel()
			ns := namespace(t, "fp-imp-"+strings.ToLower(tc.typ))
			cm := sharedConfigMap(t, ns)
			fp := fieldPatch(t, cmPatch("edit", ns, "HandBack", tc.first)+"  type: "+tc.typ+"\n")
			waitReason(t, fp, "Applied")
			get(t, fp)
			raw, err := yaml.YAMLToJSON([]byte(tc.second))
			if err != nil {
				t.Fatal(err)
			}
			fp.Spec.Patch.Raw = raw
			if err := k8s.Update(context.Background(), fp); err != nil {
				t.Fatal(err)
			}
			eventually(t, "edit applied", func() (bool, string) {
				get(t, fp)
				return fp.Status.ObservedGeneration == fp.Generation && readyCondition(fp).Reason == "Applied", fmt.Sprint(fp.Status.ObservedGeneration, readyCondition(fp).Reason)
			})
			l := live(t, cm)
			if got, want := stringMap(l, "data"), map[string]string{"a": "1", "b": "2", "u": "U", "z": "Z"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("data = %v, want %v (u kept with the patch's value, x removed)", got, want)
			}
			if got := owners(t, l)[".data.u"]; !reflect.DeepEqual(got, []string{"hpa/Update"}) {
				t.Fatalf(".data.u owners = %v, want hpa", got)
			}
			deleteAndWait(t, fp)
			if got, want := stringMap(live(t, cm), "data"), map[string]string{"a": "1", "b": "2", "u": "U"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("after deletion data = %v, want %v", got, want)
			}
		})
	}
}
