/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchintent

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// Input is what one reconcile of a FieldPatch or ClusterFieldPatch decides
// from: its spec, the record in its status, the target as read and the
// patch's field manager. Ignore is spec.ignorePaths with the paths the
// ignorable-paths plugins name (nil for none); the caller parses it, so
// that it can tell a bad ignorePaths from a bad patch.
type Input struct {
	Spec    *v1alpha1.FieldPatchSpec
	Status  *v1alpha1.FieldPatchStatus
	Live    *unstructured.Unstructured
	Manager string
	Ignore  *fieldset.Set
}

// Decision is the FieldPatch decision, made once for the controller and
// for kubectl fieldops plan (patchplan.Make), so that the plan cannot
// disagree with what the controller does. Decide makes it; it is a
// value: its methods return new values and never change it, its Ledger
// included (a step that goes on from the record works on a copy).
type Decision struct {
	// Manager is the patch's field manager; Live the target as read.
	Manager string
	Live    *unstructured.Unstructured
	// Intent is the apply configuration (Intent), IntentSet its field set.
	Intent    *unstructured.Unstructured
	IntentSet *fieldset.Set
	// Owners are the target's managed fields as read, Present the set of
	// fields it holds.
	Owners  ownershipcore.ManagedFields
	Present *fieldset.Set
	// Ledger is the record of previous owners, read from status and
	// followed to the target as read (Ledger.Follow); RecordedBefore is
	// what it recorded before this reconcile.
	Ledger         *ownershipcore.Ledger
	RecordedBefore *fieldset.Set
	// Forgotten are the fields whose previous owners removed or let go of
	// them since the record was saved (Ledger.Follow).
	Forgotten *fieldset.Set

	policy v1alpha1.DeletionPolicy
}

// Decide builds the intent of in.Spec for in.Live (Intent, with the
// record in in.Status for a JSON patch's test ops) and follows the record
// of previous owners to the target as read. Errors: those of Intent (an
// *InvalidError for a patch that does not fit, ErrUnknownKind), and a
// record in status that does not decode.
func Decide(a *ownershipcore.Applier, in Input) (*Decision, error) {
	intent, set, err := Intent(a, in.Spec, in.Status, in.Live, in.Manager, in.Ignore)
	if err != nil {
		return nil, err
	}
	owners, err := ownershipcore.Owners(in.Live)
	if err != nil {
		return nil, err
	}
	present, err := a.FieldSet(in.Live)
	if err != nil {
		return nil, err
	}
	ledger, err := ReadLedger(in.Status, string(in.Live.GetUID()))
	if err != nil {
		return nil, err
	}
	d := &Decision{Manager: in.Manager, Live: in.Live, Intent: intent, IntentSet: set, Owners: owners, Present: present,
		Ledger: ledger, RecordedBefore: ledger.Recorded.Copy(), policy: in.Spec.DeletionPolicy}
	d.Forgotten = ledger.Follow(owners, present, in.Manager)
	return d, nil
}

// SaveFirst reports whether the record must reach status before the
// apply: an owner removed or let go of a field the apply is about to
// write again, and what shows it (the field gone, the owner's entry
// without it) goes with that write.
func (d *Decision) SaveFirst() bool {
	return !d.Forgotten.Intersection(d.IntentSet).Empty()
}

// GiveBack is what the patch lets go of before its apply, exactly as
// deletion would let go of it: the fields it owns and took from others
// that its intent no longer sets (an edit dropped them). Under
// HandBack (and Restore, whose caller adds the previous values: LetGo.Restore)
// they go to their previous owners, down the chain past a departed
// fieldops object (Ledger.HandBackTo; a field that finds nobody stays
// without an owner); under
// Relinquish they stay without an owner; under Orphan every dropped field
// does. Without this the apply would remove them. Recorded fields that
// left the patch and that it does not own (the apply that would have
// taken them never happened, or another manager has taken them since)
// have nothing to give back: the record forgets them here, so
// status.previousOwners lists only what the patch took. dropped is empty
// when there is nothing to let go of.
func (d *Decision) GiveBack() (give ownershipcore.LetGo, dropped, forget *fieldset.Set) {
	return d.GiveBackFrom(d.Ledger)
}

// GiveBackFrom is GiveBack from the record l (the record as saved, when
// it differs from the one the decision read); l is left as it was.
func (d *Decision) GiveBackFrom(l *ownershipcore.Ledger) (give ownershipcore.LetGo, dropped, forget *fieldset.Set) {
	l = l.Copy()
	ours := d.Owners.Applied(d.Manager)
	if ours == nil {
		return ownershipcore.LetGo{}, fieldset.NewSet(), l.Recorded.Difference(d.IntentSet)
	}
	forget = l.Recorded.Difference(d.IntentSet).Difference(ours.Fields)
	l.Forget(forget)
	dropped = ours.Fields.Difference(d.IntentSet)
	if d.policy != v1alpha1.DeletionPolicyOrphan {
		dropped = dropped.Intersection(l.Taken())
	}
	if dropped.Leaves().Empty() {
		return ownershipcore.LetGo{}, fieldset.NewSet(), forget
	}
	forget = forget.Union(dropped)
	if d.policy == v1alpha1.DeletionPolicyRelinquish || d.policy == v1alpha1.DeletionPolicyOrphan {
		return ownershipcore.LetGo{Release: dropped}, dropped, forget
	}
	previous, ownerless := l.HandBackTo(d.Owners, d.Manager, dropped)
	return ownershipcore.LetGo{Previous: previous, Release: ownerless}, dropped, forget
}

// Inherited is the record of previous owners of another FieldPatch or
// ClusterFieldPatch, by its field manager, that a patch taking fields
// from it inherits (ownershipcore.Ledger.Inherit).
type Inherited struct {
	Manager string
	Ledger  *ownershipcore.Ledger
}

// RecordForced records, before an apply forces fields from other
// managers, who owned them (owners: the target as the apply saw it, or
// read fresh when the apiserver named an owner that copy did not show),
// on l (this Decision's Ledger, or a record read fresh), with the owners
// the records of inherited took those fields from, for the fields l did
// not record yet. The forced fields are no longer shared by anyone
// (Ledger.Unshare): their owners lose them to the patch, which a later
// Follow must not read as the owners letting them go. It reports whether
// l changed.
func RecordForced(l *ownershipcore.Ledger, owners ownershipcore.ManagedFields, forced *fieldset.Set, manager string, inherited ...Inherited) bool {
	fresh := forced.Difference(l.Recorded)
	changed := l.Record(owners, forced, manager)
	for _, c := range inherited {
		changed = l.Inherit(c.Manager, c.Ledger, fresh, manager) || changed
	}
	return l.Unshare(forced) || changed
}

// ForcedFields is the field set of conflicts.
func ForcedFields(cs []ownershipcore.Conflict) *fieldset.Set {
	s := fieldset.NewSet()
	for _, c := range cs {
		s.Insert(c.Path)
	}
	return s
}

// Taken are the fields an apply took without a record l (after: the
// managed fields it answered): fields of the intent the patch's entry
// holds now and the record does not have; they were unowned or shared
// with the same value, so nobody was displaced.
func (d *Decision) Taken(l *ownershipcore.Ledger, after ownershipcore.ManagedFields) *fieldset.Set {
	ours := after.Applied(d.Manager)
	if ours == nil {
		return fieldset.NewSet()
	}
	return ours.Fields.Intersection(d.IntentSet).Difference(l.Recorded)
}

// Applied is the record l after an apply (after: the managed fields it
// answered), a copy: the fields it took without force (Taken), with the owners
// the answer shows for them, then what the answer shows of the owners
// that share fields with the patch (Ledger.Observe). A take without force
// displaces nobody, so every other manager that owns such a field in the
// answer owned it (with the same value) just before the apply: that is
// its previous owner, whatever the copy the decision was made on showed.
// That copy (a cache) may be behind the apiserver, and an apply without
// force carries no resourceVersion: an owner that applied the same value
// in between would otherwise go unrecorded, and the field it owned
// before the patch would count as added, and leave at deletion.
func (d *Decision) Applied(l *ownershipcore.Ledger, after ownershipcore.ManagedFields) *ownershipcore.Ledger {
	l = l.Copy()
	l.Record(after, d.Taken(l, after), d.Manager)
	l.Observe(after)
	return l
}

// DeletionLetGo is what a patch's deletion gives up under policy, given
// the record of previous owners followed to the target (ledger), the
// target's managed fields now (owners) and the fields manager owns
// (ours): HandBack and Restore hand the fields the patch took back to
// their previous owners, following the chain past a previous owner that
// is a departed fieldops object to the owners it took them from, and
// leave in place without an owner those that find nobody that way
// (Ledger.HandBackTo); Relinquish leaves them in place without an owner;
// all three then relinquish the rest (the fields the patch added go).
// Orphan leaves every field in place without an owner. Restore's previous
// values (LetGo.Restore) are the caller's to add: they are in a Secret.
func DeletionLetGo(policy v1alpha1.DeletionPolicy, ledger *ownershipcore.Ledger, owners ownershipcore.ManagedFields, ours *fieldset.Set, manager string) ownershipcore.LetGo {
	switch policy {
	case v1alpha1.DeletionPolicyOrphan:
		return ownershipcore.LetGo{Release: ours}
	case v1alpha1.DeletionPolicyRelinquish:
		return ownershipcore.LetGo{Release: ledger.Taken(), Relinquish: true}
	}
	previous, ownerless := ledger.HandBackTo(owners, manager, nil)
	return ownershipcore.LetGo{Previous: previous, Release: ownerless, Relinquish: true}
}
