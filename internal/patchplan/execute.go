/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchplan

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// Writer sends a plan's writes: the controller's writes, or the dry runs
// of kubectl fieldops plan. Execute calls it in the plan's order.
type Writer interface {
	// SaveRecord saves the record of previous owners before a target
	// write: the record as stored, followed to the target as read
	// (owners, present), then changed by change; guarded by the
	// patch's resourceVersion. It returns the record as saved.
	SaveRecord(ctx context.Context, owners ownershipcore.ManagedFields, present *fieldset.Set, change func(*ownershipcore.Ledger) bool) (*ownershipcore.Ledger, error)
	// SavePreviousValues keeps the values the forced fields hold in
	// decidedOn (deletionPolicy Restore).
	SavePreviousValues(ctx context.Context, decidedOn *unstructured.Unstructured, forced []ownershipcore.Conflict) error
	// LetGo sends the give-back of the fields that left the patch
	// (ownershipcore.Applier.LetGo on live).
	LetGo(ctx context.Context, live *unstructured.Unstructured, give ownershipcore.LetGo) (ownershipcore.Result, ownershipcore.Outcome, error)
	// Apply sends the apply (ownershipcore.Applier.Apply).
	Apply(ctx context.Context, intent *unstructured.Unstructured, opts ownershipcore.ApplyOptions) (ownershipcore.Result, error)
	// RecordTakes records, before the apply, the owners of fields it
	// forces that the plan did not foresee (the target changed since the
	// plan, or the apiserver named conflicts the model could not see):
	// previous values first, then the record. It returns the change it
	// made to the record.
	RecordTakes(ctx context.Context, decidedOn *unstructured.Unstructured, forced []ownershipcore.Conflict) (func(*ownershipcore.Ledger) bool, error)
	// StoredRecord reads the record as stored now, when it can differ
	// from the one the plan was made from (a cached copy of the patch
	// behind the apiserver); ok false when it cannot.
	StoredRecord(ctx context.Context) (_ *ownershipcore.Ledger, ok bool)
}

// Outcome is what Execute did.
type Outcome struct {
	// Sent are the requests sent, in order: the plan's Writes as they
	// went out (a give-back that changed nothing sends nothing; a
	// Restore's give-back sends WriteRestore first; an apply may send
	// WriteDrop first, and then nothing), and a Record before the apply
	// when it was revised.
	Sent []Write
	// Record is the record of previous owners after the writes, to write
	// to status (patchintent.WriteLedger).
	Record *ownershipcore.Ledger
	// GaveBack is what the give-back did (its Outcome), and Given its
	// answer (nil when it changed nothing).
	GaveBack ownershipcore.Outcome
	Given    *unstructured.Unstructured
	// Result is the apply's answer.
	Result ownershipcore.Result
	// Revised: the apply forced fields the plan had not decided to
	// force (recorded first all the same).
	Revised bool
}

// StepError is the failure of one of a plan's writes: the writes before
// it were sent, those after it were not.
type StepError struct {
	Write Write
	Err   error
}

func (e *StepError) Error() string { return fmt.Sprintf("%s: %v", e.Write, e.Err) }
func (e *StepError) Unwrap() error { return e.Err }

// applyAttempts bounds the rounds of an apply whose forced fields are
// recorded first (a round per revision).
const applyAttempts = 3

// Execute sends p's writes through w in p's order and returns what they
// did. The apply is sent as decided (ApplyOptions.Planned) while the
// target is at the version it was decided on; the core forces no field
// the record does not hold (ApplyOptions.Recorded): a field the plan did
// not foresee is recorded first (Writer.RecordTakes, Outcome.Revised).
// A refused apply (Plan.Refusal) is returned, after the writes before it,
// as a *StepError of WriteApply. Errors: a *StepError naming the write
// that failed.
func Execute(ctx context.Context, p *Plan, w Writer) (Outcome, error) {
	d := p.Decision
	out := Outcome{Record: p.Record.Copy()}
	if p.SaveRecord {
		saved, err := w.SaveRecord(ctx, d.Owners, d.Present, p.recordChange)
		if err != nil {
			return out, &StepError{WriteRecord, err}
		}
		out.Sent, out.Record = append(out.Sent, WriteRecord), saved.Copy()
	}
	if p.PreviousValues {
		if err := w.SavePreviousValues(ctx, p.Apply.Object(), p.Forced()); err != nil {
			return out, &StepError{WritePreviousValues, err}
		}
		out.Sent = append(out.Sent, WritePreviousValues)
	}
	current, err := giveBack(ctx, p, w, &out)
	if err != nil {
		return out, err
	}
	switch {
	case p.Refusal != nil:
		if p.Apply != nil {
			out.Result = p.Apply.Result() // the conflicts as decided
		}
		return out, &StepError{WriteApply, p.Refusal}
	case p.Apply == nil:
		return out, nil // a deletion: no apply
	}
	return out, apply(ctx, p, w, current, &out)
}

// giveBack sends the plan's give-back and returns the target it leaves.
func giveBack(ctx context.Context, p *Plan, w Writer, out *Outcome) (*unstructured.Unstructured, error) {
	live := p.Decision.Live
	if !p.givesBack() {
		out.Record.Forget(p.Forget)
		return live, nil
	}
	res, o, err := w.LetGo(ctx, live, p.GiveBack)
	if err != nil {
		return nil, &StepError{WriteGiveBack, err}
	}
	// Given back: no longer the patch's to give back.
	out.Record.Forget(p.Forget)
	out.GaveBack = o
	if o.Restored != nil && !o.Restored.Empty() {
		out.Sent = append(out.Sent, WriteRestore)
	}
	if res.Action != ownershipcore.ActionUnchanged {
		out.Sent = append(out.Sent, WriteGiveBack)
	}
	if res.Action == ownershipcore.ActionUnchanged || res.Object == nil {
		return live, nil
	}
	out.Given = res.Object
	return res.Object, nil
}

// apply sends the plan's apply from current, recording first the fields
// it forces that the record does not hold, and takes its answer into the
// record (Decision.Applied).
func apply(ctx context.Context, p *Plan, w Writer, current *unstructured.Unstructured, out *Outcome) error {
	d := p.Decision
	if r := p.Apply.Result(); r.Action == ownershipcore.ActionUnchanged && !p.Apply.Staged() && current == d.Live {
		out.Result = r // decided: nothing to send
		return applied(ctx, p, w, out)
	}
	opts := ownershipcore.ApplyOptions{FieldManager: d.Manager, UID: d.Live.GetUID(), Live: current, Planned: p.Apply, Recorded: patchintent.ForcedFields(p.Forced())}
	opts.Conflicts = p.Strategy
	for attempt := 1; ; attempt++ {
		res, err := w.Apply(ctx, d.Intent, opts)
		out.Result = res
		var first *ownershipcore.RecordFirstError
		if !errors.As(err, &first) || attempt == applyAttempts {
			if err != nil {
				return &StepError{WriteApply, err}
			}
			break
		}
		if first.Plan != nil && first.Plan.Wrote() {
			out.Sent = append(out.Sent, WriteDrop)
		}
		change, err := w.RecordTakes(ctx, first.Object, first.Forced)
		if err != nil {
			return &StepError{WriteRecord, err}
		}
		change(out.Record)
		out.Sent, out.Revised = append(out.Sent, WriteRecord), true
		opts.Recorded = opts.Recorded.Union(patchintent.ForcedFields(first.Forced))
		opts.Planned, opts.Live = first.Plan, first.Object
	}
	if out.Result.DroppedFirst {
		out.Sent = append(out.Sent, WriteDrop)
	}
	if out.Result.Wrote() && !out.Result.ApplyUnsent {
		out.Sent = append(out.Sent, WriteApply)
	}
	return applied(ctx, p, w, out)
}

// applied takes the apply's answer into the record: the fields it took
// without force, with the owners the answer shows (Decision.Applied).
// When the patch held such a field before the apply with no record (a
// lost status write, or a cached copy of the patch behind the
// apiserver's), the record goes on from the one stored, if newer.
func applied(ctx context.Context, p *Plan, w Writer, out *Outcome) error {
	d := p.Decision
	if out.Result.Object == nil {
		return nil
	}
	after, err := ownershipcore.Owners(out.Result.Object)
	if err != nil {
		return &StepError{WriteApply, err}
	}
	if before := d.Owners.Applied(d.Manager); before != nil && !d.Taken(out.Record, after).Intersection(before.Fields).Empty() {
		if l, ok := w.StoredRecord(ctx); ok {
			l.Follow(d.Owners, d.Present, d.Manager)
			out.Record = l
		}
	}
	out.Record = d.Applied(out.Record, after)
	return nil
}
