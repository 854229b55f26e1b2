/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchplan

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/fieldops/fieldops/internal/conflicts"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

const manager = "fieldops-fieldpatch/ns/p"

// applier decides on the model alone (a static schema: no apiserver).
func applier() *ownershipcore.Applier {
	return &ownershipcore.Applier{Schema: ownershipcore.NewStaticSchema(map[schema.GroupVersion]managedfields.TypeConverter{
		{Version: "v1"}: applyconfigurations.NewTypeConverter(clientgoscheme.Scheme),
	})}
}

// configMap is the target with data and managed fields as (manager,
// FieldsV1 JSON) pairs, all Apply entries of v1.
func configMap(data map[string]interface{}, entries ...[2]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "data": data}}
	u.SetName("cm")
	u.SetNamespace("ns")
	u.SetUID("uid-1")
	u.SetResourceVersion("7")
	var mf []metav1.ManagedFieldsEntry
	for _, e := range entries {
		mf = append(mf, metav1.ManagedFieldsEntry{Manager: e[0], Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(e[1])})
	}
	u.SetManagedFields(mf)
	return u
}

// input is the plan input of a patch setting data on live.
func input(t *testing.T, live *unstructured.Unstructured, st *v1alpha1.FieldPatchStatus, conflict v1alpha1.ConflictPolicy, deletion v1alpha1.DeletionPolicy, data map[string]interface{}) Input {
	t.Helper()
	raw, err := json.Marshal(map[string]interface{}{"data": data})
	if err != nil {
		t.Fatal(err)
	}
	strategy, ok := conflicts.Policy(conflict)
	if !ok {
		t.Fatalf("conflict policy %q", conflict)
	}
	if st == nil {
		st = &v1alpha1.FieldPatchStatus{}
	}
	return Input{Input: patchintent.Input{
		Spec: &v1alpha1.FieldPatchSpec{Target: v1alpha1.TargetReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm"}, Patch: runtime.RawExtension{Raw: raw},
			ConflictPolicy: conflict, DeletionPolicy: deletion},
		Status: st, Live: live, Manager: manager,
	}, Strategy: strategy}
}

// takenFrom is a status whose record says the patch took fields (leaf
// paths) from helm.
func takenFrom(t *testing.T, live *unstructured.Unstructured, fields ...string) *v1alpha1.FieldPatchStatus {
	t.Helper()
	set, err := ownershipcore.ParsePathSet(fields)
	if err != nil {
		t.Fatal(err)
	}
	before := configMap(map[string]interface{}{}, [2]string{"helm", `{"f:data":{"f:b":{}}}`})
	owners, err := ownershipcore.Owners(before)
	if err != nil {
		t.Fatal(err)
	}
	l := ownershipcore.NewLedger()
	l.Record(owners, set, manager)
	l.Unshare(set)
	st := &v1alpha1.FieldPatchStatus{}
	if err := patchintent.WriteLedger(st, l, string(live.GetUID())); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestPlanWrites: the writes a plan lists, in order, for each kind of
// reconcile.
func TestPlanWrites(t *testing.T) {
	helmOwnsA := configMap(map[string]interface{}{"a": "1"}, [2]string{"helm", `{"f:data":{"f:a":{}}}`})
	oursAB := configMap(map[string]interface{}{"a": "1", "b": "2"}, [2]string{manager, `{"f:data":{"f:a":{},"f:b":{}}}`})
	tests := []struct {
		name     string
		in       func(t *testing.T) Input
		writes   []Write
		forced   []string
		refusal  bool
		recorded []string
		ready    string
	}{{
		name: "a field nobody owns: the apply alone",
		in: func(t *testing.T) Input {
			return input(t, configMap(nil), nil, "", "", map[string]interface{}{"a": "1"})
		},
		writes: []Write{WriteApply}, ready: "Applied",
	}, {
		name: "a field of another manager, Force: its owner recorded first",
		in: func(t *testing.T) Input {
			return input(t, helmOwnsA, nil, v1alpha1.ConflictPolicyForce, "", map[string]interface{}{"a": "2"})
		},
		writes: []Write{WriteRecord, WriteApply}, forced: []string{".data.a"}, recorded: []string{".data.a"},
	}, {
		name: "Restore keeps the forced field's value too",
		in: func(t *testing.T) Input {
			return input(t, helmOwnsA, nil, v1alpha1.ConflictPolicyForce, v1alpha1.DeletionPolicyRestore, map[string]interface{}{"a": "2"})
		},
		writes: []Write{WriteRecord, WritePreviousValues, WriteApply}, forced: []string{".data.a"}, recorded: []string{".data.a"},
	}, {
		name: "Fail: refused, nothing written",
		in: func(t *testing.T) Input {
			return input(t, helmOwnsA, nil, v1alpha1.ConflictPolicyFail, "", map[string]interface{}{"a": "2"})
		},
		refusal: true, ready: "Conflict",
	}, {
		name: "Yield: the apply without the field changes nothing",
		in: func(t *testing.T) Input {
			return input(t, helmOwnsA, nil, v1alpha1.ConflictPolicyYield, "", map[string]interface{}{"a": "2"})
		},
	}, {
		name: "applied already: nothing to write",
		in: func(t *testing.T) Input {
			return input(t, oursAB, nil, "", "", map[string]interface{}{"a": "1", "b": "2"})
		},
	}, {
		name: "a field taken that left the patch: given back before the apply",
		in: func(t *testing.T) Input {
			return input(t, oursAB, takenFrom(t, oursAB, ".data.b"), "", "", map[string]interface{}{"a": "1"})
		},
		// The record keeps .data.b until the give-back is written.
		writes: []Write{WriteGiveBack, WriteApply}, recorded: []string{".data.b"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mk(t, tt.in(t))
			if got := p.Writes(); !reflect.DeepEqual(got, tt.writes) {
				t.Errorf("writes %v, want %v", got, tt.writes)
			}
			if got := leaves(patchintent.ForcedFields(p.Forced())); !reflect.DeepEqual(got, tt.forced) {
				t.Errorf("forced %v, want %v", got, tt.forced)
			}
			if (p.Refusal != nil) != tt.refusal {
				t.Errorf("refusal %v, want one: %v", p.Refusal, tt.refusal)
			}
			out, err := Execute(context.Background(), p, &recorder{})
			if got := Expect(p, out, errors.Unwrap(err)).ReadyReason; tt.ready != "" && got != tt.ready {
				t.Errorf("expected Ready reason %s, want %s", got, tt.ready)
			}
			if got := leaves(p.Record.Recorded); !reflect.DeepEqual(got, tt.recorded) {
				t.Errorf("record before the apply holds %v, want %v", got, tt.recorded)
			}
		})
	}
}

// decide is the decision of in.
func decide(t *testing.T, in Input) *patchintent.Decision {
	t.Helper()
	d, err := patchintent.Decide(applier(), in.Input)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// mk makes the plan of in, which holds everything it depends on.
func mk(t *testing.T, in Input) *Plan {
	t.Helper()
	d := decide(t, in)
	in.RecordsRead, in.PreviousValuesRead = d.IntentSet, true
	p, err := Make(context.Background(), applier(), d, in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Lacks() {
		t.Fatal("the plan lacks what its input holds")
	}
	return p
}

func leaves(s *fieldset.Set) []string {
	if s == nil || s.Empty() {
		return nil
	}
	return patchintent.Leaves(s)
}

// TestMakeInheritsAndIsPure: fields forced from another FieldPatch are
// recorded with the owners that patch's record names (through it), from
// the records in the input; the same input makes the same plan, and the
// input is left as it was.
func TestMakeInheritsAndIsPure(t *testing.T) {
	const other = "fieldops-fieldpatch/ns/other"
	live := configMap(map[string]interface{}{"a": "1"}, [2]string{other, `{"f:data":{"f:a":{}}}`})
	helm := configMap(map[string]interface{}{"a": "0"}, [2]string{"helm", `{"f:data":{"f:a":{}}}`})
	owners, err := ownershipcore.Owners(helm)
	if err != nil {
		t.Fatal(err)
	}
	theirs := ownershipcore.NewLedger()
	theirs.Record(owners, mustSet(t, ".data.a"), other)
	in := input(t, live, nil, v1alpha1.ConflictPolicyForce, "", map[string]interface{}{"a": "2"})
	in.Records = []patchintent.Inherited{{Manager: other, Ledger: theirs}}
	before := recordOf(t, theirs)
	var plans []*Plan
	for range 2 {
		plans = append(plans, mk(t, in))
	}
	got := map[string]string{}
	for _, e := range plans[0].Record.Entries {
		got[e.Manager] = e.Via
	}
	if want := map[string]string{other: "", "helm": other}; !reflect.DeepEqual(got, want) {
		t.Errorf("recorded owners (manager: via) %v, want %v", got, want)
	}
	if !reflect.DeepEqual(plans[0].Writes(), plans[1].Writes()) || !reflect.DeepEqual(recordOf(t, plans[0].Record), recordOf(t, plans[1].Record)) {
		t.Error("the same input made two plans")
	}
	if !reflect.DeepEqual(recordOf(t, theirs), before) {
		t.Error("Make changed the inherited record")
	}
}

func mustSet(t *testing.T, paths ...string) *fieldset.Set {
	t.Helper()
	s, err := ownershipcore.ParsePathSet(paths)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
