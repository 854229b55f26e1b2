/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchintent

import (
	"encoding/json"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/names"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// The decision's inputs are a ConfigMap in namespace ns, patched by the
// FieldPatch ns/p.
var (
	decideManager = names.FieldPatch(false, "ns", "p")
	otherPatch    = names.FieldPatch(false, "ns", "gone")
)

// decideApplier is an Applier that only decides (no client): client-go's
// converter for built-in kinds.
func decideApplier() *ownershipcore.Applier {
	return &ownershipcore.Applier{Schema: ownershipcore.NewStaticSchema(map[schema.GroupVersion]managedfields.TypeConverter{
		{Version: "v1"}: applyconfigurations.NewTypeConverter(clientgoscheme.Scheme),
	})}
}

// configMap is the target: data, and managed fields as (manager,
// operation, FieldsV1 JSON) triples.
func configMap(t *testing.T, data map[string]interface{}, entries ...[3]string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "data": data}}
	u.SetName("cm")
	u.SetNamespace("ns")
	u.SetUID("uid-1")
	var mf []metav1.ManagedFieldsEntry
	for _, e := range entries {
		mf = append(mf, metav1.ManagedFieldsEntry{Manager: e[0], Operation: metav1.ManagedFieldsOperationType(e[1]), APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(e[2])})
	}
	u.SetManagedFields(mf)
	return u
}

// record is a FieldPatch status whose record of previous owners holds
// recorded and, per previous owner (manager, operation, FieldsV1 JSON),
// the fields taken from it.
func record(recorded string, owners ...[3]string) *v1alpha1.FieldPatchStatus {
	st := &v1alpha1.FieldPatchStatus{TargetUID: "uid-1", RecordedFields: metav1.NewFieldsV1(recorded)}
	for _, o := range owners {
		st.PreviousOwners = append(st.PreviousOwners, v1alpha1.PreviousOwner{Manager: o[0], Operation: metav1.ManagedFieldsOperationType(o[1]), APIVersion: "v1", FieldsV1: metav1.NewFieldsV1(o[2])})
	}
	return st
}

func applySpec(t *testing.T, policy v1alpha1.DeletionPolicy, data map[string]interface{}) *v1alpha1.FieldPatchSpec {
	t.Helper()
	raw, err := json.Marshal(map[string]interface{}{"data": data})
	if err != nil {
		t.Fatal(err)
	}
	return &v1alpha1.FieldPatchSpec{
		Target:         v1alpha1.TargetReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm"},
		Patch:          runtime.RawExtension{Raw: raw},
		DeletionPolicy: policy,
	}
}

// formatted prints a field set's leaves, or nil.
func formatted(s interface{ Empty() bool }, leaves []string) []string {
	if s.Empty() {
		return nil
	}
	return leaves
}

// TestDecideGiveBack is what leaves the patch before its apply, under
// each deletion policy, as deletion would let go of it.
func TestDecideGiveBack(t *testing.T) {
	const a, ab = `{"f:data":{"f:a":{}}}`, `{"f:data":{"f:a":{},"f:b":{}}}`
	tests := []struct {
		name     string
		policy   v1alpha1.DeletionPolicy
		live     *unstructured.Unstructured
		st       *v1alpha1.FieldPatchStatus
		patch    map[string]interface{}
		previous map[string][]string // manager → fields handed back to it
		release  []string
		recorded []string // the record after GiveBack and GaveBack
	}{{
		name:     "a taken field that left the patch goes back to its previous owner",
		live:     configMap(t, map[string]interface{}{"a": "1", "b": "2"}, [3]string{decideManager, "Apply", ab}),
		st:       record(a, [3]string{"helm", "Update", a}),
		patch:    map[string]interface{}{"b": "2"},
		previous: map[string][]string{"helm": {".data.a"}},
	}, {
		name:    "Relinquish leaves it without an owner",
		policy:  v1alpha1.DeletionPolicyRelinquish,
		live:    configMap(t, map[string]interface{}{"a": "1", "b": "2"}, [3]string{decideManager, "Apply", ab}),
		st:      record(a, [3]string{"helm", "Update", a}),
		patch:   map[string]interface{}{"b": "2"},
		release: []string{".data.a"},
	}, {
		name:    "Orphan leaves an added field too",
		policy:  v1alpha1.DeletionPolicyOrphan,
		live:    configMap(t, map[string]interface{}{"a": "1", "b": "2"}, [3]string{decideManager, "Apply", ab}),
		st:      record(`{}`),
		patch:   map[string]interface{}{"b": "2"},
		release: []string{".data.a"},
	}, {
		name:  "HandBack leaves an added field to the apply, which removes it",
		live:  configMap(t, map[string]interface{}{"a": "1", "b": "2"}, [3]string{decideManager, "Apply", ab}),
		st:    record(`{}`),
		patch: map[string]interface{}{"b": "2"},
	}, {
		name:    "a previous owner that is a departed FieldPatch gets nothing: released",
		live:    configMap(t, map[string]interface{}{"a": "1", "b": "2"}, [3]string{decideManager, "Apply", ab}),
		st:      record(a, [3]string{otherPatch, "Apply", a}),
		patch:   map[string]interface{}{"b": "2"},
		release: []string{".data.a"},
	}, {
		name:     "a recorded field the patch no longer owns is forgotten, not given back",
		live:     configMap(t, map[string]interface{}{"a": "1", "b": "2"}, [3]string{decideManager, "Apply", `{"f:data":{"f:b":{}}}`}, [3]string{"ops", "Apply", a}),
		st:       record(a, [3]string{"helm", "Update", a}),
		patch:    map[string]interface{}{"b": "2"},
		recorded: nil,
	}, {
		name:     "a field still in the patch stays recorded",
		live:     configMap(t, map[string]interface{}{"a": "1", "b": "2"}, [3]string{decideManager, "Apply", ab}),
		st:       record(a, [3]string{"helm", "Update", a}),
		patch:    map[string]interface{}{"a": "1", "b": "2"},
		recorded: []string{".data.a"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Decide(decideApplier(), Input{Spec: applySpec(t, tt.policy, tt.patch), Status: tt.st, Live: tt.live, Manager: decideManager})
			if err != nil {
				t.Fatal(err)
			}
			before := d.Ledger.Copy()
			give, _, forget := d.GiveBack()
			previous := map[string][]string{}
			for _, e := range give.Previous {
				previous[e.Manager] = Leaves(e.Fields)
			}
			if len(previous) == 0 {
				previous = nil
			}
			if tt.previous == nil {
				tt.previous = map[string][]string{}
			}
			if len(tt.previous) == 0 {
				tt.previous = nil
			}
			if !reflect.DeepEqual(previous, tt.previous) {
				t.Errorf("handed back %v, want %v", previous, tt.previous)
			}
			var release []string
			if give.Release != nil {
				release = formatted(give.Release, Leaves(give.Release))
			}
			if !reflect.DeepEqual(release, tt.release) {
				t.Errorf("released %v, want %v", release, tt.release)
			}
			sameLedgers(t, "the decision's record after GiveBack", d.Ledger, before)
			l := d.Ledger.Copy()
			l.Forget(forget)
			if got := formatted(l.Recorded, Leaves(l.Recorded)); !reflect.DeepEqual(got, tt.recorded) {
				t.Errorf("recorded %v after the give-back, want %v", got, tt.recorded)
			}
		})
	}
}

// TestDecideRecordsTakes: a forced field is recorded with the owner the
// apply took it from, no longer shared; a field taken without force
// (unowned) is recorded with no previous owner; SaveFirst tells a shared
// owner that let a field of the intent go.
func TestDecideRecordsTakes(t *testing.T) {
	live := configMap(t, map[string]interface{}{"a": "1"}, [3]string{"helm", "Apply", `{"f:data":{"f:a":{}}}`})
	d, err := Decide(decideApplier(), Input{Spec: applySpec(t, "", map[string]interface{}{"a": "2", "b": "3"}), Status: &v1alpha1.FieldPatchStatus{}, Live: live, Manager: decideManager})
	if err != nil {
		t.Fatal(err)
	}
	if d.SaveFirst() {
		t.Error("SaveFirst with no record")
	}
	forced := ForcedFields([]ownershipcore.Conflict{{Manager: "helm", Path: mustPath(t, ".data.a")}})
	if !RecordForced(d.Ledger, d.Owners, forced, decideManager) {
		t.Error("RecordForced changed nothing")
	}
	after := configMap(t, map[string]interface{}{"a": "2", "b": "3"}, [3]string{decideManager, "Apply", `{"f:data":{"f:a":{},"f:b":{}}}`})
	owners, err := ownershipcore.Owners(after)
	if err != nil {
		t.Fatal(err)
	}
	if got := Leaves(d.Taken(d.Ledger, owners)); !reflect.DeepEqual(got, []string{".data.b"}) {
		t.Errorf("taken without force: %v, want [.data.b]", got)
	}
	d.Ledger = d.Applied(d.Ledger, owners)
	if got := Leaves(d.Ledger.Recorded); !reflect.DeepEqual(got, []string{".data.a", ".data.b"}) {
		t.Errorf("recorded %v, want [.data.a .data.b]", got)
	}
	prev := d.Ledger.Previous(nil)
	if len(prev) != 1 || prev[0].Manager != "helm" || !reflect.DeepEqual(Leaves(prev[0].Fields), []string{".data.a"}) {
		t.Errorf("previous owners %v, want helm with .data.a", prev)
	}
}

// TestAppliedRecordsOwnersFromTheAnswer: the fields an apply took
// without force are recorded with the owners its answer shows, not those
// of the copy it was decided on. That copy may be behind the apiserver
// (an informer cache; an apply without force carries no
// resourceVersion): another manager that applied the same value in
// between co-owns the field in the answer and is its previous owner
// (test/invariants seed 98: a selector patch's first apply, decided on
// the target as its watch listed it, landed after helm applied the same
// label; the label counted as added and its expiry with Relinquish
// removed it). An owner that let the field go in between is not one.
func TestAppliedRecordsOwnersFromTheAnswer(t *testing.T) {
	const a, ab = `{"f:data":{"f:a":{}}}`, `{"f:data":{"f:a":{},"f:b":{}}}`
	tests := []struct {
		name     string
		read     *unstructured.Unstructured // the copy the decision was made on
		answer   *unstructured.Unstructured // the apply's answer
		previous map[string][]string        // manager → fields recorded as taken from it
		shared   map[string][]string        // manager → fields it shares with the patch
	}{{
		name:   "nobody owned the field: added",
		read:   configMap(t, map[string]interface{}{}),
		answer: configMap(t, map[string]interface{}{"a": "1", "b": "2"}, [3]string{decideManager, "Apply", ab}),
	}, {
		name:     "its owner applied the same value, as read",
		read:     configMap(t, map[string]interface{}{"a": "1"}, [3]string{"helm", "Apply", a}),
		answer:   configMap(t, map[string]interface{}{"a": "1", "b": "2"}, [3]string{"helm", "Apply", a}, [3]string{decideManager, "Apply", ab}),
		previous: map[string][]string{"helm": {".data.a"}},
		shared:   map[string][]string{"helm": {".data.a"}},
	}, {
		name:     "an owner that applied the same value after the read",
		read:     configMap(t, map[string]interface{}{}),
		answer:   configMap(t, map[string]interface{}{"a": "1", "b": "2"}, [3]string{"helm", "Apply", a}, [3]string{decideManager, "Apply", ab}),
		previous: map[string][]string{"helm": {".data.a"}},
		shared:   map[string][]string{"helm": {".data.a"}},
	}, {
		name:   "an owner that let the field go after the read",
		read:   configMap(t, map[string]interface{}{"a": "1"}, [3]string{"helm", "Apply", a}),
		answer: configMap(t, map[string]interface{}{"a": "1", "b": "2"}, [3]string{decideManager, "Apply", ab}),
	}}
	byManager := func(l *ownershipcore.Ledger, shared bool) map[string][]string {
		out := map[string][]string{}
		for _, e := range l.Entries {
			f := e.Fields
			if shared {
				f = e.Shared
			}
			if !f.Empty() {
				out[e.Manager] = Leaves(f)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Decide(decideApplier(), Input{Spec: applySpec(t, "", map[string]interface{}{"a": "1", "b": "2"}), Status: &v1alpha1.FieldPatchStatus{}, Live: tt.read, Manager: decideManager})
			if err != nil {
				t.Fatal(err)
			}
			after, err := ownershipcore.Owners(tt.answer)
			if err != nil {
				t.Fatal(err)
			}
			d.Ledger = d.Applied(d.Ledger, after)
			if got := Leaves(d.Ledger.Recorded); !reflect.DeepEqual(got, []string{".data.a", ".data.b"}) {
				t.Errorf("recorded %v, want [.data.a .data.b]", got)
			}
			if got := byManager(d.Ledger, false); !reflect.DeepEqual(got, tt.previous) {
				t.Errorf("previous owners %v, want %v", got, tt.previous)
			}
			if got := byManager(d.Ledger, true); !reflect.DeepEqual(got, tt.shared) {
				t.Errorf("shared %v, want %v", got, tt.shared)
			}
		})
	}
}

func mustPath(t *testing.T, p string) fieldset.Path {
	t.Helper()
	path, err := ownershipcore.ParsePath(p)
	if err != nil {
		t.Fatal(err)
	}
	return path
}
