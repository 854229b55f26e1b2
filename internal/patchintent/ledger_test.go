/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchintent

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// legacyStatus is l in the form the release before addedFields wrote
// (its WriteLedger): every owner's fields in fieldsV1 and again as leaf
// paths, its shared fields in sharedFieldsV1, every recorded field in
// recordedFields.
func legacyStatus(t testing.TB, l *ownershipcore.Ledger, uid string) *v1alpha1.FieldPatchStatus {
	t.Helper()
	st := &v1alpha1.FieldPatchStatus{TargetUID: uid}
	for _, e := range l.Entries {
		f, err := ownershipcore.EncodeFields(e.Fields)
		if err != nil {
			t.Fatal(err)
		}
		var shared *metav1.FieldsV1
		if !e.Shared.Empty() {
			if shared, err = ownershipcore.EncodeFields(e.Shared); err != nil {
				t.Fatal(err)
			}
		}
		st.PreviousOwners = append(st.PreviousOwners, v1alpha1.PreviousOwner{
			Manager: e.Manager, Operation: e.Operation, APIVersion: e.APIVersion, Subresource: e.Subresource, Via: e.Via,
			FieldsV1: f, SharedFieldsV1: shared, Paths: ownershipcore.FormatSet(e.Fields),
		})
	}
	recorded, err := ownershipcore.EncodeFields(l.Recorded)
	if err != nil {
		t.Fatal(err)
	}
	st.RecordedFields = recorded
	return st
}

func paths(t testing.TB, ps ...string) *fieldset.Set {
	t.Helper()
	s, err := fieldset.ParseMembers(ps)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const (
	app   = `.spec.template.spec.containers[name="app"]`
	proxy = app + `.env[name="HTTP_PROXY"]`
)

// webLedger is the record of a patch of a Deployment that took the image
// from helm (sharing the container's name and an annotation with it),
// replicas from hpa, a port from helm through the patch a, and added an
// environment variable.
func webLedger(t testing.TB) *ownershipcore.Ledger {
	helm := ownershipcore.ManagerKey{Manager: "helm", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1"}
	hpa := ownershipcore.ManagerKey{Manager: "hpa", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Subresource: "scale"}
	a := ownershipcore.ManagerKey{Manager: "fieldops-fieldpatch/shop/a", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1"}
	port := app + `.ports[containerPort=53,protocol="UDP"].name`
	l := &ownershipcore.Ledger{Entries: []ownershipcore.LedgerEntry{
		{ManagerKey: helm, Fields: paths(t, ".metadata.annotations.team", app, app+".image", app+".name"), Shared: paths(t, ".metadata.annotations.team", app, app+".name")},
		{ManagerKey: hpa, Fields: paths(t, ".spec.replicas"), Shared: paths(t)},
		{ManagerKey: a, Fields: paths(t, port), Shared: paths(t)},
		{ManagerKey: helm, Via: a.Manager, Fields: paths(t, port), Shared: paths(t)},
	}}
	l.Recorded = l.Taken().Union(paths(t, proxy, proxy+".name", proxy+".value"))
	return l
}

// sameLedgers fails unless a and b hold the same entries, in order, and
// the same recorded fields.
func sameLedgers(t testing.TB, what string, got, want *ownershipcore.Ledger) {
	t.Helper()
	show := func(l *ownershipcore.Ledger) string {
		var b strings.Builder
		for _, e := range l.Entries {
			fmt.Fprintf(&b, "%+v via %q: %v shared %v\n", e.ManagerKey, e.Via, fieldset.FormatSet(e.Fields), fieldset.FormatSet(e.Shared))
		}
		fmt.Fprintf(&b, "recorded %v", fieldset.FormatSet(l.Recorded))
		return b.String()
	}
	same := len(got.Entries) == len(want.Entries) && got.Recorded.Equals(want.Recorded)
	for i := 0; same && i < len(got.Entries); i++ {
		g, w := got.Entries[i], want.Entries[i]
		same = g.ManagerKey == w.ManagerKey && g.Via == w.Via && g.Fields.Equals(w.Fields) && g.Shared.Equals(w.Shared)
	}
	if !same {
		t.Fatalf("%s:\n%s\nwant\n%s", what, show(got), show(want))
	}
}

// The record holds each field once, in path form: an owner's fields it no
// longer co-owns, its shared ones, and the recorded fields no owner holds.
func TestWriteLedgerForm(t *testing.T) {
	st := &v1alpha1.FieldPatchStatus{RecordedFields: metav1.NewFieldsV1(`{}`)}
	if err := WriteLedger(st, webLedger(t), "uid-1"); err != nil {
		t.Fatal(err)
	}
	got, err := yaml.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	want := `addedFields:
- .spec.template.spec.containers[name="app"].env[name="HTTP_PROXY"]
- .spec.template.spec.containers[name="app"].env[name="HTTP_PROXY"].name
- .spec.template.spec.containers[name="app"].env[name="HTTP_PROXY"].value
previousOwners:
- apiVersion: apps/v1
  fields:
  - .spec.template.spec.containers[name="app"].image
  manager: helm
  operation: Apply
  shared:
  - .metadata.annotations.team
  - .spec.template.spec.containers[name="app"]
  - .spec.template.spec.containers[name="app"].name
- apiVersion: apps/v1
  fields:
  - .spec.replicas
  manager: hpa
  operation: Update
  subresource: scale
- apiVersion: apps/v1
  fields:
  - .spec.template.spec.containers[name="app"].ports[containerPort=53,protocol="UDP"].name
  manager: fieldops-fieldpatch/shop/a
  operation: Apply
- apiVersion: apps/v1
  fields:
  - .spec.template.spec.containers[name="app"].ports[containerPort=53,protocol="UDP"].name
  manager: helm
  operation: Apply
  via: fieldops-fieldpatch/shop/a
targetUID: uid-1
`
	if string(got) != want {
		t.Fatalf("status:\n%s\nwant\n%s", got, want)
	}
}

// universe are paths a random ledger draws from: tricky ones included (a
// key that the path form cannot name, a map key with dots and quotes,
// set values, several keys).
var universe = []string{
	".spec.replicas", ".spec", app, app + ".image", app + ".name", proxy, proxy + ".name", proxy + ".value",
	`.metadata.annotations["example.com/a.b[c]\"d\""]`, `.metadata.finalizers[="example.com/x"]`, `.spec.args[2]`,
	`.spec.ports[port=53,protocol="UDP"].targetPort`, `{"f:items":{"k:{\"0x\":\"a\"}":{".":{},"f:v":{}}}}`,
}

// randomLedger is a ledger over universe that keeps the Ledger's
// invariants: each entry's Shared within its Fields, every entry's Fields
// within Recorded.
func randomLedger(t testing.TB, r *rand.Rand) *ownershipcore.Ledger {
	pick := func() *fieldset.Set {
		var ps []string
		for _, p := range universe {
			if r.Intn(3) == 0 {
				ps = append(ps, p)
			}
		}
		return paths(t, ps...)
	}
	l := &ownershipcore.Ledger{Recorded: pick()}
	managers := []string{"helm", "hpa", "kubectl-edit", "fieldops-fieldpatch/ns/a"}
	for i := range r.Intn(4) {
		fields := pick()
		if fields.Empty() {
			continue
		}
		e := ownershipcore.LedgerEntry{ManagerKey: ownershipcore.ManagerKey{Manager: managers[i], Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1"},
			Fields: fields, Shared: fields.Intersection(pick())}
		if r.Intn(4) == 0 {
			e.Via = managers[3]
		}
		l.Entries = append(l.Entries, e)
		l.Recorded = l.Recorded.Union(fields)
	}
	return l
}

// ReadLedger reads back what WriteLedger wrote, and reads a record in the
// earlier form (fieldsV1, sharedFieldsV1, paths, recordedFields) as the
// same ledger.
func TestLedgerRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(41))
	ledgers := []*ownershipcore.Ledger{webLedger(t), ownershipcore.NewLedger()}
	for range 300 {
		ledgers = append(ledgers, randomLedger(t, r))
	}
	for i, l := range ledgers {
		st := &v1alpha1.FieldPatchStatus{}
		if err := WriteLedger(st, l, "uid-1"); err != nil {
			t.Fatal(err)
		}
		back, err := ReadLedger(st, "uid-1")
		if err != nil {
			t.Fatal(err)
		}
		sameLedgers(t, fmt.Sprintf("ledger %d written and read", i), back, l)
		if st.RecordedFields != nil {
			t.Fatalf("ledger %d: recordedFields written", i)
		}
		for _, o := range st.PreviousOwners {
			if o.FieldsV1 != nil || o.SharedFieldsV1 != nil || o.Paths != nil {
				t.Fatalf("ledger %d: the earlier form written: %+v", i, o)
			}
		}
		old, err := ReadLedger(legacyStatus(t, l, "uid-1"), "uid-1")
		if err != nil {
			t.Fatal(err)
		}
		sameLedgers(t, fmt.Sprintf("ledger %d in the earlier form", i), old, l)
		if !SameRecorded(st, legacyStatus(t, l, "uid-1")) {
			t.Fatalf("ledger %d: SameRecorded is false for its two forms", i)
		}
	}
}

func TestCompactRecord(t *testing.T) {
	old := legacyStatus(t, webLedger(t), "").Record()
	if !old.Legacy() {
		t.Fatal("the earlier form is not Legacy")
	}
	c, err := CompactRecord(old)
	if err != nil {
		t.Fatal(err)
	}
	if c.Legacy() {
		t.Fatalf("CompactRecord left the earlier form: %+v", c)
	}
	var st v1alpha1.FieldPatchStatus
	st.SetRecord(c)
	back, err := ReadLedger(&st, "")
	if err != nil {
		t.Fatal(err)
	}
	sameLedgers(t, "the compacted record", back, webLedger(t))
	if again, err := CompactRecord(c); err != nil || !reflect.DeepEqual(again, c) {
		t.Fatalf("CompactRecord of the new form changed it: %+v, %v", again, err)
	}
	bad := v1alpha1.TargetLedger{RecordedFields: metav1.NewFieldsV1(`{"f:a":`)}
	if got, err := CompactRecord(bad); err == nil || !reflect.DeepEqual(got, bad) {
		t.Fatalf("CompactRecord of a record that does not parse: %+v, %v; want it as it is and an error", got, err)
	}
}

func TestSameRecorded(t *testing.T) {
	a := &v1alpha1.FieldPatchStatus{}
	if err := WriteLedger(a, webLedger(t), "uid-1"); err != nil {
		t.Fatal(err)
	}
	b := a.DeepCopy()
	b.PreviousOwners[0].Shared = nil // recorded alike, shared otherwise
	b.PreviousOwners[0].Fields = append(b.PreviousOwners[0].Fields, a.PreviousOwners[0].Shared...)
	if !SameRecorded(a, b) {
		t.Error("SameRecorded false for records of the same fields")
	}
	c := a.DeepCopy()
	c.AddedFields = nil
	d := a.DeepCopy()
	d.TargetUID = "uid-2"
	e := a.DeepCopy()
	e.AddedFields = []string{".spec["}
	for _, other := range []*v1alpha1.FieldPatchStatus{c, d, e} {
		if SameRecorded(a, other) {
			t.Errorf("SameRecorded true for %+v", other)
		}
	}
}

// recordBytes is the size of st's record of previous owners as JSON.
func recordBytes(t testing.TB, st *v1alpha1.FieldPatchStatus) int {
	t.Helper()
	rec := st.Record()
	return len(mustJSON(t, &rec))
}
