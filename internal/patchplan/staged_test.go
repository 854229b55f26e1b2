/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchplan

import (
	"context"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
	"github.com/fieldops/fieldops/ownershipcore/strategy"
)

// counting is a conflict strategy that forces every conflict and counts
// how many times it is asked (a plugin's round trips).
type counting struct{ asked int }

func (c *counting) Resolve(_ context.Context, _ *unstructured.Unstructured, _ string, cs []ownershipcore.Conflict) ([]ownershipcore.Resolution, error) {
	c.asked++
	out := make([]ownershipcore.Resolution, len(cs))
	for i := range out {
		out[i] = ownershipcore.Resolution{Decision: strategy.DecisionForce}
	}
	return out, nil
}

// modelWriter answers as the controller's core would, on the model alone:
// the give-back as Model.LetGo computes it, the apply as a ModelOnly dry
// run (the same decision path applyOnce takes: a staged plan does not
// fit, so it is decided again).
type modelWriter struct {
	a       *ownershipcore.Applier
	manager string
	live    *unstructured.Unstructured
	record  *ownershipcore.Ledger
}

func (w *modelWriter) SaveRecord(_ context.Context, _ ownershipcore.ManagedFields, _ *fieldset.Set, change func(*ownershipcore.Ledger) bool) (*ownershipcore.Ledger, bool, error) {
	l := w.record.Copy()
	return l, change(l), nil
}
func (w *modelWriter) SavePreviousValues(context.Context, *unstructured.Unstructured, []ownershipcore.Conflict) error {
	return nil
}
func (w *modelWriter) LetGo(_ context.Context, live *unstructured.Unstructured, give ownershipcore.LetGo) (ownershipcore.Result, ownershipcore.Outcome, error) {
	s, err := ownershipcore.NewState(live, true)
	if err != nil {
		return ownershipcore.Result{}, ownershipcore.Outcome{}, err
	}
	next, out, err := w.a.Model().LetGo(s, w.manager, give)
	if err != nil {
		return ownershipcore.Result{}, ownershipcore.Outcome{}, err
	}
	given, err := next.Encoded()
	given.SetResourceVersion("8")
	return ownershipcore.Result{Action: ownershipcore.ActionConfigured, Object: given}, out, err
}
func (w *modelWriter) Apply(ctx context.Context, intent *unstructured.Unstructured, opts ownershipcore.ApplyOptions) (ownershipcore.Result, error) {
	opts.DryRun, opts.ModelOnly = true, opts.Live != w.live
	return w.a.Apply(ctx, intent, opts)
}
func (w *modelWriter) RecordTakes(context.Context, *unstructured.Unstructured, []ownershipcore.Conflict) (func(*ownershipcore.Ledger) bool, bool, error) {
	return func(*ownershipcore.Ledger) bool { return false }, false, nil
}
func (w *modelWriter) StoredRecord(context.Context) (*ownershipcore.Ledger, bool) { return nil, false }

// TestStagedPlanAsksOnce: a plan decided on the state its give-back
// leaves (staged) is decided again when Execute sends it, with the
// answers the strategy gave while the plan was made: a plugin is asked
// once per conflict in a reconcile (found by review).
func TestStagedPlanAsksOnce(t *testing.T) {
	live := configMap(map[string]interface{}{"a": "1", "b": "2", "c": "3"},
		[2]string{manager, `{"f:data":{"f:a":{},"f:b":{}}}`}, [2]string{"helm", `{"f:data":{"f:c":{}}}`})
	in := input(t, live, takenFrom(t, live, ".data.b"), "", "", map[string]interface{}{"a": "1", "c": "9"})
	c := &counting{}
	in.Strategy = c
	p, err := MakeWith(context.Background(), applier(), decide(t, in), in, Readers{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Apply.Staged() {
		t.Fatal("want a staged plan (after a give-back)")
	}
	if c.asked != 1 {
		t.Fatalf("asked %d times while the plan was made", c.asked)
	}
	out, err := Execute(context.Background(), p, &modelWriter{a: applier(), manager: manager, live: live, record: p.Decision.Ledger})
	if err != nil {
		t.Fatal(err)
	}
	if c.asked != 1 {
		t.Errorf("the strategy was asked %d times in one reconcile (sent %v), want once", c.asked, out.Sent)
	}
}

// TestExpectAfterGiveBack: a patch that drops a field gives it back;
// the apply after it changes nothing and is not sent, so the controller
// records HandedBack and no Applied event (found by review).
func TestExpectAfterGiveBack(t *testing.T) {
	live := configMap(map[string]interface{}{"a": "1", "b": "2"}, [2]string{manager, `{"f:data":{"f:a":{},"f:b":{}}}`})
	p := mk(t, input(t, live, takenFrom(t, live, ".data.b"), "", "", map[string]interface{}{"a": "1"}))
	out, err := Execute(context.Background(), p, &modelWriter{a: applier(), manager: manager, live: live, record: p.Decision.Ledger})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Expect(p, out, nil), (Expected{ReadyReason: "Applied", Events: []string{"HandedBack"}}); !reflect.DeepEqual(got, want) {
		t.Errorf("expected %+v, want %+v (result %s)", got, want, out.Result.Action)
	}
	if want := []Write{WriteGiveBack}; !reflect.DeepEqual(out.Sent, want) {
		t.Errorf("sent %v, want %v", out.Sent, want)
	}
}

// TestMakeWithReadsOnce: MakeWith reads the record of a FieldPatch it
// forces a field from once, asks the strategy once across both Makes,
// and returns a plan that lacks nothing (found by review).
func TestMakeWithReadsOnce(t *testing.T) {
	const other = "fieldops-fieldpatch/ns/other"
	live := configMap(map[string]interface{}{"a": "1"}, [2]string{other, `{"f:data":{"f:a":{}}}`})
	in := input(t, live, nil, v1alpha1.ConflictPolicyForce, "", map[string]interface{}{"a": "2"})
	c := &counting{}
	in.Strategy = c
	reads := 0
	p, err := MakeWith(context.Background(), applier(), decide(t, in), in, Readers{Records: func(context.Context, *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		reads++
		return nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if reads != 1 || c.asked != 1 || p.Lacks() {
		t.Errorf("reads %d, strategy asked %d times, lacks %v; want 1, 1, false", reads, c.asked, p.Lacks())
	}
}
