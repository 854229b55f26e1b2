/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package packed

import (
	"bytes"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

func testKind(dict []byte) *Kind[v1alpha1.FieldPatch, *v1alpha1.FieldPatch] {
	return &Kind[v1alpha1.FieldPatch, *v1alpha1.FieldPatch]{
		Codec:      NewCodec(dict),
		Conditions: func(p *v1alpha1.FieldPatch) *[]metav1.Condition { return &p.Status.Conditions },
		NewList:    func() client.ObjectList { return &v1alpha1.FieldPatchList{} },
	}
}

func fullPatch() *v1alpha1.FieldPatch {
	now := metav1.Now().Rfc3339Copy()
	del := metav1.NewTime(now.Add(1e9))
	fields := metav1.NewFieldsV1(`{"f:data":{"f:a":{}}}`)
	fp := &v1alpha1.FieldPatch{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "FieldPatch"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u-1", ResourceVersion: "42", Generation: 3,
			CreationTimestamp: now, DeletionTimestamp: &del, Finalizers: []string{"fieldops.dev/hand-back"},
			Labels: map[string]string{"l": "v"}, Annotations: map[string]string{"a": "b"}},
		Spec: v1alpha1.FieldPatchSpec{
			Target: v1alpha1.TargetReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm"},
			Patch:  runtime.RawExtension{Raw: []byte(`{"data":{"a":"1"}}`)},
		},
		Status: v1alpha1.FieldPatchStatus{
			ObservedGeneration: 3,
			Conditions: []metav1.Condition{
				{Type: "Ready", Status: metav1.ConditionFalse, ObservedGeneration: 3, LastTransitionTime: now, Reason: "Conflict", Message: "m"},
				{Type: "Stalled", Status: metav1.ConditionTrue, ObservedGeneration: 3, LastTransitionTime: now, Reason: "Conflict", Message: "m"},
			},
			FieldManager: "fieldops-fieldpatch/ns/p", TargetUID: "t-1", ManagedFields: []string{".data.a"}, FieldCount: 1,
			RecordedFields:  fields,
			PreviousOwners:  []v1alpha1.PreviousOwner{{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsV1: fields, Paths: []string{".data.a"}}},
			LastAppliedTime: &now,
		},
	}
	return fp
}

// An object unpacks to what was packed, through Unpack and through
// DeepCopyObject (what the informer cache's reads call), with or without
// a dictionary; packing leaves its input as it was.
func TestPackRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		dict []byte
		obj  *v1alpha1.FieldPatch
	}{
		{name: "full", obj: fullPatch()},
		{name: "full, dictionary", dict: []byte(`{"spec":{"target":{"apiVersion":"v1"}},"status":{"conditions":[]}}`), obj: fullPatch()},
		{name: "metadata only", obj: &v1alpha1.FieldPatch{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := testKind(tc.dict)
			in := tc.obj.DeepCopy()
			p, ok := k.Pack(in).(*Object[v1alpha1.FieldPatch, *v1alpha1.FieldPatch])
			if !ok {
				t.Fatalf("Pack returned %T", k.Pack(in))
			}
			if !equality.Semantic.DeepEqual(in, tc.obj) {
				t.Errorf("Pack changed its input: %+v", in)
			}
			for how, out := range map[string]runtime.Object{"Unpack": p.Unpack(), "DeepCopyObject": p.DeepCopyObject()} {
				if !equality.Semantic.DeepEqual(out, tc.obj) {
					t.Errorf("%s: %+v, want %+v", how, out, tc.obj)
				}
			}
			if got := p.Unpack(); len(got.Finalizers) > 0 && &got.Finalizers[0] == &p.Finalizers[0] {
				t.Error("Unpack shares the packed object's metadata")
			}
		})
	}
}

// The transform strips, then packs; an object already packed, and
// objects of other types, pass.
func TestTransform(t *testing.T) {
	k := testKind(nil)
	stripped := 0
	tf := k.Transform(func(in any) (any, error) {
		stripped++
		if o, ok := in.(client.Object); ok {
			o.SetManagedFields(nil)
		}
		return in, nil
	})
	fp := fullPatch()
	fp.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}}
	out, err := tf(fp)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := out.(*Object[v1alpha1.FieldPatch, *v1alpha1.FieldPatch])
	if !ok || p.ManagedFields != nil || stripped != 1 {
		t.Fatalf("transform: %T, managed fields %v, stripped %d times", out, p.ManagedFields, stripped)
	}
	if again, _ := tf(p); again != any(p) || stripped != 1 {
		t.Errorf("a packed object transformed again: %T, stripped %d times", again, stripped)
	}
	wl := &v1alpha1.ManagedWorkload{}
	if other, _ := tf(wl); other != any(wl) || stripped != 2 {
		t.Errorf("another kind: %T, stripped %d times; want it stripped, not packed", other, stripped)
	}
}

// A lent object has the metadata and the Ready and Stalled conditions'
// status and reason, and nothing else.
func TestLent(t *testing.T) {
	k := testKind(nil)
	fp := fullPatch()
	p := k.Pack(fp.DeepCopy()).(*Object[v1alpha1.FieldPatch, *v1alpha1.FieldPatch])
	l := p.lent()
	want := []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Conflict"}, {Type: "Stalled", Status: metav1.ConditionTrue}}
	if !equality.Semantic.DeepEqual(l.ObjectMeta, fp.ObjectMeta) || !equality.Semantic.DeepEqual(l.Status.Conditions, want) {
		t.Errorf("lent: %+v %+v", l.ObjectMeta, l.Status.Conditions)
	}
	if l.Spec.Patch.Raw != nil || l.Status.PreviousOwners != nil {
		t.Errorf("lent holds more than the summary: %+v", l)
	}
	bare := k.Pack(&v1alpha1.FieldPatch{ObjectMeta: metav1.ObjectMeta{Name: "p"}}).(*Object[v1alpha1.FieldPatch, *v1alpha1.FieldPatch])
	if c := bare.lent().Status.Conditions; c != nil {
		t.Errorf("lent without conditions: %+v", c)
	}
}

// The codec inflates what it deflated, with and without a dictionary, and
// refuses what it did not.
func TestCodec(t *testing.T) {
	raw := bytes.Repeat([]byte(`{"key":"value"},`), 50)
	for _, dict := range [][]byte{nil, []byte(`{"key":"value"}`)} {
		c := NewCodec(dict)
		z := c.Deflate(raw)
		for i := 0; i < 2; i++ { // the second read reuses a reader
			got, err := c.Inflate(z)
			if err != nil || !bytes.Equal(got, raw) {
				t.Fatalf("dictionary %q: inflate: %v, %d bytes; want %d", dict, err, len(got), len(raw))
			}
		}
		if _, err := c.Inflate([]byte("not deflate")); err == nil {
			t.Errorf("dictionary %q: inflating garbage gave no error", dict)
		}
	}
}
