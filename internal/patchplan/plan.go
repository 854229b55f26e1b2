/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchplan

import (
	"context"
	"errors"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// Input is what a plan is made from: what its decision is made from
// (patchintent.Input: the patch's spec and the record in its status —
// for a target of a selector patch, that target's record —, the target
// as read, the patch's field manager, the fields it ignores), its
// conflict strategy (a plugin's included: it is asked while the plan
// is made, once per conflict; an apply decided again when sent, staged
// or revised, asks it only about conflicts it has not answered), and
// what the plan depends on besides the target, read before (MakeWith
// reads it).
type Input struct {
	patchintent.Input
	Strategy ownershipcore.ConflictStrategy
	// Records are the records of the FieldPatches and
	// ClusterFieldPatches among the owners of the fields the apply forces,
	// read with the rights of the patch's account
	// (patchintent.InheritedRecords), and Unread those the account may
	// not read; RecordsRead are the fields whose owners' records were
	// read (nil: none; Plan.Lacks).
	Records     []patchintent.Inherited
	Unread      []patchintent.Unread
	RecordsRead *fieldset.Set
	// PreviousValues are the values a Restore gives back with the fields
	// that left the patch (nil: none kept); PreviousValuesRead says they
	// were read.
	PreviousValues     *unstructured.Unstructured
	PreviousValuesRead bool
}

// Readers read what a plan depends on besides the target (MakeWith).
type Readers struct {
	// Records reads a FieldPatch or ClusterFieldPatch, with the rights of
	// the patch's account.
	Records patchintent.RecordReader
	// PreviousValues reads a Restore patch's previous values of the
	// target (nil, nil: none kept).
	PreviousValues func(ctx context.Context) (*unstructured.Unstructured, error)
}

// MakeWith makes the plan of d (patchintent.Decide of in) as Make does,
// reading with r what the plan lacks (Plan.Lacks: the records of the
// fieldops patches it forces fields from, a Restore's previous values)
// and making it again with them; in.Strategy is asked once per conflict
// across both. It writes nothing. Errors: Make's, and read errors (a 403
// on a record is an Unread).
func MakeWith(ctx context.Context, applier *ownershipcore.Applier, d *patchintent.Decision, in Input, r Readers) (*Plan, error) {
	in.Strategy = remember(in.Strategy)
	p, err := Make(ctx, applier, d, in)
	// Each round reads what the last plan lacked; what it reads can make
	// the next plan need more (previous values that change what is
	// forced), never less: a bounded number of rounds.
	for round := 0; err == nil && p.Lacks(); round++ {
		if round == makeRounds {
			return nil, errors.New("the plan still lacks the records or previous values it depends on after reading them")
		}
		if in, err = p.read(ctx, in, r); err != nil {
			return nil, err
		}
		p, err = Make(ctx, applier, d, in)
	}
	return p, err
}

// makeRounds bounds MakeWith's reads.
const makeRounds = 3

// read reads with r what p lacked into in.
func (p *Plan) read(ctx context.Context, in Input, r Readers) (Input, error) {
	var err error
	if p.lacksRecords {
		forced := patchintent.ForcedFields(p.Forced())
		if in.Records, in.Unread, err = patchintent.InheritedRecords(ctx, r.Records, p.Decision.Owners, forced, in.Manager, string(in.Live.GetUID())); err != nil {
			return in, err
		}
		in.RecordsRead = forced
	}
	if p.lacksPreviousValues {
		if r.PreviousValues != nil {
			if in.PreviousValues, err = r.PreviousValues(ctx); err != nil {
				return in, err
			}
		}
		in.PreviousValuesRead = true
	}
	return in, nil
}

// Plan is one reconcile of a patch on one target, decided: what it
// writes, in order (Writes), and from what. It is a value: Execute reads
// it and never changes it, and nothing in it is sent until Execute runs.
//
// In order: the record of previous owners is saved (SaveRecord) when the
// apply would destroy what it follows from (Decision.SaveFirst) or
// forces fields from other managers (their owners, with the records of
// the fieldops patches among them: Input.Records); the values of the forced
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
	// RecordChanges: the record as the patch's status holds it (Input)
	// differs from Record, so SaveRecord writes (Writes). SaveRecord
	// without it reads the record as stored all the same: a forced apply
	// is never gated by a cached copy alone.
	RecordChanges bool
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
	// Strategy is the conflict strategy the apply was decided with (its
	// answers kept: MakeWith): asked again, about conflicts it has not
	// answered, only when the apply is decided again (a staged plan, a
	// target changed since).
	Strategy ownershipcore.ConflictStrategy
	// Refusal is why the apply is not sent: a *ownershipcore.ConflictError
	// (the strategy fails it), a *patchintent.ForceRefusedError (owners
	// in another API version), or an error of the decision (an intent
	// the model refuses). The writes before the apply still run.
	Refusal error
	// lacksRecords, lacksPreviousValues: what Make needed and its input
	// did not hold (Lacks).
	lacksRecords, lacksPreviousValues bool
}

// Lacks reports that the plan was made without something it depends on
// (the records of fieldops owners of forced fields outside
// Input.RecordsRead; Input.PreviousValuesRead false when it needed
// them): MakeWith reads it and makes the plan again.
func (p *Plan) Lacks() bool { return p.lacksRecords || p.lacksPreviousValues }

// Writes are the plan's writes, in the order Execute sends them, as the
// plan predicts them from what it read. The status write that ends a
// reconcile is not among them; neither is an apply decided to change
// nothing. A staged apply (Applier.Decide) is listed: it is decided again
// when sent, and may then change nothing, or force fields the plan did
// not (Execute records them first: Outcome.Revised). Outcome.Sent lists
// the requests a run sent.
func (p *Plan) Writes() []Write {
	var out []Write
	if p.SaveRecord && p.RecordChanges {
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

// Make makes the plan of d, the decision of in (patchintent.Decide), on
// applier's model: the give-back of the fields that left the patch, the
// apply decided on the target as the give-back leaves it
// (Applier.Decide, which asks in.Strategy), and the record of the forced
// fields' owners (ForcedRecord, from in.Records). It writes nothing;
// besides asking in.Strategy it reads only what the applier's schema
// needs (a kind's conversion, cached): the same input and answers make
// the same plan. What it needs and in does not hold is left out and
// reported (Plan.Lacks; MakeWith reads it).
//
// Errors: ownershipcore.ErrTargetGone. A refused apply is no error:
// Plan.Refusal.
func Make(ctx context.Context, applier *ownershipcore.Applier, d *patchintent.Decision, in Input) (*Plan, error) {
	p := &Plan{Decision: d, Record: d.Ledger.Copy(), Strategy: in.Strategy}
	p.GiveBack, p.Dropped, p.Forget = d.GiveBack()
	if !p.Dropped.Empty() && in.Spec.DeletionPolicy == v1alpha1.DeletionPolicyRestore {
		p.GiveBack.Restore, p.lacksPreviousValues = in.PreviousValues, !in.PreviousValuesRead
	}
	opts := ownershipcore.ApplyOptions{FieldManager: in.Manager, Conflicts: in.Strategy, UID: in.Live.GetUID(), Live: in.Live}
	if given := givenBack(applier, in.Live, in.Manager, p.GiveBack, p.Dropped); given != nil {
		opts.Live, opts.ModelOnly = given, true
	}
	var err error
	p.Apply, err = applier.Decide(ctx, d.Intent, opts)
	switch {
	case errors.Is(err, ownershipcore.ErrTargetGone):
		return nil, err
	case err != nil:
		p.Refusal = err
	}
	p.recordForced(ctx, applier, in)
	forced := len(p.Forced()) > 0
	p.SaveRecord = d.SaveFirst() || forced
	p.RecordChanges = d.SaveFirst() || forced && !sameRecord(in.Status, p.Record, string(in.Live.GetUID()))
	p.PreviousValues = forced && in.Spec.DeletionPolicy == v1alpha1.DeletionPolicyRestore
	return p, nil
}

// recordForced records the owners of the fields the apply forces into
// p.Record (ForcedRecord), unless the apply is refused.
func (p *Plan) recordForced(ctx context.Context, applier *ownershipcore.Applier, in Input) {
	forced := p.Forced()
	if len(forced) == 0 {
		return
	}
	change, err := ForcedRecord(ctx, applier, in.Records, p.Decision.Owners, forced, in.Manager, in.Live)
	if err != nil {
		p.Refusal = err
		return
	}
	p.Unread, p.forced = ForcedUnread(in.Unread, forced), change
	unread := patchintent.ForcedFields(forced)
	if in.RecordsRead != nil {
		unread = unread.Difference(in.RecordsRead)
	}
	p.lacksRecords = ownsPatch(p.Decision.Owners.OwnersOf(unread, in.Manager))
	change(p.Record)
}

// ownsPatch reports whether a FieldPatch or ClusterFieldPatch is among
// owners (patchintent.InheritedRecords reads their records).
func ownsPatch(owners ownershipcore.ManagedFields) bool {
	for _, e := range owners {
		if o, ok := ownershipcore.ParseManager(e.Manager); ok && o.Name != "" && (o.Kind == "FieldPatch" || o.Kind == "ClusterFieldPatch") {
			return true
		}
	}
	return false
}

// ForcedRecord is the change to a record of previous owners that forcing
// forced from live (owners: its managed fields) makes: the forced fields'
// owners recorded, with what the records of the FieldPatches and
// ClusterFieldPatches among them hold for those fields (records, by field
// manager; patchintent.Inherited), the fields no longer shared
// (patchintent.RecordForced). It reads only what the applier's schema
// needs (a kind's conversion). Errors: a *patchintent.ForceRefusedError when an
// owner's entry is in another API version of a kind whose conversion may
// move fields (patchintent.CheckForce).
func ForcedRecord(ctx context.Context, applier *ownershipcore.Applier, records []patchintent.Inherited, owners ownershipcore.ManagedFields, forced []ownershipcore.Conflict, manager string, live *unstructured.Unstructured) (func(*ownershipcore.Ledger) bool, error) {
	fields, gvk := patchintent.ForcedFields(forced), live.GroupVersionKind()
	if err := patchintent.CheckForce(owners, fields, manager, gvk.Kind, func(v ...string) bool { return applier.SameFieldPaths(ctx, gvk, v...) }); err != nil {
		return nil, err
	}
	return func(l *ownershipcore.Ledger) bool {
		return patchintent.RecordForced(l, owners, fields, manager, records...)
	}, nil
}

// ForcedUnread are the records of unread whose fields the apply forces
// (forced), narrowed to those fields.
func ForcedUnread(unread []patchintent.Unread, forced []ownershipcore.Conflict) []patchintent.Unread {
	fields := patchintent.ForcedFields(forced)
	var out []patchintent.Unread
	for _, u := range unread {
		if in := u.Fields.Intersection(fields); !in.Empty() {
			u.Fields = in
			out = append(out, u)
		}
	}
	return out
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
// as read, its field manager, and a Restore's previous values (nil: none
// kept).
type DeletionInput struct {
	Policy         v1alpha1.DeletionPolicy
	Status         *v1alpha1.FieldPatchStatus
	Live           *unstructured.Unstructured
	Manager        string
	PreviousValues *unstructured.Unstructured
}

// MakeDeletion makes the plan of a patch's deletion from the target
// in.Live: one give-back (Deletion), the policy's LetGo
// (patchintent.DeletionLetGo) from the record followed to the target,
// with a Restore's previous values; no record and no apply. It writes
// and reads nothing. Errors: a record that does not decode, a target
// whose managed fields do not parse.
func MakeDeletion(applier *ownershipcore.Applier, in DeletionInput) (*Plan, error) {
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
	if in.Policy == v1alpha1.DeletionPolicyRestore {
		p.GiveBack.Restore = in.PreviousValues
	}
	return p, nil
}

// Expected is what running a plan leaves on the patch: the reason of its
// Ready condition and the reasons of the events it records, in order.
// A contest (Contested, ContestTimeout) is not among them: it depends on
// the manager's history of repairs, which no plan holds; nor is a
// repair's DriftRepaired (the controller's drift check, not the plan,
// tells a repair from a first apply: Applied stands for both).
type Expected struct {
	ReadyReason string
	Events      []string
}

// Expect is what running p came to (out and err, Execute's): the
// controller's reasons Applied, Conflict, TargetNotFound, Forbidden,
// UnknownKind, InvalidPatch or ApplyFailed for Ready (none for a
// deletion), and the events Forbidden (a record the plan could not
// read), HandedBack, Restored or Relinquished (a give-back sent),
// Conflict and Applied (an apply that wrote). The events of a failure
// other than a conflict (the Warning that carries the Ready reason) and
// of a record unread during a revision are not listed.
func Expect(p *Plan, out Outcome, err error) Expected {
	var e Expected
	for range p.Unread {
		e.Events = append(e.Events, "Forbidden")
	}
	if slices.Contains(out.Sent, WriteGiveBack) {
		if p.Deletion {
			e.Events = append(e.Events, deletionEvent(out.GaveBack))
		} else {
			e.Events = append(e.Events, "HandedBack")
		}
	}
	var conflict *ownershipcore.ConflictError
	var refused *patchintent.ForceRefusedError
	switch {
	case p.Deletion:
	case errors.As(err, &conflict), errors.As(err, &refused):
		e.ReadyReason, e.Events = "Conflict", append(e.Events, "Conflict")
	case errors.Is(err, ownershipcore.ErrTargetGone):
		e.ReadyReason = "TargetNotFound"
	case apierrors.IsForbidden(err):
		e.ReadyReason = "Forbidden"
	case errors.Is(err, ownershipcore.ErrUnknownKind):
		e.ReadyReason = "UnknownKind"
	case errors.Is(err, ownershipcore.ErrInvalidIntent), ownershipcore.IsTerminal(err):
		e.ReadyReason = "InvalidPatch"
	case err != nil:
		e.ReadyReason = "ApplyFailed"
	default:
		e.ReadyReason = "Applied"
		if out.Result.Wrote() { // an apply, or the core's drop before it
			e.Events = append(e.Events, "Applied")
		}
	}
	return e
}

// deletionEvent is the reason of a deletion's event (o: what its
// give-back did): Restored when it restored values, HandedBack when
// fields went back to previous owners, else Relinquished.
func deletionEvent(o ownershipcore.Outcome) string {
	switch {
	case o.Restored != nil && !o.Restored.Empty():
		return "Restored"
	case o.Moved != nil && !o.Moved.Empty():
		return "HandedBack"
	}
	return "Relinquished"
}
