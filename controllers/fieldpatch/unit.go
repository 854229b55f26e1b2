/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/notes"
)

// unit is what one run of the single-target phases (intent, drift,
// plan, execute, applied, report) works on: a patch with spec.target, or
// one target of a selector patch. The phases read spec and read and write
// st, never the status of obj directly: the targets of a selector patch
// run at once, each on its own record.
type unit struct {
	// obj is the patch; read only.
	obj v1alpha1.Patcher
	// spec is obj's spec; for a target of a selector patch, a copy whose
	// target names it (an apply patch's intent is named after it).
	spec *v1alpha1.FieldPatchSpec
	// st is the status the phases judge and record into: obj's own, or
	// the target's record and conditions as the selector patch keeps them
	// (targetUnit).
	st *v1alpha1.FieldPatchStatus
	// target is the selector patch's target; nil for a patch with
	// spec.target.
	target *selectorTarget
	// sink records an event's note (already cleaned by notes.Event).
	sink func(typ, reason, note string)
}

// selectorTarget is one target of a selector patch, as its unit runs.
type selectorTarget struct {
	uid types.UID
	// name is "Kind namespace/name", the prefix of its events.
	name string
	// stored is the target's record as stored (nil: none).
	stored *targetEntry
	// pending is the record to save before the target's write
	// (errRecordFirst).
	pending *v1alpha1.FieldPatchStatus
}

// patchUnit is the unit of a patch with spec.target: its own spec and
// status, its events recorded on it.
func (r *Reconciler) patchUnit(obj v1alpha1.Patcher) *unit {
	return &unit{obj: obj, spec: obj.PatchSpec(), st: obj.PatchStatus(), sink: func(typ, reason, note string) {
		if r.Recorder != nil {
			r.Recorder.Eventf(obj, nil, typ, reason, "Reconcile", "%s", note)
		}
	}}
}

// gen is the patch's generation.
func (u *unit) gen() int64 { return u.obj.GetGeneration() }

// event records an event of the unit (notes.Event cleans and bounds its
// note): on the patch, or, for a target of a selector patch, in the
// reconcile's eventLog, which records one per reason.
func (u *unit) event(typ, reason, format string, args ...interface{}) {
	u.sink(typ, reason, notes.Event(format, args...))
}
