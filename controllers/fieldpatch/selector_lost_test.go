/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

// refuseAppliedStatus makes the apiserver refuse, in namespace ns, every
// status write of a FieldPatch that reports an applied target (a
// ValidatingAdmissionPolicy and its binding), and waits until it does
// (a dry-run status write of probe is refused).
func refuseAppliedStatus(t *testing.T, ns string, probe *v1alpha1.FieldPatch) {
	t.Helper()
	ctx := context.Background()
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-applied-status-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"fieldops.dev"}, APIVersions: []string{"*"}, Resources: []string{"fieldpatches/status"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!has(object.status.targets) || !has(object.status.targets.applied) || object.status.targets.applied == 0",
				Message:    "status writes reporting an applied target are refused (test)",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
			}},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), o) })
	}
	eventually(t, "the policy refuses a status write reporting an applied target", func() (bool, string) {
		p := probe.DeepCopy()
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err.Error()
		}
		patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"targets":{"applied":1}}}`))
		err := k8s.Status().Patch(ctx, p, patch, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "refused (test)"), fmt.Sprint(err)
	})
}

// A selector patch records each target before its first write to it, so
// that an apply whose status write is then lost (refused here, as a
// failed request or a manager stopped between the two would lose it)
// still leaves a record its deletion finds: the fields the patch added go,
// and no entry of its field manager is left on the target (test/invariants
// under faults, seed 1000003: the deletion found no record and left the
// patch's Apply entry owning the field).
func TestSelectorTargetRecordedBeforeItsFirstWrite(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "sel-ahead")
	probe := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: probe, namespace: `+ns+`}
spec:
  targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {never: "matches"}}}
  patch: {data: {x: "1"}}
`)
	refuseAppliedStatus(t, ns, probe)
	before := helmConfigMaps(t, ns, "yes", "cm")
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: p, namespace: `+ns+`}
spec:
  targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {proxy: "yes"}}}
  patch: {data: {added: "1"}}
`)
	manager := "fieldops-fieldpatch/" + ns + "/p"
	eventually(t, "the target applied, the status write reporting it refused", func() (bool, string) {
		u := live(t, configMap(t, ns, "cm"))
		got := fmt.Sprint(owners(t, u)[".data.added"])
		return got == "["+manager+"/Apply]", got
	})
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fp), fp); err != nil {
		t.Fatal(err)
	}
	if ts := fp.Status.Targets; ts == nil || len(ts.Records) != 1 || ts.Applied != 0 {
		t.Fatalf("status.targets %+v, want the target's record saved ahead and no applied count", ts)
	}

	deleteAndWait(t, fp)
	wantAddedGone(t, ns, "cm", before["cm"])
}

// wantAddedGone checks that the ConfigMap ns/name is as helmConfigMaps
// left it (its owners, want) and without the data.added the patches of
// these tests add.
func wantAddedGone(t *testing.T, ns, name, want string) {
	t.Helper()
	u := live(t, configMap(t, ns, name))
	if got := fmt.Sprint(owners(t, u)); got != want {
		t.Errorf("%s after deletion: owners %s, want %s", name, got, want)
	}
	if _, found, _ := unstructured.NestedString(u.Object, "data", "added"); found {
		t.Errorf("%s after deletion: the field the patch added stays", name)
	}
}

// A target the patch's account may not write to (nor read: its rights
// name the other target only) is recorded ahead with no field, counted
// forbidden, and neither its relabelling out of the selector nor the
// patch's deletion fails on it: nothing of the patch's is there to give
// back. The target it may write to is given back as usual.
func TestSelectorTargetNeverWritableLeavesCleanly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "sel-limited")
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "limited", Namespace: ns}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "limited", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "patch"}, ResourceNames: []string{"ok"}},
	}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "limited", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "limited"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "limited", Namespace: ns}}}
	for _, o := range []client.Object{sa, role, rb} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	before := helmConfigMaps(t, ns, "yes", "ok", "nope")
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: p, namespace: `+ns+`}
spec:
  serviceAccountName: limited
  targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {proxy: "yes"}}}
  patch: {data: {added: "1"}}
`)
	eventually(t, "one target applied, one forbidden", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(fp), fp); err != nil {
			return false, err.Error()
		}
		ts := fp.Status.Targets
		if ts == nil {
			return false, "no status.targets"
		}
		return ts.Matched == 2 && ts.Applied == 1 && ts.Forbidden == 1 && len(ts.Records) == 2, fmt.Sprintf("%+v", *ts)
	})

	if err := k8s.Patch(ctx, configMap(t, ns, "nope"), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"proxy":"no"}}}`)), client.FieldOwner("kubectl-label")); err != nil {
		t.Fatal(err)
	}
	waitTargets(t, fp, 1, 1)
	if n := len(fp.Status.Targets.Records); n != 1 {
		t.Errorf("%d records after the forbidden target left, want 1", n)
	}

	deleteAndWait(t, fp)
	wantAddedGone(t, ns, "ok", before["ok"])
}

// A selector patch whose own write takes its target out of the selected
// set (it changes the very label the selector matches) gives the target's
// fields back with no other event to wake it, and does not flap: the
// values stay, as after any hand-back, so the target stays out of the set.
func TestSelectorPatchThatRelabelsItsTargetOut(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "sel-self-out")
	helmConfigMaps(t, ns, "yes", "cm")
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: p, namespace: `+ns+`}
spec:
  targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {proxy: "yes"}}}
  patch: {metadata: {labels: {proxy: "no"}}, data: {added: "1"}}
`)
	eventually(t, "the target given back after the patch's own write took it out", func() (bool, string) {
		u := live(t, configMap(t, ns, "cm"))
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fp), fp); err != nil {
			return false, err.Error()
		}
		ts := fp.Status.Targets
		records := -1
		if ts != nil {
			records = len(ts.Records)
		}
		mine := strings.Contains(fmt.Sprint(u.GetManagedFields()), "fieldops-fieldpatch/"+ns+"/p")
		return !mine && records == 0 && u.GetLabels()["proxy"] == "no", fmt.Sprintf("entry of the patch: %v, records %d, labels %v", mine, records, u.GetLabels())
	})
}

// A selector patch that sets a label its selector excludes takes its
// target out with its own write, and the give-back (HandBack removes the
// label it added) puts the target in again: the target is reported
// InvalidPatch and not patched again until the patch changes, instead of
// an apply and a give-back in a loop. A new generation tries once more,
// at two writes of the target.
func TestSelectorPatchThatExcludesItsTarget(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "sel-self-loop")
	helmConfigMaps(t, ns, "yes", "cm")
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: p, namespace: `+ns+`}
spec:
  targetSelector:
    apiVersion: v1
    kind: ConfigMap
    labelSelector:
      matchLabels: {proxy: "yes"}
      matchExpressions: [{key: done, operator: DoesNotExist}]
  patch: {metadata: {labels: {done: "true"}}, data: {added: "1"}}
`)
	excluded := func(gen int64) func() (bool, string) {
		return func() (bool, string) {
			u := live(t, configMap(t, ns, "cm"))
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fp), fp); err != nil {
				return false, err.Error()
			}
			c := meta.FindStatusCondition(fp.Status.Conditions, "Ready")
			ts := fp.Status.Targets
			if c == nil || ts == nil || c.ObservedGeneration != gen {
				return false, fmt.Sprintf("conditions %v, targets %v", fp.Status.Conditions, ts)
			}
			mine := strings.Contains(fmt.Sprint(u.GetManagedFields()), "fieldops-fieldpatch/"+ns+"/p")
			reason := ""
			if len(ts.NotApplied) == 1 {
				reason = ts.NotApplied[0].Reason
			}
			return !mine && reason == "InvalidPatch" && u.GetLabels()["done"] == "", fmt.Sprintf("entry of the patch: %v, not applied %+v, labels %v", mine, ts.NotApplied, u.GetLabels())
		}
	}
	eventually(t, "the target reported InvalidPatch, its fields given back", excluded(fp.Generation))

	target := "/namespaces/" + ns + "/configmaps/cm"
	before := requests.Writes(target)
	if err := k8s.Patch(context.Background(), fp, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"contestTimeout":"6m"}}`))); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new generation judged the same", excluded(fp.Generation))
	if n := requests.Writes(target) - before; n > 3 {
		t.Errorf("%d writes of the target for one generation, want an apply and a give-back (at most one retried)", n)
	}
}
