/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchplan

import (
	"context"
	"errors"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// Input is what a plan is made from: the patch's spec and the record in
// its status (for a target of a selector patch, that target's record),
// the target as read, the patch's field manager, the fields it ignores
// (spec.ignorePaths with the paths the ignorable-paths plugins named),
// its conflict strategy (a plugin's included: it is asked while the plan
// is made, never during a write), and the readers of what the plan
// depends on besides the target.
type Input struct {
	Spec     *v1alpha1.FieldPatchSpec
	Status   *v1alpha1.FieldPatchStatus
	Live     *unstructured.Unstructured
	Manager  string
	Ignore   *fieldset.Set
	Strategy ownershipcore.ConflictStrategy
	// Records reads the records of the FieldPatches and
	// ClusterFieldPatches the apply forces fields from, with the rights
	// of the patch's account (patchintent.InheritedRecords).
	Records patchintent.RecordReader
	// PreviousValues reads the values a Restore gives back with the
	// fields that left the patch (nil: none kept). Asked only then.
	PreviousValues func(ctx context.Context) (*unstructured.Unstructured, error)
}

// Plan is one reconcile of a patch on one target, decided: what it
// writes, in order (Writes), and from what. It is a value: Execute reads
// it and never changes it, and nothing in it is sent until Execute runs.
//
// In order: the record of previous owners is saved (SaveRecord) when the
// apply would destroy what it follows from (Decision.SaveFirst) or
// forces fields from other managers (their owners, with the records of
// the fieldops patches among them, Inherited); the values of the forced
// fields are kept for a Restore (PreviousValues); the fields that left
// the patch are let go of (GiveBack); then the intent is applied as
// decided (Apply), unless the decision refuses it (Refusal).
type Plan struct {
	// Decision is the intent, the target's owners as read and the record
	// of previous owners followed to them (patchintent.Decide).
	Decision *patchintent.Decision
	// Record is the record of previous owners before the first target
	// write: Decision.Ledger with the owners of the forced fields
	// recorded. SaveRecord says it is written first.
	Record     *ownershipcore.Ledger
	SaveRecord bool
	// forced is the change forcing makes to a record (ForcedRecord),
	// applied to Record and, by Execute, to the record as stored.
	forced func(*ownershipcore.Ledger) bool
	// Unread are the records of the fieldops patches the apply forces
	// fields from that the account may not read (ForcedRecord): their
	// fields stay without an owner should those patches leave first.
	Unread []patchintent.Unread
	// PreviousValues: the forced fields' values are kept first
	// (deletionPolicy Restore).
	PreviousValues bool
	// GiveBack lets go of Dropped, the fields that left the patch
	// (Decision.GiveBack, with a Restore's previous values); Forget are
	// the fields the record forgets once it is written. Deletion: the
	// plan of the patch's deletion (MakeDeletion), whose give-back runs
	// even with no field of the patch's Apply entry left (it removes
	// every entry of the patch's field manager), and nothing else.
	GiveBack ownershipcore.LetGo
	Dropped  *fieldset.Set
	Forget   *fieldset.Set
	Deletion bool
	// Apply is the apply as the ownership core decided it
	// (Applier.Decide: each conflict forced, yielded or failed by the
	// strategy), from the target as the give-back leaves it; nil when the
	// decision failed before it had one (Refusal).
	Apply *ownershipcore.ApplyPlan
	// Strategy is the conflict strategy the apply was decided with: asked
	// again only when the apply is decided again (a staged plan, a
	// target changed since).
	Strategy ownershipcore.ConflictStrategy
	// Refusal is why the apply is not sent: a *ownershipcore.ConflictError
	// (the strategy fails it), a *patchintent.ForceRefusedError (owners
	// in another API version), or an error of the decision (an intent
	// the model refuses). The writes before the apply still run.
	Refusal error
}

// Writes are the plan's writes, in the order Execute sends them. The
// status write that ends a reconcile is not among them; neither is an
// apply that changes nothing. A staged apply (Applier.Decide) is decided
// again when sent, and can force fields the plan did not: Execute then
// records them first (Outcome.Revised).
func (p *Plan) Writes() []Write {
	var out []Write
	if p.SaveRecord {
		out = append(out, WriteRecord)
	}
	if p.PreviousValues {
		out = append(out, WritePreviousValues)
	}
	if p.givesBack() {
		out = append(out, WriteGiveBack)
	}
	if p.Refusal == nil && p.Apply != nil && (p.Apply.Result().Action != ownershipcore.ActionUnchanged || p.Apply.Staged()) {
		out = append(out, WriteApply)
	}
	return out
}

// recordChange is the change the plan's record makes to the record as
// stored: the forced fields' owners (none without force).
func (p *Plan) recordChange(l *ownershipcore.Ledger) bool {
	if p.forced == nil {
		return false
	}
	return p.forced(l)
}

// givesBack reports that the plan has a give-back to send.
func (p *Plan) givesBack() bool { return p.Deletion || !p.Dropped.Empty() }

// Forced are the fields the apply forces from other managers, as decided
// (empty when refused).
func (p *Plan) Forced() []ownershipcore.Conflict {
	if p.Apply == nil || p.Refusal != nil {
		return nil
	}
	return p.Apply.Forced()
}

// Make makes the plan of in on applier's model: the decision
// (patchintent.Decide), the give-back of the fields that left the patch,
// the apply decided on the target as the give-back leaves it
// (Applier.Decide, which asks in.Strategy), and the record of the forced
// fields' owners. It writes nothing; it reads the records of the
// fieldops patches it forces fields from (in.Records) and, for a
// Restore's give-back, the previous values (in.PreviousValues).
//
// Errors: those of patchintent.Decide (an *patchintent.InvalidError,
// ownershipcore.ErrUnknownKind, a record that does not decode),
// ownershipcore.ErrTargetGone, and read errors. A refused apply is no
// error: Plan.Refusal.
func Make(ctx context.Context, applier *ownershipcore.Applier, in Input) (*Plan, error) {
	d, err := patchintent.Decide(applier, patchintent.Input{Spec: in.Spec, Status: in.Status, Live: in.Live, Manager: in.Manager, Ignore: in.Ignore})
	if err != nil {
		return nil, err
	}
	p := &Plan{Decision: d, Record: d.Ledger.Copy(), Strategy: in.Strategy}
	p.GiveBack, p.Dropped, p.Forget = d.GiveBack()
	if !p.Dropped.Empty() && in.Spec.DeletionPolicy == v1alpha1.DeletionPolicyRestore && in.PreviousValues != nil {
		if p.GiveBack.Restore, err = in.PreviousValues(ctx); err != nil {
			return nil, err
		}
	}
	opts := ownershipcore.ApplyOptions{FieldManager: in.Manager, Conflicts: in.Strategy, UID: in.Live.GetUID(), Live: in.Live}
	if given := givenBack(applier, in.Live, in.Manager, p.GiveBack, p.Dropped); given != nil {
		opts.Live, opts.ModelOnly = given, true
	}
	p.Apply, err = applier.Decide(ctx, d.Intent, opts)
	switch {
	case errors.Is(err, ownershipcore.ErrTargetGone):
		return nil, err
	case err != nil:
		p.Refusal = err
	}
	if err := p.recordForced(ctx, applier, in); err != nil {
		return nil, err
	}
	p.SaveRecord = d.SaveFirst() || len(p.Forced()) > 0 && !sameRecord(in.Status, p.Record, string(in.Live.GetUID()))
	p.PreviousValues = len(p.Forced()) > 0 && in.Spec.DeletionPolicy == v1alpha1.DeletionPolicyRestore
	return p, nil
}

// recordForced records the owners of the fields the apply forces into
// p.Record (ForcedRecord), unless the apply is refused.
func (p *Plan) recordForced(ctx context.Context, applier *ownershipcore.Applier, in Input) error {
	if len(p.Forced()) == 0 {
		return nil
	}
	d := p.Decision
	change, unread, err := ForcedRecord(ctx, applier, in.Records, d.Owners, p.Forced(), in.Manager, in.Live)
	var refused *patchintent.ForceRefusedError
	switch {
	case errors.As(err, &refused):
		p.Refusal = err
		return nil
	case err != nil:
		return err
	}
	p.Unread, p.forced = unread, change
	change(p.Record)
	return nil
}

// ForcedRecord is the change to a record of previous owners that forcing
// forced from live (owners: its managed fields) makes: the forced fields'
// owners recorded, with the records of the FieldPatches and
// ClusterFieldPatches among them (patchintent.InheritedRecords, read with
// records; unread: those the account may not read), the fields no longer
// shared (patchintent.RecordForced). Errors: a
// *patchintent.ForceRefusedError when an owner's entry is in another API
// version of a kind whose conversion may move fields
// (patchintent.CheckForce), and read errors.
func ForcedRecord(ctx context.Context, applier *ownershipcore.Applier, records patchintent.RecordReader, owners ownershipcore.ManagedFields, forced []ownershipcore.Conflict, manager string, live *unstructured.Unstructured) (change func(*ownershipcore.Ledger) bool, unread []patchintent.Unread, _ error) {
	fields, gvk := patchintent.ForcedFields(forced), live.GroupVersionKind()
	if err := patchintent.CheckForce(owners, fields, manager, gvk.Kind, func(v ...string) bool { return applier.SameFieldPaths(ctx, gvk, v...) }); err != nil {
		return nil, nil, err
	}
	chains, unread, err := patchintent.InheritedRecords(ctx, records, owners, fields, manager, string(live.GetUID()))
	if err != nil {
		return nil, unread, err
	}
	return func(l *ownershipcore.Ledger) bool {
		return patchintent.RecordForced(l, owners, fields, manager, chains...)
	}, unread, nil
}

// sameRecord reports whether st already holds the record l of the target
// uid (nothing to save).
func sameRecord(st *v1alpha1.FieldPatchStatus, l *ownershipcore.Ledger, uid string) bool {
	next := &v1alpha1.FieldPatchStatus{}
	if err := patchintent.WriteLedger(next, l, uid); err != nil {
		return false
	}
	return patchintent.SameLedger(st, next, uid)
}

// givenBack is live after the give-back of dropped (give), as the
// ownership core's model computes it; nil when nothing is let go of, or
// the model cannot compute it (the apply is then decided on live, and
// decided again once the give-back is written).
func givenBack(applier *ownershipcore.Applier, live *unstructured.Unstructured, manager string, give ownershipcore.LetGo, dropped *fieldset.Set) *unstructured.Unstructured {
	if dropped.Empty() {
		return nil
	}
	s, err := ownershipcore.NewState(live, true)
	if err != nil {
		return nil
	}
	next, _, err := applier.Model().LetGo(s, manager, give)
	if err != nil {
		return nil
	}
	given, err := next.Encoded()
	if err != nil {
		return nil
	}
	return given
}

// DeletionInput is what the plan of a patch's deletion from one target
// is made from: its deletionPolicy, the record in its status, the target
// as read, its field manager, and the reader of a Restore's previous
// values (nil: none kept).
type DeletionInput struct {
	Policy         v1alpha1.DeletionPolicy
	Status         *v1alpha1.FieldPatchStatus
	Live           *unstructured.Unstructured
	Manager        string
	PreviousValues func(ctx context.Context) (*unstructured.Unstructured, error)
}

// MakeDeletion makes the plan of a patch's deletion from the target
// in.Live: one give-back (Deletion), the policy's LetGo
// (patchintent.DeletionLetGo) from the record followed to the target,
// with a Restore's previous values; no record and no apply. Errors: a
// record that does not decode, a target whose managed fields do not
// parse, and the read of the previous values.
func MakeDeletion(ctx context.Context, applier *ownershipcore.Applier, in DeletionInput) (*Plan, error) {
	owners, err := ownershipcore.Owners(in.Live)
	if err != nil {
		return nil, err
	}
	present, err := applier.FieldSet(in.Live)
	if err != nil {
		return nil, err
	}
	ledger, err := patchintent.ReadLedger(in.Status, in.Status.TargetUID)
	if err != nil {
		return nil, err
	}
	ledger.Follow(owners, present, in.Manager)
	// Our Apply entry's fields; none when only another entry of ours is
	// left (an Update entry the apiserver recorded for a removed field it
	// defaulted again, after an interrupted let-go): the policy's LetGo
	// still removes every entry of ours.
	ours := fieldset.NewSet()
	if e := owners.Applied(in.Manager); e != nil {
		ours = e.Fields
	}
	d := &patchintent.Decision{Manager: in.Manager, Live: in.Live, Owners: owners, Present: present, Ledger: ledger, RecordedBefore: ledger.Recorded.Copy()}
	p := &Plan{Decision: d, Record: ledger.Copy(), Deletion: true, Dropped: ours, Forget: fieldset.NewSet()}
	p.GiveBack = patchintent.DeletionLetGo(in.Policy, ledger, owners, ours, in.Manager)
	if in.Policy == v1alpha1.DeletionPolicyRestore && in.PreviousValues != nil {
		if p.GiveBack.Restore, err = in.PreviousValues(ctx); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Expected is what a plan, run without a failed write, leaves on the
// patch: the reason of its Ready condition and the reasons of the events
// it records, in order. A contest (Contested, ContestTimeout) is not
// among them: it depends on the manager's history of repairs, which no
// plan holds.
type Expected struct {
	ReadyReason string
	Events      []string
}

// Expected is p's expected Ready reason and events (the controller's
// reasons: Applied, Conflict, InvalidPatch; HandedBack, Restored,
// Relinquished, Forbidden).
func (p *Plan) Expected() Expected {
	var e Expected
	for range p.Unread {
		e.Events = append(e.Events, "Forbidden")
	}
	if p.givesBack() && !p.Deletion {
		e.Events = append(e.Events, "HandedBack")
	}
	var conflict *ownershipcore.ConflictError
	var refused *patchintent.ForceRefusedError
	switch {
	case p.Deletion:
		e.Events = append(e.Events, deletionEvent(p.GiveBack))
	case errors.As(p.Refusal, &conflict), errors.As(p.Refusal, &refused):
		e.ReadyReason, e.Events = "Conflict", append(e.Events, "Conflict")
	case p.Refusal != nil:
		e.ReadyReason = "InvalidPatch"
	default:
		e.ReadyReason = "Applied"
		if slices.Contains(p.Writes(), WriteApply) {
			e.Events = append(e.Events, "Applied")
		}
	}
	return e
}

// deletionEvent is the reason of a deletion's event: Restored when it
// restores values, HandedBack when fields go back to previous owners,
// else Relinquished.
func deletionEvent(g ownershipcore.LetGo) string {
	switch {
	case g.Restore != nil:
		return "Restored"
	case len(g.Previous) > 0:
		return "HandedBack"
	}
	return "Relinquished"
}
