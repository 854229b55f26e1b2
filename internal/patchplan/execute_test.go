/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchplan

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// recorder is a Writer that records the writes asked of it and answers
// each with nothing written (an apply's answer: no object), failing the
// write fail names; firstForced, when set, is the RecordFirstError of the
// first apply (fields the plan did not foresee).
type recorder struct {
	asked       []Write
	fail        Write
	firstForced []ownershipcore.Conflict
	recorded    *fieldset.Set
}

var errWrite = errors.New("write refused")

func (r *recorder) ask(w Write) error {
	r.asked = append(r.asked, w)
	if w == r.fail {
		return errWrite
	}
	return nil
}

func (r *recorder) SaveRecord(_ context.Context, _ ownershipcore.ManagedFields, _ *fieldset.Set, change func(*ownershipcore.Ledger) bool) (*ownershipcore.Ledger, bool, error) {
	l := ownershipcore.NewLedger()
	return l, change(l), r.ask(WriteRecord)
}

func (r *recorder) SavePreviousValues(context.Context, *unstructured.Unstructured, []ownershipcore.Conflict) error {
	return r.ask(WritePreviousValues)
}

func (r *recorder) LetGo(context.Context, *unstructured.Unstructured, ownershipcore.LetGo) (ownershipcore.Result, ownershipcore.Outcome, error) {
	return ownershipcore.Result{Action: ownershipcore.ActionConfigured}, ownershipcore.Outcome{}, r.ask(WriteGiveBack)
}

func (r *recorder) Apply(_ context.Context, _ *unstructured.Unstructured, opts ownershipcore.ApplyOptions) (ownershipcore.Result, error) {
	r.recorded = opts.Recorded
	if r.firstForced != nil {
		forced := r.firstForced
		r.firstForced = nil
		return ownershipcore.Result{}, &ownershipcore.RecordFirstError{Object: opts.Live, Forced: forced, Plan: opts.Planned}
	}
	return ownershipcore.Result{Action: ownershipcore.ActionConfigured}, r.ask(WriteApply)
}

func (r *recorder) RecordTakes(context.Context, *unstructured.Unstructured, []ownershipcore.Conflict) (func(*ownershipcore.Ledger) bool, bool, error) {
	return func(*ownershipcore.Ledger) bool { return true }, true, r.ask(WriteRecord)
}

func (r *recorder) StoredRecord(context.Context) (*ownershipcore.Ledger, bool) { return nil, false }

// TestExecuteOrder: Execute sends a plan's writes in the plan's order,
// stops at the first that fails (naming it), and leaves the plan as it
// was.
func TestExecuteOrder(t *testing.T) {
	helmOwnsA := configMap(map[string]interface{}{"a": "1"}, [2]string{"helm", `{"f:data":{"f:a":{}}}`})
	restore := func(t *testing.T) *Plan {
		return mk(t, input(t, helmOwnsA, nil, v1alpha1.ConflictPolicyForce, v1alpha1.DeletionPolicyRestore, map[string]interface{}{"a": "2"}))
	}
	tests := []struct {
		name  string
		fail  Write
		asked []Write
		sent  []Write
	}{
		{name: "all sent", asked: []Write{WriteRecord, WritePreviousValues, WriteApply}, sent: []Write{WriteRecord, WritePreviousValues, WriteApply}},
		{name: "the record fails: nothing after it", fail: WriteRecord, asked: []Write{WriteRecord}},
		{name: "the previous values fail: no apply", fail: WritePreviousValues, asked: []Write{WriteRecord, WritePreviousValues}, sent: []Write{WriteRecord}},
		{name: "the apply fails", fail: WriteApply, asked: []Write{WriteRecord, WritePreviousValues, WriteApply}, sent: []Write{WriteRecord, WritePreviousValues}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := restore(t)
			writes, record := p.Writes(), recordOf(t, p.Record)
			r := &recorder{fail: tt.fail}
			out, err := Execute(context.Background(), p, r)
			var step *StepError
			switch {
			case tt.fail == "" && err != nil:
				t.Fatal(err)
			case tt.fail != "" && (!errors.As(err, &step) || step.Write != tt.fail || !errors.Is(err, errWrite)):
				t.Fatalf("error %v, want the failure of %s", err, tt.fail)
			}
			if !reflect.DeepEqual(r.asked, tt.asked) {
				t.Errorf("asked %v, want %v", r.asked, tt.asked)
			}
			if !reflect.DeepEqual(out.Sent, tt.sent) {
				t.Errorf("sent %v, want %v", out.Sent, tt.sent)
			}
			if got := p.Writes(); !reflect.DeepEqual(got, writes) || !reflect.DeepEqual(recordOf(t, p.Record), record) {
				t.Error("Execute changed the plan")
			}
			if tt.fail == "" && !r.recorded.Has(mustPath(t, ".data.a")) {
				t.Error("the apply was not gated by the record of the forced field")
			}
		})
	}
}

// TestExecuteRevised: an apply that forces a field the plan did not
// foresee (the core's RecordFirstError) is recorded first, then sent.
func TestExecuteRevised(t *testing.T) {
	p := mk(t, input(t, configMap(nil), nil, "", "", map[string]interface{}{"a": "1"}))
	r := &recorder{firstForced: []ownershipcore.Conflict{{Manager: "helm", Path: mustPath(t, ".data.a")}}}
	out, err := Execute(context.Background(), p, r)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Write{WriteRecord, WriteApply}; !reflect.DeepEqual(out.Sent, want) || !out.Revised {
		t.Errorf("sent %v (revised %v), want %v revised", out.Sent, out.Revised, want)
	}
}

// TestExecuteDeletion: a deletion's plan is one give-back.
func TestExecuteDeletion(t *testing.T) {
	live := configMap(map[string]interface{}{"a": "1"}, [2]string{manager, `{"f:data":{"f:a":{}}}`})
	p, err := MakeDeletion(applier(), DeletionInput{Status: &v1alpha1.FieldPatchStatus{TargetUID: "uid-1"}, Live: live, Manager: manager})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Write{WriteGiveBack}; !reflect.DeepEqual(p.Writes(), want) {
		t.Errorf("writes %v, want %v", p.Writes(), want)
	}
	r := &recorder{}
	if _, err := Execute(context.Background(), p, r); err != nil {
		t.Fatal(err)
	}
	if want := []Write{WriteGiveBack}; !reflect.DeepEqual(r.asked, want) {
		t.Errorf("asked %v, want %v", r.asked, want)
	}
}

// recordOf is l as status.previousOwners holds it.
func recordOf(t *testing.T, l *ownershipcore.Ledger) *v1alpha1.FieldPatchStatus {
	t.Helper()
	st := &v1alpha1.FieldPatchStatus{}
	if err := patchintent.WriteLedger(st, l, "uid-1"); err != nil {
		t.Fatal(err)
	}
	return st
}

func mustPath(t *testing.T, p string) fieldset.Path {
	t.Helper()
	path, err := ownershipcore.ParsePath(p)
	if err != nil {
		t.Fatal(err)
	}
	return path
}
