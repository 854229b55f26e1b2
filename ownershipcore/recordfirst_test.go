/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// countingStrategy forces every conflict and counts how often it is
// asked.
type countingStrategy struct{ asked atomic.Int64 }

func (s *countingStrategy) Resolve(ctx context.Context, obj *unstructured.Unstructured, manager string, cs []ownershipcore.Conflict) ([]ownershipcore.Resolution, error) {
	s.asked.Add(1)
	return ownershipcore.Static(ownershipcore.DecisionForce).Resolve(ctx, obj, manager, cs)
}

// The core never calls back into its caller before a forced write: an
// apply that would force fields outside ApplyOptions.Recorded sends
// nothing and answers with the apply as decided; once the caller has
// recorded those fields, that decision is sent as it is, and the conflict
// strategy is not asked again.
func TestApplyRecordFirst(t *testing.T) {
	ctx := context.Background()
	a, n := newApplier(t)
	const name = "record-first"
	applyAs(t, a.Client, "helm", sprintf(configMap, name, `{"tier":"web","keep":"1"}`))
	live := get(t, a.Client, obj(t, sprintf(configMap, name, `{}`)))
	intent := obj(t, sprintf(configMap, name, `{"tier":"db"}`))
	strategy := &countingStrategy{}
	opts := ownershipcore.ApplyOptions{FieldManager: "patch", Conflicts: strategy, UID: live.GetUID(), Live: live, Recorded: fieldset.NewSet()}

	writes := n.writes.Load()
	_, err := a.Apply(ctx, intent, opts)
	var first *ownershipcore.RecordFirstError
	if !errors.As(err, &first) {
		t.Fatalf("apply forcing an unrecorded field: %v, want a RecordFirstError", err)
	}
	if got := n.writes.Load() - writes; got != 0 {
		t.Errorf("%d write(s) sent before the record", got)
	}
	if len(first.Forced) != 1 || first.Forced[0].Manager != "helm" || ownershipcore.FormatPath(first.Forced[0].Path) != ".data.tier" {
		t.Fatalf("forced %+v, want .data.tier from helm", first.Forced)
	}
	if first.Object.GetResourceVersion() != live.GetResourceVersion() {
		t.Errorf("decided on resourceVersion %s, want the caller's %s", first.Object.GetResourceVersion(), live.GetResourceVersion())
	}

	opts.Recorded = fieldset.NewSet(first.Forced[0].Path)
	opts.Planned, opts.Live = first.Plan, first.Object
	res, err := a.Apply(ctx, intent, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ownershipcore.ActionConfigured || len(res.Forced) != 1 {
		t.Errorf("apply as planned: %s, forced %v", res.Action, res.Forced)
	}
	if got := strategy.asked.Load(); got != 1 {
		t.Errorf("the strategy was asked %d times, want once (before any write)", got)
	}
	after := get(t, a.Client, live)
	if o := owners(t, after); !reflect.DeepEqual(o[".data.tier"], []string{"patch/Apply"}) || !reflect.DeepEqual(o[".data.keep"], []string{"helm/Apply"}) {
		t.Errorf("owners after the forced apply: %v", o)
	}

	// A plan decided on a version the object has left is decided anew.
	applyAs(t, a.Client, "helm", sprintf(configMap, name, `{"tier":"web","keep":"2"}`))
	opts.Live = get(t, a.Client, live)
	if _, err := a.Apply(ctx, intent, opts); err != nil {
		t.Fatal(err)
	}
	if got := strategy.asked.Load(); got != 2 {
		t.Errorf("the strategy was asked %d times, want twice (a stale plan is decided again)", got)
	}

	// A dry run and an apply without the gate force as the strategy says.
	applyAs(t, a.Client, "helm", sprintf(configMap, name, `{"tier":"web","keep":"2"}`))
	if _, err := a.Apply(ctx, intent, ownershipcore.ApplyOptions{FieldManager: "patch", Conflicts: strategy, Recorded: fieldset.NewSet(), DryRun: true}); err != nil {
		t.Errorf("dry run: %v", err)
	}
	if _, err := a.Apply(ctx, intent, ownershipcore.ApplyOptions{FieldManager: "patch", Conflicts: strategy}); err != nil {
		t.Errorf("apply without Recorded: %v", err)
	}
}
