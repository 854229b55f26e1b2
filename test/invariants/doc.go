/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package invariants is a seeded, randomized differential test of the
// ownership invariants fieldops promises, in the spirit of
// structured-merge-diff's own tests: random sequences of steps against the
// real kube-apiserver (internal/localcp), each checked after every step
// against a model of who owned what.
//
// # Sequences
//
// A sequence (Generate) picks a target — a ConfigMap, a Deployment, or a
// Widget, the test CRD with every list and map type, served in v1 and v2
// (test/testdata/crds/invariants.example.com_widgets.yaml) — which the
// manager "base" creates. Other managers' requests use v2 a third of the
// time, so managed fields entries carry both (FieldPatches target v1). Then 4 to -steps random steps (Step.String reads
// like a log line):
//
//   - other field managers ("helm", "ops", "hpa") apply an intent with
//     Server-Side Apply, with or without force, dropping fields or
//     relinquishing everything with an empty intent, or update fields
//     (change or remove) with a JSON merge patch or a JSON patch;
//   - a FieldPatch of any type (Apply, Merge, JSON, StrategicMerge on
//     built-in kinds), conflictPolicy and deletionPolicy is created,
//     edited (fields added, dropped, changed) and deleted;
//   - ManagedWorkloads apply parts of the target;
//   - the fieldops manager restarts.
//
// Every sequence ends by deleting what fieldops still holds.
//
// # Signals, not sleeps
//
// Each run has its own namespace and its own fieldops manager
// (controllers.SetupWith) whose cache watches only that namespace, whose
// writes are counted (testkit.WriteCounter) and whose log tells when a
// reconcile of an object starts and ends. After a step the test waits for
// the deleted object to be gone, then settles: it waits until the
// manager's cache holds the target as the apiserver has it, touches every
// live FieldPatch and workload (an annotation: a reconcile) and waits
// until a reconcile of each, started after the touch, has ended; it
// repeats until a round in which fieldops wrote nothing.
//
// # Invariants
//
// After every step, comparing the target before the step, just after the
// other manager's request (the apiserver's response), and after fieldops
// settled:
//
//  1. No manager other than fieldops lost a field it owned, unless its
//     loss came with the step's own request (the actor took, removed or
//     relinquished it) or a live FieldPatch with conflictPolicy Force, or
//     a workload, holds it now.
//  2. After a FieldPatch's (or workload's) deletion, the object is gone
//     within the timeout and no managedFields entry of its field manager
//     remains on the target.
//  3. A field a FieldPatch took from other managers keeps its value when
//     the patch lets it go (deleted, or the field dropped from its patch),
//     with either deletionPolicy; with HandBack it belongs to those
//     managers again.
//  4. A field a FieldPatch added (nobody owned it before) is gone when the
//     patch lets it go, unless someone else owns it.
//  5. A field its previous owner removed or relinquished while the patch
//     held it does not come back to that owner when the patch lets it go.
//  6. Writes are bounded: fieldops reaches a round that writes nothing
//     within a few rounds of one reconcile each (a count, not a clock).
//  7. No FieldPatch ends a step InvalidPatch or ApplyFailed: the generator
//     only makes patches that fit the target (JSON pointers whose parents
//     base keeps, merge patches through maps only), so such a reason is
//     fieldops turning a valid patch invalid (a non-idempotent JSON
//     operation applied twice) or an error that does not heal.
//  8. The ownership core's model predicts the apiserver: another
//     manager's request (an apply with or without force, an empty apply,
//     a JSON merge patch, a JSON patch), predicted with ownershipcore's
//     Model (Apply, or Update of the object as the patch makes it) from
//     the target as read just before it, is answered with that prediction
//     (Model.Compare: values and managed fields, times and server-set
//     metadata aside, what the apiserver's defaulting adds accepted); and
//     no write of fieldops is answered otherwise than its Applier
//     predicted (the Applier's comparisons, logged as
//     ownershipcore.MessageDivergence). The violation names the request.
//     Applies are sent with the resourceVersion they were read at (and
//     sent again when fieldops wrote in between), as updates are, so that
//     the prediction starts from the object the apiserver changed.
//  9. A field a FieldPatch with deletionPolicy Restore took from other
//     managers holds, once the patch lets it go, its value from just
//     before the patch first took it and belongs to those managers again,
//     or another manager (not fieldops) wrote it since and holds it.
//     TestOwnershipInvariants draws Restore for half of the HandBack
//     patches (GenerateWith, Options.Restore) and ends half of the
//     patches by expiry (Options.Expire: spec.expiresAt set to a time
//     past, the patch deletes itself), and makes half of the patches
//     select their target (spec.targetSelector, Options.Selector) instead
//     of naming it; the regression corpus replays Generate's sequences as
//     they were found.
//  10. The plan predicts the controller. Before every step that creates,
//     edits, deletes or expires a FieldPatch, the patch is planned as
//     kubectl fieldops plan plans it (internal/fieldplan, with the run's
//     manager's settings); once fieldops settled, the patch's Ready
//     reason, its record of previous owners (of the target, or of its
//     target among a selector patch's records) and the fields its field
//     manager owns are what the plan said, and after a deletion each
//     field's value and owners are. So is the order of the writes
//     fieldops sent for the patch from the plan to the end of settling
//     (the plan's Writes: Record, PreviousValues, GiveBack, Apply), read
//     from the manager's log of write requests (testkit.WriteLog;
//     writeorder.go says what counts; -write-order-notes makes a
//     difference a note). The step's note says when the check
//     cannot apply: another fieldops object wrote the target while
//     fieldops settled, or a contest decided the reconcile (the manager's
//     history of repairs, which no plan sees). Sequences with faults are
//     not planned: a failed write is no decision.
//
// A field's previous owners are those just before the patch first took
// it; a field nobody owned then is one the patch added, even if another
// manager takes it in between and the patch takes it back (drift repair):
// a contest changes no record (docs/fieldpatch.md), and (4) holds for it
// (under faults, a lost status write may lose the record that the patch
// added it, so then it is not checked). When a contest happened to a
// taken field, the hand-back goes to the first owner or, when that owner
// lost the field to another hand, to the one in between: then (3) checks
// only the value. When a third manager removed the field while the
// patch held it, or after another manager took it from the patch, only (5)
// is checked. A previous owner that lets the field
// go (removes or relinquishes it) is one no more, even if it takes the
// field again later: it is then a manager in between (docs/fieldpatch.md,
// "The record follows the apiserver").
//
// # Running
//
// `make test` runs 200 sequences from seed 1 (each step of which also checks invariant 10). `make fuzz SEED=... N=...`
// runs more (test flags -seed, -sequences, -steps, -workers, -shrink,
// -shrink-budget). Sequence i has seed SEED+i, so `make fuzz SEED=<seed>
// N=1` replays one. A failure prints the seed and the shortest failing
// sequence found by Shrink: the failing prefix, then steps dropped one at
// a time while an invariant still breaks.
//
// # Faults
//
// TestOwnershipInvariantsUnderFaults runs sequences (40 from seed 1000001
// in `make test`; `make fuzz-faults SEED=... N=...` for more, flags
// -fault-seed, -fault-sequences, -faults) with a share of the manager's
// writes failing from each step's request to the first round of settle:
// half refused before they reach the apiserver, half done and their answer
// lost, which is what a crash between two writes leaves behind. From the
// second round on, no write fails, and the invariants above must hold all
// the same. A step's note says how many writes failed.
package invariants
