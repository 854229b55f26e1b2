/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/notes"
	"github.com/fieldops/fieldops/controllers/internal/watch"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/internal/patchplan"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// executor sends a plan's writes (patchplan.Execute, through its
// targetWriter) to a target through the ownership core's guarded commit
// (Applier.Apply and LetGo), each after the records it needs (records):
// the record first, the give-back of dropped fields, the apply, and a
// deletion's give-back (patchplan.MakeDeletion). It is the one write
// path of this controller to targets, for a patch with spec.target, each
// target of a selector patch, deletion and expiry alike.
type executor struct {
	records *records
	// watches guard the target cache against our own writes (nil before
	// SetupWithManager).
	watches *watch.Watches
	// outcomes are the conflicts the apiserver last answered, by unit
	// (apply).
	outcomes sync.Map
	// controller is the controller label of the fieldops_ metrics.
	controller string
}

// targetWriter sends the writes of a pass's plan (patchplan.Writer):
// the record and previous values through records, the give-back and the
// apply through the ownership core's guarded commit (the account's
// Applier).
type targetWriter struct {
	e *executor
	p *pass
}

// writer is the patchplan.Writer of p.
func (e *executor) writer(p *pass) patchplan.Writer { return targetWriter{e, p} }

func (w targetWriter) SaveRecord(ctx context.Context, owners ownershipcore.ManagedFields, present *fieldset.Set, change func(*ownershipcore.Ledger) bool) (*ownershipcore.Ledger, bool, error) {
	return w.e.records.saveRecord(ctx, w.p, owners, present, change)
}

func (w targetWriter) SavePreviousValues(ctx context.Context, decidedOn *unstructured.Unstructured, forced []ownershipcore.Conflict) error {
	return w.e.records.savePreviousValues(ctx, w.p, decidedOn, forced)
}

// LetGo lets go of the fields that left the patch (Decision.GiveBack: as
// deletion would let go of them, values stay), in one write guarded by
// the target's resourceVersion.
func (w targetWriter) LetGo(ctx context.Context, live *unstructured.Unstructured, give ownershipcore.LetGo) (ownershipcore.Result, ownershipcore.Outcome, error) {
	target := w.p.ref.DeepCopy()
	target.SetUID(live.GetUID())
	return w.p.applier.LetGo(ctx, target, live, w.p.manager, give)
}

// RecordTakes records the owners of fields the apply forces that the
// plan did not foresee: their previous values, then their owners
// (recordTakes).
func (w targetWriter) RecordTakes(ctx context.Context, decidedOn *unstructured.Unstructured, forced []ownershipcore.Conflict) (func(*ownershipcore.Ledger) bool, bool, error) {
	if err := w.e.records.savePreviousValues(ctx, w.p, decidedOn, forced); err != nil {
		return nil, false, err
	}
	return w.e.records.recordTakes(ctx, w.p, forced)
}

// StoredRecord is the record as the apiserver holds it, when the cached
// patch the plan was made from is behind it (refreshRecord).
func (w targetWriter) StoredRecord(ctx context.Context) (*ownershipcore.Ledger, bool) {
	if !w.e.records.refreshRecord(ctx, w.p.unit) {
		return nil, false
	}
	l, err := patchintent.ReadLedger(w.p.st, w.p.uid())
	return l, err == nil
}

// Apply applies the intent through the target watches (writeTarget). An
// outcome only the apiserver could give (a conflict with an entry of
// another version, which the local decision leaves out) is asked for
// once: the same intent on the same target version, for the same
// generation, gets the same answer without a request, instead of a
// refused apply (Fail) or a refused apply and an empty one (Yield) on
// every reconcile.
func (w targetWriter) Apply(ctx context.Context, intent *unstructured.Unstructured, opts ownershipcore.ApplyOptions) (ownershipcore.Result, error) {
	e, p := w.e, w.p
	key := e.outcomeKey(p.unit)
	seen := outcome{rv: opts.Live.GetResourceVersion(), gen: p.gen()}
	// The intent is encoded only to compare with or keep an outcome, not
	// on every reconcile.
	if v, ok := e.outcomes.Load(key); ok {
		if last := v.(outcome); last.rv == seen.rv && last.gen == seen.gen && last.intent == intentKey(intent) {
			return last.res, last.err
		}
		e.outcomes.Delete(key)
	}
	var res ownershipcore.Result
	var err error
	e.writeTarget(p, func() *unstructured.Unstructured {
		res, err = p.applier.Apply(ctx, intent, opts)
		var first *ownershipcore.RecordFirstError
		switch {
		case err == nil && res.Wrote():
			return res.Object // its watch event is our own write
		case errors.As(err, &first) && first.Plan.Wrote():
			return first.Object // the decision's own write
		}
		return nil
	})
	var refused *ownershipcore.ConflictError
	answered := errors.As(err, &refused) || err == nil && !res.Wrote() && (len(res.Yielded) > 0 || len(res.Forced) > 0)
	if answered && p.spec.ConflictPolicy != v1alpha1.ConflictPolicyPlugin {
		seen.intent, seen.res, seen.err = intentKey(intent), res, err
		e.outcomes.Store(key, seen)
	}
	return res, err
}

// forgetOutcomes forgets the outcomes of the patch key: its own, and
// those of each target of a selector patch (outcomeKey).
func (e *executor) forgetOutcomes(key client.ObjectKey) {
	e.outcomes.Delete(key)
	e.outcomes.Range(func(k, _ any) bool {
		if o := k.(client.ObjectKey); o.Namespace == key.Namespace && strings.HasPrefix(o.Name, key.Name+"/") {
			e.outcomes.Delete(k)
		}
		return true
	})
}

// outcomeKey is where the outcome of obj's apply is kept: one per patch,
// one per target of a selector patch.
func (e *executor) outcomeKey(u *unit) client.ObjectKey {
	if u.target != nil {
		return targetOutcomeKey(u.obj, u.target.uid)
	}
	return client.ObjectKeyFromObject(u.obj)
}

// targetOutcomeKey is where the outcome of the apply to the target uid
// of the selector patch obj is kept.
func targetOutcomeKey(obj client.Object, uid types.UID) client.ObjectKey {
	return client.ObjectKey{Namespace: obj.GetNamespace(), Name: obj.GetName() + "/" + string(uid)}
}

// writeTarget runs write, p's write of its target, through the target
// watches (watch.Watches.Write); a target's pass of a selector patch
// writes directly: the patch's own watch knows its writes
// (selectorWatch.wrote).
func (e *executor) writeTarget(p *pass, write func() *unstructured.Unstructured) {
	if p.target != nil {
		write()
		return
	}
	e.watches.Write(p.obj, p.live, write)
}

// gaveBackEvent reports the give-back of the fields that left the patch
// (out: what it did; nothing when it changed nothing).
func (e *executor) gaveBackEvent(p *pass, out ownershipcore.Outcome) {
	given := fieldset.NewSet()
	if out.Moved != nil {
		given = given.Union(out.Moved)
	}
	if out.Released != nil {
		given = given.Union(out.Released)
	}
	if given.Empty() {
		return
	}
	p.event(corev1.EventTypeNormal, ReasonHandedBack, "%d fields left the patch and were given back (%s%s): %s", len(patchintent.Leaves(given)), policyOrDefault(p.spec.DeletionPolicy), restoredNote(out), strings.Join(firstN(patchintent.Leaves(given), 5), ", "))
}

// giveBack runs the deletion policy on the target ref (which carries the
// recorded UID) in one guarded write (ownershipcore.Applier.LetGo): the
// target is read from the target cache (a copy without our entry is read
// again fresh), the policy's LetGo is computed from it and committed as
// one JSON patch guarded by its UID and resourceVersion (a stale copy
// costs a refused write and a fresh read). One event reports what
// happened.
//
// cached, when not nil, is the target as a watch holds it (a selector
// patch's), read instead of the target cache.
func (e *executor) giveBack(ctx context.Context, applier *ownershipcore.Applier, u *unit, ref *unstructured.Unstructured, manager string, cached *unstructured.Unstructured) error {
	st, policy := u.st, u.spec.DeletionPolicy
	live, err := cached, error(nil)
	if live == nil {
		if live, err = applier.Get(ctx, ref); err != nil {
			return targetReadError{err}
		}
	}
	if live == nil || live.GetUID() != ref.GetUID() || !ownershipcore.HasManager(live, manager) {
		// Gone, replaced, or no entry of ours: make sure on a fresh read
		// (the cache may lag behind our last write).
		if live, err = applier.GetFresh(ctx, ref); err != nil {
			return targetReadError{err}
		}
		if live == nil {
			return nil
		}
		if live.GetUID() != ref.GetUID() {
			return nil // replaced: the object we wrote to is gone
		}
	}
	if !ownershipcore.HasManager(live, manager) {
		return nil
	}
	var previous *unstructured.Unstructured
	if policy == v1alpha1.DeletionPolicyRestore {
		if previous, err = e.records.readPreviousValues(ctx, applier, u, st.TargetUID); err != nil {
			return err
		}
	}
	plan, err := patchplan.MakeDeletion(applier, patchplan.DeletionInput{Policy: policy, Status: st, Live: live, Manager: manager, PreviousValues: previous})
	if err != nil {
		return err
	}
	out, err := patchplan.Execute(ctx, plan, letGoWriter{applier: applier, ref: ref, manager: manager})
	if err != nil {
		return errors.Unwrap(err)
	}
	g := plan.GiveBack
	e.reportChangedSince(u, applier, live, manager, g.Restore)
	e.reportGiveBack(u, policy, ref, manager, out.GaveBack)
	return nil
}

// letGoWriter sends a deletion's plan (patchplan.MakeDeletion): its one
// write, the give-back to the target ref (which carries the recorded
// UID). A deletion saves no record and applies nothing: the other writes
// of a patchplan.Writer are errors.
type letGoWriter struct {
	applier *ownershipcore.Applier
	ref     *unstructured.Unstructured
	manager string
}

var errNotDeletion = errors.New("a deletion's plan sends its give-back only")

func (w letGoWriter) LetGo(ctx context.Context, live *unstructured.Unstructured, give ownershipcore.LetGo) (ownershipcore.Result, ownershipcore.Outcome, error) {
	return w.applier.LetGo(ctx, w.ref, live, w.manager, give)
}

func (letGoWriter) SaveRecord(context.Context, ownershipcore.ManagedFields, *fieldset.Set, func(*ownershipcore.Ledger) bool) (*ownershipcore.Ledger, bool, error) {
	return nil, false, errNotDeletion
}

func (letGoWriter) SavePreviousValues(context.Context, *unstructured.Unstructured, []ownershipcore.Conflict) error {
	return errNotDeletion
}

func (letGoWriter) Apply(context.Context, *unstructured.Unstructured, ownershipcore.ApplyOptions) (ownershipcore.Result, error) {
	return ownershipcore.Result{}, errNotDeletion
}

func (letGoWriter) RecordTakes(context.Context, *unstructured.Unstructured, []ownershipcore.Conflict) (func(*ownershipcore.Ledger) bool, bool, error) {
	return nil, false, errNotDeletion
}

func (letGoWriter) StoredRecord(context.Context) (*ownershipcore.Ledger, bool) { return nil, false }

// reportGiveBack counts a deletion's steps and emits one event for them:
// HandedBack when fields went back to their previous owners, else
// Relinquished.
func (e *executor) reportGiveBack(u *unit, policy v1alpha1.DeletionPolicy, ref *unstructured.Unstructured, manager string, out ownershipcore.Outcome) {
	kind, name := ref.GetKind(), objectName(ref)
	var done []string
	step := func(fields *fieldset.Set, metricStep, format string, args ...interface{}) {
		if n := patchintent.CountLeaves(fields); n > 0 {
			metrics.HandBacksTotal.WithLabelValues(e.controller, kind, metricStep).Inc()
			done = append(done, fmt.Sprintf(format, append([]interface{}{n}, args...)...))
		}
	}
	reason := ReasonRelinquished
	switch {
	case !out.Restored.Empty():
		reason = ReasonRestored
	case !out.Moved.Empty():
		reason = ReasonHandedBack
	}
	step(out.Restored, metrics.StepRestore, "restored %d fields of %s %s to the values they held before the patch", kind, name)
	step(out.Moved, metrics.StepHandBack, "handed %d fields of %s %s back to their previous owners", kind, name)
	what := "the patch took"
	if policy == v1alpha1.DeletionPolicyOrphan {
		what = "of the patch (Orphan)"
	}
	step(out.Released, metrics.StepRelinquish, "left %d fields "+what+" on %s %s in place without an owner", kind, name)
	step(out.Removed, metrics.StepRelinquish, "relinquished the fields of field manager %[2]q on %[3]s %[4]s: the %[1]d fields the patch added were removed", manager, kind, name)
	step(out.Kept, metrics.StepRelinquish, "released the fields of field manager %[2]q on %[3]s %[4]s: %[1]d fields the patch added could not be removed (%[5]s) and stay without an owner", manager, kind, name, out.Why)
	if len(done) > 0 {
		u.event(corev1.EventTypeNormal, reason, "%s", strings.Join(done, "; "))
	}
}

// reportChangedSince records, for a Restore, which fields with previous
// values other managers wrote since the patch did (they keep their values
// and owners), naming each manager: a Warning event, and a note in the
// Ready condition while the deletion lasts. Paths and managers only,
// never a value.
func (e *executor) reportChangedSince(u *unit, applier *ownershipcore.Applier, live *unstructured.Unstructured, manager string, values *unstructured.Unstructured) {
	if values == nil {
		return
	}
	s, err := ownershipcore.NewState(live, true)
	if err != nil {
		return
	}
	changed, err := applier.Model().ChangedSince(s, manager, values)
	if err != nil || len(changed) == 0 {
		return
	}
	msg := "not restored, written since the patch by another field manager: " + describeChanged(changed)
	setWaiting(u.st, u.gen(), ReasonChangedSince, notes.Condition(msg))
	u.event(corev1.EventTypeWarning, ReasonChangedSince, "%s", msg)
}

// observe records an apply in the fieldops_ metrics: fieldops_apply_total
// counts writes and failed attempts, not an apply that changed nothing.
func (e *executor) observe(kind string, res ownershipcore.Result, err error, drifter string) {
	controller := e.controller
	action := string(res.Action)
	var conflictErr *ownershipcore.ConflictError
	switch {
	case errors.As(err, &conflictErr):
		action = string(ownershipcore.ActionConflicted)
		for _, c := range conflictErr.Conflicts {
			metrics.ConflictsTotal.WithLabelValues(controller, c.Manager).Inc()
		}
	case err != nil:
		action = metrics.ActionFailed
	}
	for _, c := range res.Forced {
		metrics.ConflictsTotal.WithLabelValues(controller, c.Manager).Inc()
	}
	for _, c := range res.Yielded {
		metrics.ConflictsTotal.WithLabelValues(controller, c.Manager).Inc()
	}
	if action != string(ownershipcore.ActionUnchanged) {
		// Writes and failed attempts only: a no-op apply is not counted.
		metrics.ApplyTotal.WithLabelValues(controller, kind, action).Inc()
	}
	if err == nil && drifter != "" && res.Action == ownershipcore.ActionConfigured {
		metrics.DriftTotal.WithLabelValues(controller, kind).Inc()
	}
}
