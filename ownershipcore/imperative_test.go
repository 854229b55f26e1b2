/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"errors"
	"testing"

	"gomodules.xyz/jsonpatch/v2"

	"github.com/fieldops/fieldops/ownershipcore"
)

// The imperative writes of the legacy path: a create, then patches by the
// same manager recorded in its Update entry; a patch computed from a copy
// the object moved on from, or from an object since replaced, is refused
// with ErrStale and writes nothing.
func TestImperativeWritesAreGuarded(t *testing.T) {
	ctx := context.Background()
	a, _ := newApplier(t)
	created := obj(t, sprintf(configMap, "imperative", `{"a":"1"}`))
	if err := a.Create(ctx, created, "legacy"); err != nil {
		t.Fatal(err)
	}
	if got := owners(t, created)[".data.a"]; len(got) != 1 || got[0] != "legacy/Update" {
		t.Fatalf("owners of data.a after the create: %v, want [legacy/Update]", got)
	}
	set := func(v string) []jsonpatch.Operation {
		return []jsonpatch.Operation{{Operation: "replace", Path: "/data/a", Value: v}}
	}
	answer, err := a.Patch(ctx, created, set("2"), "legacy")
	if err != nil {
		t.Fatal(err)
	}
	if got := answer.Object["data"].(map[string]interface{})["a"]; got != "2" {
		t.Fatalf("data.a in the answer: %v, want 2", got)
	}
	// created is the copy before that patch: stale.
	if _, err := a.Patch(ctx, created, set("3"), "legacy"); !errors.Is(err, ownershipcore.ErrStale) {
		t.Fatalf("patch of a stale copy: %v, want ErrStale", err)
	}
	// Replaced under the same name, at whatever resourceVersion: the UID
	// differs.
	if err := a.Client.Delete(ctx, answer); err != nil {
		t.Fatal(err)
	}
	applyAs(t, a.Client, "other", sprintf(configMap, "imperative", `{"a":"other"}`))
	if _, err := a.Patch(ctx, answer, set("4"), "legacy"); !errors.Is(err, ownershipcore.ErrStale) {
		t.Fatalf("patch of a replaced object: %v, want ErrStale", err)
	}
	if got := get(t, a.Client, answer).Object["data"].(map[string]interface{})["a"]; got != "other" {
		t.Errorf("data.a of the new object: %v, want other (untouched)", got)
	}
}
