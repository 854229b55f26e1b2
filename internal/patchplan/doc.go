/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package patchplan is the decision of one reconcile of a FieldPatch or
// ClusterFieldPatch on one target, as a value (Plan), and its executor
// (Execute). The controller (a patch with spec.target, each target of a
// selector patch, deletion and expiry) and kubectl fieldops plan make
// the same Plan (MakeWith: what the plan depends on is read first, then
// Make, a pure function of it, decides) and run it with the same
// Execute; only the Writer differs: the controller's writes, the plan's
// dry runs.
//
// The order of a plan's writes is the order Server-Side Apply ownership
// needs (see the Kubernetes docs, "Server-Side Apply", "Transferring
// ownership"): the record of previous owners reaches the patch's status
// before any write that takes their fields (a forced apply removes them
// from managedFields, and a record saved after it could be lost), the
// fields that left the patch are let go of before the apply (which would
// otherwise remove them), and the apply comes last.
package patchplan

// Write is one write of a plan, in the order Execute sends them; each is
// one request (Outcome.Sent lists the requests a run sent).
type Write string

const (
	// WriteRecord writes the record of previous owners to the patch's
	// status (or, for a target of a selector patch, its target's record),
	// guarded by the patch's resourceVersion, before a target write.
	WriteRecord Write = "Record"
	// WritePreviousValues writes the values of the fields an apply
	// forces to the patch's Secret of previous values (deletionPolicy
	// Restore), before that apply.
	WritePreviousValues Write = "PreviousValues"
	// WriteGiveBack lets go of the fields that left the patch (handed
	// back, or released), values kept: one JSON patch of the target's
	// managed fields guarded by its resourceVersion.
	WriteGiveBack Write = "GiveBack"
	// WriteApply is the Server-Side Apply of the intent.
	WriteApply Write = "Apply"
	// WriteRestore is the Server-Side Apply of a Restore's previous
	// values, sent by the give-back before its JSON patch (a value the
	// managed-fields patch changed would be recorded as fieldops's).
	WriteRestore Write = "Restore"
	// WriteDrop is the ownership core's release, before the apply, of
	// the list items and maps the intent drops that hold another
	// manager's fields (a JSON patch of managed fields; see
	// ownershipcore.Applier.Apply).
	WriteDrop Write = "Drop"
)
