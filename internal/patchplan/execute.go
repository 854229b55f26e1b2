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
	// write: the record as stored (read fresh, not from a cache; for a
	// target of a selector patch, the record its reconcile read, whose
	// changes are saved for all targets at once before any write),
	// followed to the target as read (owners, present), then changed by
	// change; guarded by the patch's resourceVersion, and not written
	// when it stays as stored (wrote false). It returns the record as
	// saved.
	SaveRecord(ctx context.Context, owners ownershipcore.ManagedFields, present *fieldset.Set, change func(*ownershipcore.Ledger) bool) (_ *ownershipcore.Ledger, wrote bool, _ error)
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
	// made to the record, and whether the record was written.
	RecordTakes(ctx context.Context, decidedOn *unstructured.Unstructured, forced []ownershipcore.Conflict) (_ func(*ownershipcore.Ledger) bool, wrote bool, _ error)
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

// ErrStalePlan is Execute's answer (in a *StepError) when the record as
// saved, read fresh, gives back other fields than the plan was made for
// (the plan was made from a cached copy of the patch behind it): nothing
// was sent to the target; make the plan again.
var ErrStalePlan = errors.New("the record as stored differs from the one the plan was made from; plan again")

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
	give := giving{p.GiveBack, p.Dropped, p.Forget}
	if p.SaveRecord {
		saved, wrote, err := w.SaveRecord(ctx, d.Owners, d.Present, p.recordChange)
		if err != nil {
			return out, &StepError{WriteRecord, err}
		}
		out.Record = saved.Copy()
		if wrote {
			out.Sent = append(out.Sent, WriteRecord)
		}
		// What is given back follows the record as saved, read fresh: a
		// cached copy of the patch may be behind it. When that changes
		// which fields go, the plan is stale: made again (ErrStalePlan).
		restore := give.LetGo.Restore
		give.LetGo, give.dropped, give.forget = d.GiveBackFrom(saved)
		give.LetGo.Restore = restore
		if !give.dropped.Equals(p.Dropped) {
			return out, &StepError{WriteGiveBack, ErrStalePlan}
		}
	}
	if p.PreviousValues {
		if err := w.SavePreviousValues(ctx, p.Apply.Object(), p.Forced()); err != nil {
			return out, &StepError{WritePreviousValues, err}
		}
		out.Sent = append(out.Sent, WritePreviousValues)
	}
	current, err := giveBack(ctx, p, give, w, &out)
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

// giving is a give-back: the LetGo of dropped, and the fields the record
// forgets once it is written.
type giving struct {
	ownershipcore.LetGo
	dropped, forget *fieldset.Set
}

// giveBack sends the plan's give-back (g) and returns the target it
// leaves.
func giveBack(ctx context.Context, p *Plan, g giving, w Writer, out *Outcome) (*unstructured.Unstructured, error) {
	live := p.Decision.Live
	if !p.Deletion && g.dropped.Empty() {
		out.Record.Forget(g.forget)
		return live, nil
	}
	res, o, err := w.LetGo(ctx, live, g.LetGo)
	if err != nil {
		return nil, &StepError{WriteGiveBack, err}
	}
	// Given back: no longer the patch's to give back.
	out.Record.Forget(g.forget)
	out.GaveBack = o
	if o.RestoreSent {
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
	dropped := false // a Drop is listed once
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
		if err := revise(ctx, w, first, &opts, &dropped, out); err != nil {
			return err
		}
	}
	if out.Result.DroppedFirst && !dropped {
		out.Sent = append(out.Sent, WriteDrop)
	}
	if out.Result.Wrote() && !out.Result.ApplyUnsent {
		out.Sent = append(out.Sent, WriteApply)
	}
	return applied(ctx, p, w, out)
}

// revise records, before the apply is sent again, the fields the core
// would force that the record does not hold (first: its
// RecordFirstError), and sends the apply as the core decided it then
// (opts).
func revise(ctx context.Context, w Writer, first *ownershipcore.RecordFirstError, opts *ownershipcore.ApplyOptions, dropped *bool, out *Outcome) error {
	if first.Plan != nil && first.Plan.Wrote() && !*dropped {
		out.Sent, *dropped = append(out.Sent, WriteDrop), true
	}
	change, wrote, err := w.RecordTakes(ctx, first.Object, first.Forced)
	if err != nil {
		return &StepError{WriteRecord, err}
	}
	change(out.Record)
	if out.Revised = true; wrote {
		out.Sent = append(out.Sent, WriteRecord)
	}
	opts.Recorded = opts.Recorded.Union(patchintent.ForcedFields(first.Forced))
	opts.Planned, opts.Live = first.Plan, first.Object
	return nil
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
