/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package invariants

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/ownershipcore"
)

// These tests need no control plane.

func TestPathsSetLookupRemove(t *testing.T) {
	var obj interface{} = map[string]interface{}{}
	for _, f := range widget.Base {
		obj = setPath(obj, mustPath(f.Path), f.Value)
	}
	for _, s := range widget.Slots {
		obj = setPath(obj, mustPath(s.Path), s.Values[0])
	}
	for _, s := range append(widget.Slots, Slot{Path: `.spec.items[name="base"].value`, Values: str("0")}) {
		v, ok := lookup(obj, mustPath(s.Path))
		if !ok || !reflect.DeepEqual(v, s.Values[0]) && !isSetValue(mustPath(s.Path)) {
			t.Errorf("%s: got %v %v, want %v", s.Path, v, ok, s.Values[0])
		}
	}
	obj = removePath(obj, mustPath(`.spec.items[name="x"].tags[="t"]`))
	obj = removePath(obj, mustPath(`.spec.ports[port=80,protocol="TCP"]`))
	for _, gone := range []string{`.spec.items[name="x"].tags[="t"]`, `.spec.ports[port=80,protocol="TCP"].target`} {
		if _, ok := lookup(obj, mustPath(gone)); ok {
			t.Errorf("%s still there", gone)
		}
	}
	if v, ok := lookup(obj, mustPath(`.spec.ports[port=80,protocol="UDP"].target`)); !ok || v != "dns" {
		t.Errorf("the other port went too: %v", v)
	}
	if pointer(mustPath(".spec.granularMap.k1")) != "/spec/granularMap/k1" || pointer(mustPath(`.spec.items[name="x"].value`)) != "" {
		t.Error("pointer")
	}
}

func TestGenerateIsDeterministicAndValid(t *testing.T) {
	for s := int64(0); s < 200; s++ {
		a, b := Generate(s, 7), Generate(s, 7)
		if a.String() != b.String() {
			t.Fatalf("seed %d: two sequences:\n%s\n%s", s, a, b)
		}
		if got := Normalize(a.Steps); len(got) != len(a.Steps) {
			t.Fatalf("seed %d: Normalize dropped steps of a generated sequence:\n%s", s, a)
		}
		if a.Steps[0].Op != OpCreate {
			t.Fatalf("seed %d: does not start with the target's creation", s)
		}
		for _, st := range a.Steps {
			if st.Op == OpPatchCreate && st.Type == v1alpha1.PatchTypeStrategicMerge && !a.Kind.Builtin {
				t.Fatalf("seed %d: strategic merge on %s", s, a.Kind.Name)
			}
		}
	}
}

func TestNormalizeDropsDependents(t *testing.T) {
	steps := []Step{
		{Op: OpCreate, Who: "base"},
		{Op: OpPatchCreate, Who: "fp-1"},
		{Op: OpPatchEdit, Who: "fp-1"},
		{Op: OpPatchDelete, Who: "fp-1"},
		{Op: OpWorkloadDelete, Who: "mw-a"},
	}
	got := Normalize(append(steps[:1:1], steps[2:]...))
	if len(got) != 1 {
		t.Errorf("kept %v", got)
	}
}

// snap builds a snapshot from an object and managed fields given as
// manager → paths.
func snap(t *testing.T, obj string, owners map[owner][]string) *snapshot {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(obj), &u.Object); err != nil {
		t.Fatal(err)
	}
	var mf []metav1.ManagedFieldsEntry
	for o, paths := range owners {
		set, err := ownershipcore.ParsePathSet(paths)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ownershipcore.EncodeFields(set)
		if err != nil {
			t.Fatal(err)
		}
		mf = append(mf, metav1.ManagedFieldsEntry{Manager: o.Manager, Operation: o.Operation, FieldsType: "FieldsV1", FieldsV1: f})
	}
	u.SetManagedFields(mf)
	s, err := newSnapshot(u)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The model finds the Relinquish data loss of issue 15 (defect 1) and a
// hand-back to a manager that had removed the field (defect 4: (5); (4)
// does not apply since that manager owns the field again).
func TestModelFindsReleaseDefects(t *testing.T) {
	hpa := owner{"hpa", metav1.ManagedFieldsOperationApply}
	ops := owner{"ops", metav1.ManagedFieldsOperationUpdate}
	fp := owner{"fieldops-fieldpatch/ns/fp-1", metav1.ManagedFieldsOperationApply}

	m := newModel(configMap)
	pm := &patchModel{name: "fp-1", manager: fp.Manager, conflict: v1alpha1.ConflictPolicyForce, deletion: v1alpha1.DeletionPolicyRelinquish, records: map[string]*record{}}
	m.patches[pm.name] = pm
	before := snap(t, `{"data":{"a":"1"}}`, map[owner][]string{hpa: {".data.a"}})
	taken := snap(t, `{"data":{"a":"9","x":"1"}}`, map[owner][]string{fp: {".data.a", ".data.x"}})
	if vs := m.checkLosses(before, nil, taken); len(vs) != 0 {
		t.Errorf("a Force patch may take fields: %v", vs)
	}
	m.observe("", before, nil, taken)
	relinquished := snap(t, `{"data":{}}`, nil)
	vs := m.checkRelease(pm, taken, relinquished, true)
	if len(vs) != 1 || vs[0].Invariant != 3 || !strings.Contains(vs[0].Message, ".data.a") {
		t.Errorf("want (3) for .data.a, got %v", vs)
	}

	// ops owned .data.mode, the patch took it, ops removed it, the patch
	// put it back, and deletion handed it back to ops.
	m = newModel(configMap)
	pm = &patchModel{name: "fp-1", manager: fp.Manager, conflict: v1alpha1.ConflictPolicyForce, deletion: v1alpha1.DeletionPolicyHandBack, records: map[string]*record{}}
	m.patches[pm.name] = pm
	s0 := snap(t, `{"data":{"mode":"a"}}`, map[owner][]string{ops: {".data.mode"}})
	s1 := snap(t, `{"data":{"mode":"b"}}`, map[owner][]string{fp: {".data.mode"}})
	m.observe("", s0, nil, s1)
	removed := snap(t, `{"data":{}}`, nil)
	s2 := snap(t, `{"data":{"mode":"b"}}`, map[owner][]string{fp: {".data.mode"}})
	m.observe("ops", s1, removed, s2)
	handedBack := snap(t, `{"data":{"mode":"b"}}`, map[owner][]string{ops: {".data.mode"}})
	vs = m.checkRelease(pm, s2, handedBack, true)
	if len(vs) != 1 || vs[0].Invariant != 5 {
		t.Errorf("want (5), got %v", vs)
	}
}

// A manager that loses a field to a patch without Force is invariant (1).
func TestModelFindsLoss(t *testing.T) {
	helm := owner{"helm", metav1.ManagedFieldsOperationApply}
	fp := owner{"fieldops-fieldpatch/ns/fp-1", metav1.ManagedFieldsOperationApply}
	m := newModel(configMap)
	m.patches["fp-1"] = &patchModel{name: "fp-1", manager: fp.Manager, conflict: v1alpha1.ConflictPolicyYield, records: map[string]*record{}}
	before := snap(t, `{"data":{"a":"1"}}`, map[owner][]string{helm: {".data.a"}})
	after := snap(t, `{"data":{"a":"2"}}`, map[owner][]string{fp: {".data.a"}})
	if vs := m.checkLosses(before, nil, after); len(vs) != 1 || vs[0].Invariant != 1 {
		t.Errorf("want (1), got %v", vs)
	}
}

// GenerateWith's options change only deletion policies and how patches
// end, from streams of their own: a seed's steps otherwise stay
// Generate's, so that the corpus replays what it found. Expire ends about
// half of the patches.
func TestGenerateOptionsKeepSteps(t *testing.T) {
	expired, deleted := 0, 0
	for seed := int64(1); seed <= 200; seed++ {
		plain := Generate(seed, 12)
		with := GenerateWith(seed, 12, Options{Restore: true, Expire: true, Selector: true})
		if len(plain.Steps) != len(with.Steps) {
			t.Fatalf("seed %d: %d steps, %d with options", seed, len(plain.Steps), len(with.Steps))
		}
		for i, s := range with.Steps {
			if s.Expire {
				expired++
			} else if s.Op == OpPatchDelete {
				deleted++
			}
			p := plain.Steps[i]
			if s.Deletion == v1alpha1.DeletionPolicyRestore && p.Deletion == v1alpha1.DeletionPolicyHandBack {
				s.Deletion = p.Deletion
			}
			s.Expire, s.Selector = false, false
			if !reflect.DeepEqual(s, p) {
				t.Fatalf("seed %d step %d: %s, without options %s", seed, i+1, s, p)
			}
		}
	}
	if expired == 0 || deleted == 0 || expired > 2*deleted || deleted > 2*expired {
		t.Errorf("%d patches expired, %d deleted: want about half each", expired, deleted)
	}
}

// A field the patch added stays added through a contest: helm took it
// with a value of its own and the patch took it back; at the deletion it
// must leave (4), unless a lost status write (faults) may have lost the
// record that it was added (seed 98's field, as the checker now follows
// it).
func TestModelAddedFieldThroughContest(t *testing.T) {
	helm := owner{"helm", metav1.ManagedFieldsOperationApply}
	fp := owner{"fieldops-fieldpatch/ns/fp-1", metav1.ManagedFieldsOperationApply}
	for _, faults := range []bool{false, true} {
		m := newModel(configMap)
		m.faults = faults
		pm := &patchModel{name: "fp-1", manager: fp.Manager, conflict: v1alpha1.ConflictPolicyForce, deletion: v1alpha1.DeletionPolicyRelinquish, records: map[string]*record{}}
		m.patches[pm.name] = pm
		s0 := snap(t, `{"data":{}}`, nil)
		added := snap(t, `{"data":{"x":"web"}}`, map[owner][]string{fp: {".data.x"}})
		m.observe("", s0, nil, added)
		taken := snap(t, `{"data":{"x":"db"}}`, map[owner][]string{helm: {".data.x"}})
		repaired := snap(t, `{"data":{"x":"web"}}`, map[owner][]string{fp: {".data.x"}})
		m.observe("helm", added, taken, repaired)
		kept := snap(t, `{"data":{"x":"web"}}`, nil)
		vs := m.checkRelease(pm, repaired, kept, true)
		switch {
		case !faults && (len(vs) != 1 || vs[0].Invariant != 4):
			t.Errorf("want (4) for .data.x left in place, got %v", vs)
		case faults && len(vs) != 0:
			t.Errorf("under faults, want no violation, got %v", vs)
		}
	}
}
