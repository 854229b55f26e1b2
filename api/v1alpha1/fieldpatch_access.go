/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import "sigs.k8s.io/controller-runtime/pkg/client"

// Patcher is what FieldPatch and ClusterFieldPatch have in common, so that
// one controller serves both.
// +kubebuilder:object:generate=false
type Patcher interface {
	client.Object
	// PatchSpec returns the spec, for reading.
	PatchSpec() *FieldPatchSpec
	// PatchStatus returns the status, for reading and writing.
	PatchStatus() *FieldPatchStatus
	// TargetNamespace is the namespace the target is looked up in: the
	// patch's own namespace for a FieldPatch whose target names none.
	TargetNamespace() string
}

var (
	_ Patcher = &FieldPatch{}
	_ Patcher = &ClusterFieldPatch{}
)

// PatchSpec implements Patcher.
func (p *FieldPatch) PatchSpec() *FieldPatchSpec { return &p.Spec }

// PatchStatus implements Patcher.
func (p *FieldPatch) PatchStatus() *FieldPatchStatus { return &p.Status }

// TargetNamespace implements Patcher.
func (p *FieldPatch) TargetNamespace() string {
	if p.Spec.Target.Namespace == "" {
		return p.Namespace
	}
	return p.Spec.Target.Namespace
}

// PatchSpec implements Patcher.
func (p *ClusterFieldPatch) PatchSpec() *FieldPatchSpec { return &p.Spec }

// PatchStatus implements Patcher.
func (p *ClusterFieldPatch) PatchStatus() *FieldPatchStatus { return &p.Status }

// TargetNamespace implements Patcher.
func (p *ClusterFieldPatch) TargetNamespace() string { return p.Spec.Target.Namespace }

// RecordStatus is the record of previous owners ts holds for the target
// with uid, as the status of a single-target patch holds it (targetUID,
// recordedFields, previousOwners): what the controller, and kubectl
// fieldops plan, continue for that target. Empty when ts has none.
func (ts *TargetsStatus) RecordStatus(uid string) FieldPatchStatus {
	var st FieldPatchStatus
	if ts == nil {
		return st
	}
	for _, r := range ts.Records {
		if r.UID != uid {
			continue
		}
		st.TargetUID = uid
		if r.Ledger != nil && int(*r.Ledger) >= 0 && int(*r.Ledger) < len(ts.Ledgers) {
			st.SetRecord(ts.Ledgers[*r.Ledger])
		}
		break
	}
	return st
}

// Record is a copy of the record of previous owners st holds
// (addedFields, previousOwners, and the deprecated recordedFields), as a
// selector patch keeps it per target. It leaves out targetUID, which
// says which target the record is of.
func (st *FieldPatchStatus) Record() TargetLedger {
	l := TargetLedger{AddedFields: st.AddedFields, RecordedFields: st.RecordedFields, PreviousOwners: st.PreviousOwners}
	return *l.DeepCopy()
}

// SetRecord replaces the record of previous owners st holds with a copy
// of l (Record's inverse); targetUID is left as it is.
func (st *FieldPatchStatus) SetRecord(l TargetLedger) {
	c := l.DeepCopy()
	st.AddedFields, st.RecordedFields, st.PreviousOwners = c.AddedFields, c.RecordedFields, c.PreviousOwners
}

// Empty reports a record with no field: no added field, no previous
// owner, and no deprecated recordedFields.
func (l *TargetLedger) Empty() bool {
	return len(l.AddedFields) == 0 && l.RecordedFields == nil && len(l.PreviousOwners) == 0
}

// Legacy reports a record in the form of an earlier release: it holds
// recordedFields, or a previous owner with fieldsV1.
func (l *TargetLedger) Legacy() bool {
	if l.RecordedFields != nil {
		return true
	}
	for _, o := range l.PreviousOwners {
		if o.FieldsV1 != nil {
			return true
		}
	}
	return false
}
