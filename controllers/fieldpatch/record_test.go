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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/ownershipcore"
)

// Previous owners are recorded when the patch takes a field, not when it
// first wants it: a patch that yielded data.a to base, and took it only
// once nobody owned it any more (base lost it to ops, whose ownership
// then went), added it. Deleted with Relinquish, it removes data.a; before,
// it kept base as the previous owner from its first look and left its
// value behind, owned by nobody (test/invariants seed 3000070).
func TestRecordOwnersAtTheTake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "record-take")
	cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"%s"},"data":%%s}`, ns)
	applyAs(t, "base", fmt.Sprintf(cm, `{"a":"1","b":"2"}`))
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: polite, namespace: `+ns+`}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: cfg}
  patch: {data: {a: "2", x: "1"}}
  conflictPolicy: Yield
  deletionPolicy: Relinquish
`)
	waitReason(t, fp, "Applied")
	target := obj(t, fmt.Sprintf(cm, `{}`))
	if got := live(t, target).Object["data"].(map[string]interface{})["a"]; got != "1" {
		t.Fatalf("data.a = %v, want base's 1 (yielded)", got)
	}
	// ops takes data.a from base; then its ownership goes (a managed
	// fields edit), the value stays: data.a is nobody's.
	applyAs(t, "ops", fmt.Sprintf(cm, `{"a":"3"}`))
	cur := live(t, target)
	mf, err := ownershipcore.Owners(cur)
	if err != nil {
		t.Fatal(err)
	}
	var keep ownershipcore.ManagedFields
	for _, e := range mf {
		if e.Manager != "ops" {
			keep = append(keep, e)
		}
	}
	entries, err := keep.Encode()
	if err != nil {
		t.Fatal(err)
	}
	cur.SetManagedFields(entries)
	if err := k8s.Update(ctx, cur, client.FieldOwner("ops")); err != nil {
		t.Fatal(err)
	}
	// The patch now takes data.a, unowned: an added field.
	eventually(t, "the patch takes data.a", func() (bool, string) {
		o := owners(t, live(t, target))
		return fmt.Sprint(o[".data.a"]) == "[fieldops-fieldpatch/"+ns+"/polite/Apply]", fmt.Sprint(o)
	})
	deleteAndWait(t, fp)
	after := live(t, target)
	data := after.Object["data"].(map[string]interface{})
	if want := map[string]interface{}{"b": "2"}; !reflect.DeepEqual(data, want) {
		t.Errorf("data after the deletion = %v, want %v (data.a and data.x were added by the patch)", data, want)
	}
	if o := owners(t, after); fmt.Sprint(o) != "map[.data.b:[base/Apply]]" {
		t.Errorf("owners after the deletion %v, want base's data.b only", o)
	}
}

// A field the patch shares with its previous owner (same value), then
// loses to a third manager's force, is taken back by force: the record
// saved before that forced apply already names the owner the repair
// displaces (ops: hpa lost the field to ops, not to the patch, and is
// forgotten for it). Saved only by the status write after the apply (a
// write a crash can lose), the next reconcile would read the forced write
// as an owner letting the field go and forget it: deletion then removed
// the value (test/invariants under faults, seed 6100231). The record is
// read as it stood at the repair's resourceVersion (a list at an exact
// version), before the status write that follows.
func TestRecordSavedBeforeForceAfterSharedOwnerLostField(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "record-shared")
	cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"%s"},"data":%%s}`, ns)
	applyAs(t, "base", fmt.Sprintf(cm, `{"b":"2"}`))
	target := obj(t, fmt.Sprintf(cm, `{}`))
	if err := k8s.Patch(ctx, live(t, target), client.RawPatch(types.MergePatchType, []byte(`{"data":{"tier":"web"}}`)), client.FieldOwner("hpa")); err != nil {
		t.Fatal(err)
	}
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: shared, namespace: `+ns+`}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: cfg}
  patch: {data: {tier: web}}
  conflictPolicy: Force
`)
	waitReason(t, fp, "Applied")
	shared := func(fp *v1alpha1.FieldPatch) string {
		for _, o := range fp.Status.PreviousOwners {
			if o.Manager == "hpa" {
				return strings.Join(o.Shared, ",")
			}
		}
		return ""
	}
	eventually(t, "hpa recorded as sharing data.tier", func() (bool, string) {
		get(t, fp)
		return shared(fp) == ".data.tier", fmt.Sprintf("%+v", fp.Status.PreviousOwners)
	})
	applyAs(t, "ops", fmt.Sprintf(cm, `{"tier":"db"}`))
	var repairedAt string
	eventually(t, "the patch takes data.tier back", func() (bool, string) {
		u := live(t, target)
		o := owners(t, u)
		repairedAt = u.GetResourceVersion()
		return fmt.Sprint(o[".data.tier"]) == "[fieldops-fieldpatch/"+ns+"/shared/Apply]", fmt.Sprint(o)
	})
	list := &v1alpha1.FieldPatchList{}
	if err := k8s.List(ctx, list, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: repairedAt, ResourceVersionMatch: metav1.ResourceVersionMatchExact}}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("%d FieldPatches at resourceVersion %s, want 1", len(list.Items), repairedAt)
	}
	if s := shared(&list.Items[0]); s != "" && s != "{}" {
		t.Errorf("at the forced repair (resourceVersion %s) the record still had hpa sharing %s", repairedAt, s)
	}
	if owners := list.Items[0].Status.PreviousOwners; len(owners) != 1 || owners[0].Manager != "ops" {
		t.Errorf("at the forced repair, previous owners %+v, want ops's data.tier", owners)
	}
	deleteAndWait(t, fp)
	if got := live(t, target).Object["data"].(map[string]interface{})["tier"]; got != "web" {
		t.Errorf("data.tier after the deletion = %v, want web (handed back to ops)", got)
	}
}

// A field the patch added stays added through a contest: helm takes the
// label with a value of its own (force), the patch takes it back (a drift
// repair), and deleting the patch removes the label, under HandBack as
// under Relinquish: nobody owned it before the patch, and helm, a manager
// in between, gets nothing back (its next apply sets its value again,
// without a conflict). A manager that co-owns the label when the patch
// goes (it applied the patch's value) keeps it. test/invariants seed 98
// ran into this path with a checker that took the repair for the first
// take.
func TestAddedFieldStaysAddedThroughContest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, ns, policy string
		shareAtEnd       bool
	}{
		{name: "HandBack", ns: "added-contest-handback", policy: "HandBack"},
		{name: "Relinquish", ns: "added-contest-relinquish", policy: "Relinquish"},
		{name: "helm shares the patch's value at the deletion", ns: "added-contest-shared", policy: "HandBack", shareAtEnd: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := namespace(t, tc.ns)
			cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"%s","labels":%%s}}`, ns)
			applyAs(t, "base", fmt.Sprintf(cm, `{"app":"web"}`))
			target := obj(t, fmt.Sprintf(cm, `{}`))
			fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: tier, namespace: `+ns+`}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: cfg}
  patch: {metadata: {labels: {tier: web}}}
  conflictPolicy: Force
  deletionPolicy: `+tc.policy+`
`)
			waitReason(t, fp, "Applied")
			manager := "fieldops-fieldpatch/" + ns + "/tier/Apply"
			if o := owners(t, live(t, target))[".metadata.labels.tier"]; fmt.Sprint(o) != "["+manager+"]" {
				t.Fatalf("label tier owned by %v, want the patch alone (added)", o)
			}
			applyAs(t, "helm", fmt.Sprintf(cm, `{"tier":"db"}`))
			eventually(t, "the patch takes the label back", func() (bool, string) {
				u := live(t, target)
				o := owners(t, u)[".metadata.labels.tier"]
				return u.GetLabels()["tier"] == "web" && fmt.Sprint(o) == "["+manager+"]", fmt.Sprint(u.GetLabels(), o)
			})
			get(t, fp)
			if len(fp.Status.PreviousOwners) != 0 {
				t.Errorf("previous owners %+v after the repair, want none (the label was added; helm is a manager in between)", fp.Status.PreviousOwners)
			}
			want, wantOwners := "", "[]"
			if tc.shareAtEnd {
				// helm applies the patch's value: it co-owns the label.
				applyAs(t, "helm", fmt.Sprintf(cm, `{"tier":"web"}`))
				want, wantOwners = "web", "[helm/Apply]"
			}
			deleteAndWait(t, fp)
			after := live(t, target)
			if got := after.GetLabels()["tier"]; got != want {
				t.Errorf("label tier after the deletion = %q, want %q", got, want)
			}
			if o := owners(t, after)[".metadata.labels.tier"]; fmt.Sprint(o) != wantOwners {
				t.Errorf("label tier owned by %v after the deletion, want %s", o, wantOwners)
			}
		})
	}
}
