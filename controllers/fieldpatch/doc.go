/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package fieldpatch reconciles FieldPatch and ClusterFieldPatch: it applies
// a patch to an object fieldops does not own under a field manager of its
// own, records the previous owner of every field before the first write,
// repairs drift on those fields from watch events, reports managers that
// keep taking fields back (with exponential backoff, never a write loop),
// and on delete hands each field back to its previous owner and relinquishes
// the fields it added. All ownership logic lives in ownershipcore.
//
// The controller's parts, each holding only what it uses:
//
//   - Reconciler (controller.go): setup, the shared skeleton, the phases
//     that pick the target and the account, expiry and deletion;
//   - unit (unit.go): what one run of the single-target phases works on,
//     a patch with spec.target or one target of a selector patch (the
//     spec naming it, its record as status, where its events go);
//   - runner (run.go): the single-target phases of a unit: decide the
//     intent (patchintent.Decide), look for drift, make the plan
//     (patchplan.MakeWith: the record, the give-back, the apply as the
//     core decides it with the conflict strategy), run it
//     (patchplan.Execute), report;
//   - executor (exec.go): the patchplan.Writer of a unit, and a
//     deletion's plan (patchplan.MakeDeletion): every write to a target,
//     through the core's guarded commit, each after the records it
//     needs;
//   - records (records.go, previous.go): the record of previous owners
//     in the patch's status and the previous values in its Secret,
//     written before the target write that needs them;
//   - selectorReconciler (selector*.go): a selector patch as a loop over
//     its targets' units, their records saved at once.
package fieldpatch
