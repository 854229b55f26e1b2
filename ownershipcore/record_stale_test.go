/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/names"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// A patch's first apply decided on a copy of the target older than the
// apiserver's (a watch cache): helm applied the same value in between, so
// the apply took the field without force and shares it with helm. helm is
// the field's previous owner: when helm later forces a value of its own
// and the patch takes the field back by force, the patch's deletion with
// Relinquish leaves the value, owned by nobody. Recorded with the owners
// of the copy the apply was decided on (nobody), the field counted as
// added by the patch and the deletion removed it (test/invariants seed
// 98: a selector patch's first apply, decided on the target as its watch
// listed it, landed after helm's apply).
func TestTakeDecidedOnStaleCopyRecordsOwnerFromAnswer(t *testing.T) {
	ctx := context.Background()
	a, _ := newApplier(t)
	manager := names.FieldPatch(false, "default", "stale")
	cm := func(data string) *unstructured.Unstructured { return obj(t, sprintf(configMap, "stale-read", data)) }
	applyAs(t, a.Client, "base", sprintf(configMap, "stale-read", `{"base":"0"}`))
	target := cm(`{}`)
	raw, err := json.Marshal(map[string]interface{}{"data": map[string]interface{}{"tier": "web"}})
	if err != nil {
		t.Fatal(err)
	}
	spec := &v1alpha1.FieldPatchSpec{
		Target:         v1alpha1.TargetReference{APIVersion: "v1", Kind: "ConfigMap", Name: "stale-read"},
		Patch:          runtime.RawExtension{Raw: raw},
		DeletionPolicy: v1alpha1.DeletionPolicyRelinquish,
	}
	status := &v1alpha1.FieldPatchStatus{}
	// apply is one reconcile of the patch, decided on live.
	apply := func(live *unstructured.Unstructured) ownershipcore.Result {
		t.Helper()
		d, err := patchintent.Decide(a, patchintent.Input{Spec: spec, Status: status, Live: live, Manager: manager})
		if err != nil {
			t.Fatal(err)
		}
		opts := ownershipcore.ApplyOptions{FieldManager: manager, Live: live, UID: live.GetUID(), Conflicts: ownershipcore.Static(ownershipcore.DecisionForce), Recorded: fieldset.NewSet()}
		res, err := a.Apply(ctx, d.Intent, opts)
		var first *ownershipcore.RecordFirstError
		if errors.As(err, &first) {
			// The record first, then the apply as decided.
			forced := patchintent.ForcedFields(first.Forced)
			patchintent.RecordForced(d.Ledger, d.Owners, forced, manager)
			opts.Recorded, opts.Planned, opts.Live = forced, first.Plan, first.Object
			res, err = a.Apply(ctx, d.Intent, opts)
		}
		if err != nil {
			t.Fatal(err)
		}
		after, err := ownershipcore.Owners(res.Object)
		if err != nil {
			t.Fatal(err)
		}
		d.Ledger = d.Applied(d.Ledger, after)
		if err := patchintent.WriteLedger(status, d.Ledger, string(live.GetUID())); err != nil {
			t.Fatal(err)
		}
		return res
	}

	stale := get(t, a.Client, target) // no data.tier yet
	applyAs(t, a.Client, "helm", sprintf(configMap, "stale-read", `{"tier":"web"}`))
	res := apply(stale)
	o := owners(t, res.Object)[".data.tier"]
	sort.Strings(o)
	if want := []string{manager + "/Apply", "helm/Apply"}; !reflect.DeepEqual(o, want) {
		t.Fatalf("data.tier owned by %v after the first apply, want helm and the patch (shared)", o)
	}
	if got := status.PreviousOwners; len(got) != 1 || got[0].Manager != "helm" || !reflect.DeepEqual(append(got[0].Fields, got[0].Shared...), []string{".data.tier"}) {
		t.Fatalf("previous owners %+v after the first apply, want helm's .data.tier", got)
	}

	// helm sets a value of its own; the patch takes the field back.
	applyAs(t, a.Client, "helm", sprintf(configMap, "stale-read", `{"tier":"db"}`))
	if res = apply(get(t, a.Client, target)); len(res.Forced) != 1 {
		t.Fatalf("the repair forced %v, want data.tier from helm", res.Forced)
	}

	// Deletion with Relinquish.
	live := get(t, a.Client, target)
	mf, err := ownershipcore.Owners(live)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := patchintent.ReadLedger(status, string(live.GetUID()))
	if err != nil {
		t.Fatal(err)
	}
	present, err := a.FieldSet(live)
	if err != nil {
		t.Fatal(err)
	}
	ledger.Follow(mf, present, manager)
	g := patchintent.DeletionLetGo(v1alpha1.DeletionPolicyRelinquish, ledger, mf, mf.Applied(manager).Fields, manager)
	if _, _, err := a.LetGo(ctx, target, live, manager, g); err != nil {
		t.Fatal(err)
	}
	after := get(t, a.Client, target)
	data, _, _ := unstructured.NestedStringMap(after.Object, "data")
	if want := map[string]string{"base": "0", "tier": "web"}; !reflect.DeepEqual(data, want) {
		t.Errorf("data after the deletion = %v, want %v (data.tier was helm's before the patch took it)", data, want)
	}
	if o := owners(t, after); !reflect.DeepEqual(o, map[string][]string{".data.base": {"base/Apply"}}) {
		t.Errorf("owners after the deletion %v, want base's data.base only", o)
	}
}
