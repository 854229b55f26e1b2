/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldplan

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/internal/patchplan"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
	"github.com/fieldops/fieldops/ownershipcore/redact"
)

// dryRun is kubectl fieldops plan's patchplan.Writer: the writes of the
// controller's plan as dry runs, nothing stored. The record is the
// plan's; the give-back is the model's (a dry run cannot stage it:
// Applier.LetGo writes a JSON patch); the apply is sent with
// dryRun=All, or predicted by the model after a give-back (ModelOnly).
type dryRun struct {
	applier *ownershipcore.Applier
	manager string
	// live is the target as read, owners its managed fields; record the
	// record as read, followed to it (Decision.Ledger).
	live   *unstructured.Unstructured
	owners ownershipcore.ManagedFields
	record *ownershipcore.Ledger
	// status is the patch's status the record was read from.
	status *v1alpha1.FieldPatchStatus
	// answer is a dry run's answer that forced fields outside the
	// record; unread the records RecordTakes could not read.
	answer *ownershipcore.Result
	unread []patchintent.Unread
	// notes are what the give-back could not do as asked.
	notes []string
}

// SaveRecord is the record as the controller would save it: the plan's
// record with the change.
func (w *dryRun) SaveRecord(_ context.Context, _ ownershipcore.ManagedFields, _ *fieldset.Set, change func(*ownershipcore.Ledger) bool) (*ownershipcore.Ledger, bool, error) {
	l := w.record.Copy()
	change(l)
	next := &v1alpha1.FieldPatchStatus{}
	if err := patchintent.WriteLedger(next, l, string(w.live.GetUID())); err != nil {
		return nil, false, err
	}
	wrote := !patchintent.SameLedger(w.status, next, string(w.live.GetUID()))
	w.record, w.status = l.Copy(), next // a later record goes on from this one
	return l, wrote, nil
}

func (dryRun) SavePreviousValues(context.Context, *unstructured.Unstructured, []ownershipcore.Conflict) error {
	return nil
}

// LetGo is the give-back as the model computes it. When the removals a
// Relinquish makes cannot be made, the fields the patch owns alone stay
// without an owner, as the controller leaves them (a note says so).
func (w *dryRun) LetGo(_ context.Context, live *unstructured.Unstructured, give ownershipcore.LetGo) (ownershipcore.Result, ownershipcore.Outcome, error) {
	s, err := ownershipcore.NewState(live, true)
	if err != nil {
		return ownershipcore.Result{}, ownershipcore.Outcome{}, err
	}
	m := w.applier.Model()
	next, out, err := m.LetGo(s, w.manager, give)
	if err != nil && give.Relinquish {
		w.notes = append(w.notes, "the fields the patch added cannot be removed ("+redact.Message(err)+"): they would stay without an owner")
		give.Relinquish = false
		next, out, err = m.LetGo(s, w.manager, give)
		if e := next.Owners.Applied(w.manager); e != nil {
			out.Kept, out.Why = e.Fields, "the removals cannot be made"
		}
	}
	if err != nil {
		return ownershipcore.Result{}, ownershipcore.Outcome{}, err
	}
	given, err := next.Encoded()
	action := ownershipcore.ActionConfigured
	if ownershipcore.Diff(s, next) == "" {
		action = ownershipcore.ActionUnchanged
	}
	return ownershipcore.Result{Action: action, Object: given}, out, err
}

// Apply dry-runs the apply; after a give-back the model predicts it
// (ModelOnly: the apiserver does not hold the object the give-back
// leaves). A dry run is not gated by the record (ApplyOptions.Recorded):
// when its answer forces fields outside it (conflicts the local decision
// could not see: entries of another version), it answers as the gate
// does, with a *ownershipcore.RecordFirstError, for Execute to record
// them (RecordTakes) before it asks again, answered with the same dry
// run.
func (w *dryRun) Apply(ctx context.Context, intent *unstructured.Unstructured, opts ownershipcore.ApplyOptions) (ownershipcore.Result, error) {
	if w.answer != nil && recordedAll(w.answer.Forced, opts.Recorded) {
		return *w.answer, nil
	}
	opts.DryRun, opts.ModelOnly = true, opts.Live != w.live
	res, err := w.applier.Apply(ctx, intent, opts)
	if err != nil || recordedAll(res.Forced, opts.Recorded) {
		return res, err
	}
	w.answer = &res
	return res, &ownershipcore.RecordFirstError{Object: opts.Live, Forced: res.Forced, Plan: opts.Planned}
}

// recordedAll reports whether every forced field is in recorded.
func recordedAll(forced []ownershipcore.Conflict, recorded *fieldset.Set) bool {
	for _, c := range forced {
		if recorded == nil || !recorded.Has(c.Path) {
			return false
		}
	}
	return true
}

// RecordTakes is the record of the fields the dry run forces that the
// plan did not foresee, as the controller makes it
// (patchplan.ForcedRecord: refused for owners in another version).
func (w *dryRun) RecordTakes(ctx context.Context, _ *unstructured.Unstructured, forced []ownershipcore.Conflict) (func(*ownershipcore.Ledger) bool, bool, error) {
	chains, unread, err := patchintent.InheritedRecords(ctx, w.applier.GetFresh, w.owners, patchintent.ForcedFields(forced), w.manager, string(w.live.GetUID()))
	w.unread = append(w.unread, unread...)
	if err != nil {
		return nil, false, err
	}
	change, err := patchplan.ForcedRecord(ctx, w.applier, chains, w.owners, forced, w.manager, w.live)
	if err != nil {
		return nil, false, err
	}
	_, wrote, err := w.SaveRecord(ctx, nil, nil, change)
	return change, wrote, err
}

func (dryRun) StoredRecord(context.Context) (*ownershipcore.Ledger, bool) { return nil, false }
