/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/modelfuzz"
)

func widget(t *testing.T, spec map[string]interface{}) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]interface{}{"spec": spec}}
	u.SetGroupVersionKind(modelfuzz.WidgetGVK)
	u.SetNamespace("default")
	u.SetName("w")
	return u
}

// Compare and CompareOwn over answers built with the model itself: what a
// write of fp's does (its entry, the values of its fields) is compared by
// both; what another writer did between the read and the write is a
// difference for Compare only; fields nobody owns that the answer holds
// besides are the apiserver's defaulting for both; numbers compare as JSON
// numbers.
func TestCompareAnswers(t *testing.T) {
	schema, err := modelfuzz.Schema()
	if err != nil {
		t.Fatal(err)
	}
	m := ownershipcore.Model{Schema: schema}
	must := func(s ownershipcore.State, err error) ownershipcore.State {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	empty := ownershipcore.State{Object: widget(t, map[string]interface{}{}), SamePaths: true}
	base := must(m.Apply(empty, widget(t, map[string]interface{}{"size": int64(1), "atomicMap": map[string]interface{}{"a": "1"}}), "other", false))
	// A value nobody owns (the apiserver's registry strategy set it).
	base.Object = base.Object.DeepCopy()
	if err := unstructured.SetNestedField(base.Object.Object, "1", "spec", "nested", "inner", "strategy"); err != nil {
		t.Fatal(err)
	}
	base = must(m.Apply(base, widget(t, map[string]interface{}{"labels": map[string]interface{}{"a": "x", "b": "x"}}), "fp", false))
	intent := widget(t, map[string]interface{}{"labels": map[string]interface{}{"a": "y"}})
	predicted := must(m.Apply(base, intent, "fp", false))

	defaulted := predicted
	defaulted.Object = predicted.Object.DeepCopy()
	if err := unstructured.SetNestedField(defaulted.Object.Object, "d", "spec", "nested", "inner", "k"); err != nil {
		t.Fatal(err)
	}
	atomic := predicted
	atomic.Object = predicted.Object.DeepCopy()
	if err := unstructured.SetNestedField(atomic.Object.Object, "2", "spec", "atomicMap", "b"); err != nil {
		t.Fatal(err)
	}
	strategy := predicted
	strategy.Object = predicted.Object.DeepCopy()
	if err := unstructured.SetNestedField(strategy.Object.Object, "2", "spec", "nested", "inner", "strategy"); err != nil {
		t.Fatal(err)
	}
	floats := predicted
	floats.Object = predicted.Object.DeepCopy()
	floats.Object.Object["spec"].(map[string]interface{})["size"] = float64(1)

	for _, tc := range []struct {
		name         string
		answer       ownershipcore.State
		all, own     string // "" or a part of the difference
		allOK, ownOK bool
	}{
		{name: "as predicted", answer: predicted, allOK: true, ownOK: true},
		{name: "defaulted field nobody owns", answer: defaulted, allOK: true, ownOK: true},
		{name: "a float for an integer", answer: floats, allOK: true, ownOK: true},
		{name: "defaulting adds to an atomic map", answer: atomic, allOK: true, ownOK: true},
		{name: "the apiserver changes a value nobody owns", answer: strategy, allOK: true, ownOK: true},
		{name: "another owner's value changed in between",
			answer: must(m.Apply(predicted, widget(t, map[string]interface{}{"size": int64(2), "atomicMap": map[string]interface{}{"a": "1"}}), "other", false)),
			all:    "content differs at .spec.size", ownOK: true},
		{name: "a third manager wrote in between",
			answer: must(m.Apply(predicted, widget(t, map[string]interface{}{"labels": map[string]interface{}{"c": "q"}}), "third", false)),
			all:    `unplanned entry "third"`, ownOK: true},
		{name: "fp's field taken with another value",
			answer: must(m.Update(predicted, widget(t, map[string]interface{}{"size": int64(1), "labels": map[string]interface{}{"a": "z"}}), "hpa")),
			all:    `missing entry "fp"`, own: `content differs at .spec.labels.a`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := m.Compare(base, predicted, tc.answer)
			own := m.CompareOwn(base, predicted, tc.answer, "fp")
			if (all == "") != tc.allOK || (tc.all != "" && !strings.Contains(all, tc.all)) {
				t.Errorf("Compare = %q, want %q (empty: %v)", all, tc.all, tc.allOK)
			}
			if (own == "") != tc.ownOK || (tc.own != "" && !strings.Contains(own, tc.own)) {
				t.Errorf("CompareOwn = %q, want %q (empty: %v)", own, tc.own, tc.ownOK)
			}
		})
	}
}

// An update by a manager whose Update entry is of another version (a
// custom resource converted with strategy None) makes an entry of the
// request's version, which takes the fields the update changes from the
// other one, as the apiserver keys Update entries by apiVersion too
// (test/invariants, corpus seed 9100650: "ops" updated in v1 with an entry
// of v2).
func TestUpdateByAManagerWithAnEntryOfAnotherVersion(t *testing.T) {
	schema, err := modelfuzz.Schema()
	if err != nil {
		t.Fatal(err)
	}
	m := ownershipcore.Model{Schema: schema}
	fields, err := ownershipcore.ParsePathSet([]string{".spec.size", ".spec.labels.a"})
	if err != nil {
		t.Fatal(err)
	}
	v2 := ownershipcore.ManagerKey{Manager: "ops", Operation: "Update", APIVersion: "example.dev/v2"}
	before := ownershipcore.State{Object: widget(t, map[string]interface{}{"size": int64(1), "labels": map[string]interface{}{"a": "x"}}),
		Owners: ownershipcore.ManagedFields{{ManagerKey: v2, Fields: fields}}, SamePaths: true}
	after, err := m.Update(before, widget(t, map[string]interface{}{"size": int64(2), "labels": map[string]interface{}{"a": "x"}}), "ops")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, e := range after.Owners {
		got[e.ManagerKey.String()] = ownershipcore.FormatSet(e.Fields)
	}
	want := map[string][]string{
		`"ops" (Update example.dev/v1)`: {".spec.size"},
		`"ops" (Update example.dev/v2)`: {".spec.labels.a"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("entries = %v, want %v", got, want)
	}
}
