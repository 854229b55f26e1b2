/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchintent

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/ownershipcore"
)

// ReadLedger decodes the previous-owner record of st (status.previousOwners,
// with the owners through another patch that name it in via, and
// status.recordedFields). A record made for another target UID (the
// target was deleted and recreated) does not count: it returns an empty
// ledger then.
func ReadLedger(st *v1alpha1.FieldPatchStatus, targetUID string) (*ownershipcore.Ledger, error) {
	l := ownershipcore.NewLedger()
	if st.TargetUID != targetUID {
		return l, nil
	}
	recorded, err := ownershipcore.DecodeFields(st.RecordedFields)
	if err != nil {
		return nil, fmt.Errorf("status.recordedFields: %w", err)
	}
	l.Recorded = recorded
	for _, p := range st.PreviousOwners {
		fields, err := ownershipcore.DecodeFields(p.FieldsV1)
		if err != nil {
			return nil, fmt.Errorf("status.previousOwners[%q]: %w", p.Manager, err)
		}
		// Absent (nothing shared, or a record older than the field): no
		// field counts as let go until fieldops has looked again.
		shared, err := ownershipcore.DecodeFields(p.SharedFieldsV1)
		if err != nil {
			return nil, fmt.Errorf("status.previousOwners[%q].sharedFieldsV1: %w", p.Manager, err)
		}
		l.Entries = append(l.Entries, ownershipcore.LedgerEntry{
			ManagerKey: ownershipcore.ManagerKey{Manager: p.Manager, Operation: p.Operation, APIVersion: p.APIVersion, Subresource: p.Subresource},
			Via:        p.Via, Fields: fields, Shared: shared,
		})
	}
	return l, nil
}

// WriteLedger encodes l into st for the target with targetUID.
func WriteLedger(st *v1alpha1.FieldPatchStatus, l *ownershipcore.Ledger, targetUID string) error {
	owners := make([]v1alpha1.PreviousOwner, 0, len(l.Entries))
	for _, e := range l.Entries {
		f, err := ownershipcore.EncodeFields(e.Fields)
		if err != nil {
			return err
		}
		var shared *metav1.FieldsV1
		if !e.Shared.Empty() {
			if shared, err = ownershipcore.EncodeFields(e.Shared); err != nil {
				return err
			}
		}
		owners = append(owners, v1alpha1.PreviousOwner{
			Manager: e.Manager, Operation: e.Operation, APIVersion: e.APIVersion, Subresource: e.Subresource, Via: e.Via,
			FieldsV1: f, SharedFieldsV1: shared, Paths: ownershipcore.FormatSet(e.Fields),
		})
	}
	recorded, err := ownershipcore.EncodeFields(l.Recorded)
	if err != nil {
		return err
	}
	st.PreviousOwners, st.RecordedFields, st.TargetUID = owners, recorded, targetUID
	if len(owners) == 0 {
		st.PreviousOwners = nil
	}
	return nil
}
