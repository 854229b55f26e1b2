/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchintent

import (
	"fmt"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// ReadLedger decodes the previous-owner record of st (status.previousOwners,
// with the owners through another patch that name it in via, and
// status.addedFields). A record made for another target UID (the target
// was deleted and recreated) does not count: it returns an empty ledger
// then.
//
// A record in the form of an earlier release (recordedFields, or an owner
// with fieldsV1 and sharedFieldsV1: v1alpha1.TargetLedger.Legacy) is read
// as that release read it: each owner's fields and shared fields from
// fieldsV1 and sharedFieldsV1, the recorded fields from recordedFields.
// Otherwise an owner's fields are its fields and shared ones together,
// and the recorded fields are the added ones with every owner's fields.
// Errors: a field set that does not parse, naming the status field.
func ReadLedger(st *v1alpha1.FieldPatchStatus, targetUID string) (*ownershipcore.Ledger, error) {
	l := ownershipcore.NewLedger()
	if st.TargetUID != targetUID {
		return l, nil
	}
	rec := v1alpha1.TargetLedger{AddedFields: st.AddedFields, RecordedFields: st.RecordedFields, PreviousOwners: st.PreviousOwners}
	legacy := rec.Legacy()
	taken := fieldset.NewSet()
	for _, p := range st.PreviousOwners {
		fields, shared, err := ownerFields(p, legacy)
		if err != nil {
			return nil, err
		}
		taken = taken.Union(fields)
		l.Entries = append(l.Entries, ownershipcore.LedgerEntry{
			ManagerKey: ownershipcore.ManagerKey{Manager: p.Manager, Operation: p.Operation, APIVersion: p.APIVersion, Subresource: p.Subresource},
			Via:        p.Via, Fields: fields, Shared: shared,
		})
	}
	if legacy {
		recorded, err := ownershipcore.DecodeFields(st.RecordedFields)
		if err != nil {
			return nil, fmt.Errorf("status.recordedFields: %w", err)
		}
		l.Recorded = recorded
		return l, nil
	}
	added, err := fieldset.ParseMembers(st.AddedFields)
	if err != nil {
		return nil, fmt.Errorf("status.addedFields: %w", err)
	}
	l.Recorded = added.Union(taken)
	return l, nil
}

// OwnerFields decodes the fields of one previous owner of a record: every
// field recorded as the manager's, and those of them it still co-owned
// when fieldops last looked (shared). An owner with fieldsV1 is read in
// the form of an earlier release (ReadLedger). Errors: a field set that
// does not parse, naming the manager.
func OwnerFields(p v1alpha1.PreviousOwner) (fields, shared *fieldset.Set, err error) {
	return ownerFields(p, p.FieldsV1 != nil)
}

// ownerFields is OwnerFields, the form chosen for the whole record: an
// owner without fieldsV1 in a record of the earlier form has none.
func ownerFields(p v1alpha1.PreviousOwner, legacy bool) (fields, shared *fieldset.Set, err error) {
	if legacy {
		if fields, err = ownershipcore.DecodeFields(p.FieldsV1); err != nil {
			return nil, nil, fmt.Errorf("status.previousOwners[%q]: %w", p.Manager, err)
		}
		// Absent (nothing shared, or a record older than the field): no
		// field counts as let go until fieldops has looked again.
		if shared, err = ownershipcore.DecodeFields(p.SharedFieldsV1); err != nil {
			return nil, nil, fmt.Errorf("status.previousOwners[%q].sharedFieldsV1: %w", p.Manager, err)
		}
		return fields, shared, nil
	}
	if shared, err = fieldset.ParseMembers(p.Shared); err != nil {
		return nil, nil, fmt.Errorf("status.previousOwners[%q].shared: %w", p.Manager, err)
	}
	taken, err := fieldset.ParseMembers(p.Fields)
	if err != nil {
		return nil, nil, fmt.Errorf("status.previousOwners[%q].fields: %w", p.Manager, err)
	}
	return taken.Union(shared), shared, nil
}

// WriteLedger encodes l into st for the target with targetUID, in path
// form (fieldset.FormatMembers): each owner's fields once, split into
// those it no longer co-owns (fields) and those it does (shared), and of
// the recorded fields only those no owner's entry holds (addedFields).
// The fields of the earlier form (recordedFields, and fieldsV1,
// sharedFieldsV1 and paths of an owner) are cleared. ReadLedger reads
// back l exactly as long as each entry's Shared is within its Fields and
// every entry's Fields within Recorded, which the Ledger's methods keep;
// a shared field outside its entry's Fields, which means nothing, is left
// out. Errors: a field set that cannot be serialized (fieldset.FormatMembers).
func WriteLedger(st *v1alpha1.FieldPatchStatus, l *ownershipcore.Ledger, targetUID string) error {
	owners := make([]v1alpha1.PreviousOwner, 0, len(l.Entries))
	taken := fieldset.NewSet()
	for _, e := range l.Entries {
		shared := e.Shared.Intersection(e.Fields)
		own, err := fieldset.FormatMembers(e.Fields.Difference(shared))
		if err != nil {
			return err
		}
		co, err := fieldset.FormatMembers(shared)
		if err != nil {
			return err
		}
		taken = taken.Union(e.Fields)
		owners = append(owners, v1alpha1.PreviousOwner{
			Manager: e.Manager, Operation: e.Operation, APIVersion: e.APIVersion, Subresource: e.Subresource, Via: e.Via,
			Fields: own, Shared: co,
		})
	}
	added, err := fieldset.FormatMembers(l.Recorded.Difference(taken))
	if err != nil {
		return err
	}
	if len(owners) == 0 {
		owners = nil
	}
	st.PreviousOwners, st.AddedFields, st.RecordedFields, st.TargetUID = owners, added, nil, targetUID
	return nil
}

// CompactRecord is l, a selector patch's record of one target, in the
// form WriteLedger writes: l itself when it is in that form already, else
// read (ReadLedger) and written again. Errors: those of ReadLedger.
func CompactRecord(l v1alpha1.TargetLedger) (v1alpha1.TargetLedger, error) {
	if !l.Legacy() {
		return l, nil
	}
	var st v1alpha1.FieldPatchStatus
	st.SetRecord(l)
	ledger, err := ReadLedger(&st, "")
	if err != nil {
		return l, err
	}
	if err := WriteLedger(&st, ledger, ""); err != nil {
		return l, err
	}
	return st.Record(), nil
}

// SameRecorded reports whether a and b record the same fields for the
// same target (the recorded fields, whatever their form); a record that
// does not parse is not the same as any.
func SameRecorded(a, b *v1alpha1.FieldPatchStatus) bool {
	if a.TargetUID != b.TargetUID {
		return false
	}
	la, err := ReadLedger(a, a.TargetUID)
	if err != nil {
		return false
	}
	lb, err := ReadLedger(b, b.TargetUID)
	if err != nil {
		return false
	}
	return la.Recorded.Equals(lb.Recorded)
}

// SameLedger reports whether two statuses hold the same record of
// previous owners for the target with uid (decoded: the encoding of a
// field set may differ in key order).
func SameLedger(a, b *v1alpha1.FieldPatchStatus, uid string) bool {
	la, err := ReadLedger(a, uid)
	if err != nil {
		return false
	}
	lb, err := ReadLedger(b, uid)
	if err != nil {
		return false
	}
	if a.TargetUID != b.TargetUID && (len(la.Entries) > 0 || !la.Recorded.Empty()) {
		return false
	}
	if !la.Recorded.Equals(lb.Recorded) || len(la.Entries) != len(lb.Entries) {
		return false
	}
	for i := range la.Entries {
		ea, eb := la.Entries[i], lb.Entries[i]
		if ea.ManagerKey != eb.ManagerKey || ea.Via != eb.Via || !ea.Fields.Equals(eb.Fields) || !ea.Shared.Equals(eb.Shared) {
			return false
		}
	}
	return true
}
