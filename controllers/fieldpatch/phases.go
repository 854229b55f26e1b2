/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/conditions"
	"github.com/fieldops/fieldops/controllers/internal/notes"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/internal/patchtarget"
	"github.com/fieldops/fieldops/ownershipcore"
)

// pass is the state the phases of one reconcile of one patch share, in
// the order the phases fill it.
type pass struct {
	*unit
	manager string
	// target: the reference, the account's Applier, the target as read.
	ref, live *unstructured.Unstructured
	applier   *ownershipcore.Applier
	account   tenant.Account
	// d is the decision: the intent, the target's owners as read and the
	// record of previous owners (patchintent.Decide).
	d *patchintent.Decision
	// ignoreFailure is this reconcile's failure of an ignorable-paths
	// plugin (PluginFailure: pluginCondition, strategy).
	ignoreFailure string
	// current is what the apply starts from: the target as read, or as the
	// give-back of dropped fields left it.
	current *unstructured.Unstructured
	// drift: the contest over this target, the manager that drifted our
	// fields and whether they drifted.
	key     string
	now     time.Time
	drifter string
	drifted bool
	res     ownershipcore.Result
	requeue time.Duration
}

// uid is the target's UID as read.
func (p *pass) uid() string { return string(p.live.GetUID()) }

// phaseSettings names the field manager; a suspended patch is done.
func (r *Reconciler) phaseSettings(_ context.Context, p *pass) (skeleton.Step, error) {
	st, gen := p.st, p.gen()
	p.manager = r.managerName(p.obj)
	st.FieldManager = p.manager
	if p.spec.Suspend {
		set(st, gen, ConditionReady, metav1.ConditionFalse, ReasonSuspended, "reconciliation is suspended")
		return skeleton.Finish(ctrl.Result{}), nil
	}
	return skeleton.Next(), nil
}

// phaseTarget resolves the target, picks the account's Applier, watches
// the target and reads it. A missing target waits for its watch; one
// fieldops manages is refused.
func (r *Reconciler) phaseTarget(ctx context.Context, p *pass) (skeleton.Step, error) {
	ref, err := r.resolveTarget(p.obj)
	if err != nil {
		return r.fail(p.unit, err)
	}
	p.ref = ref
	if p.applier, p.account, err = r.applierFor(p.obj); err != nil {
		return r.fail(p.unit, err)
	}
	if err := r.watches.Track(p.obj, p.account, ref); err != nil {
		return r.fail(p.unit, err)
	}
	if p.live, err = p.applier.Get(ctx, ref); err != nil {
		return r.fail(p.unit, tenant.Explain(p.account, err))
	}
	if p.live == nil {
		return r.targetMissing(p.unit, ref)
	}
	if err := patchtarget.ManagedByFieldops(p.live); err != nil {
		return r.fail(p.unit, targetErr(err))
	}
	return skeleton.Next(), nil
}

// phaseIntent decides the reconcile (patchintent.Decide): the intent and
// its field set, and the record of previous owners followed to the
// target as read.
func (r *Reconciler) phaseIntent(ctx context.Context, p *pass) (skeleton.Step, error) {
	var err error
	p.d, p.ignoreFailure, err = r.decide(ctx, p.unit, p.live, p.manager)
	if err != nil && p.spec.Type == v1alpha1.PatchTypeJSON && r.refreshRecord(ctx, p.unit) {
		// A JSON patch's test ops are judged with the record of the fields
		// the patch took; a cached FieldPatch may lag behind our own last
		// status write, so judge again with the apiserver's.
		p.d, p.ignoreFailure, err = r.decide(ctx, p.unit, p.live, p.manager)
	}
	pluginCondition(p.unit, p.ignoreFailure)
	if err != nil {
		return r.fail(p.unit, err)
	}
	return skeleton.Next(), nil
}

// phaseRecord saves the record first when the apply would destroy what
// it follows from, and gives back the fields that left the patch.
// Previous owners are recorded when the patch takes fields, not before: a
// field it yields or fails on is not its own, and its owners then are
// none of its business (recordTakes, phaseApplied).
func (r *Reconciler) phaseRecord(ctx context.Context, p *pass) (skeleton.Step, error) {
	if p.d.SaveFirst() {
		// The reconcile goes on from the record as saved: it follows from
		// the FieldPatch read fresh, and a cached copy behind it (a lost
		// answer to our own write) may show an owner sharing a field it
		// has since lost to us, which is no letting go.
		saved, err := r.saveRecord(ctx, p, p.d.Owners, p.d.Present, nil)
		if errors.Is(err, errRecordFirst) {
			return skeleton.Stop(ctrl.Result{}), nil
		}
		if err != nil {
			return r.fail(p.unit, err)
		}
		p.d.Ledger = saved
	}
	var err error
	p.current, err = r.giveBackDropped(ctx, p)
	if err != nil {
		return r.fail(p.unit, tenant.Explain(p.account, err))
	}
	return skeleton.Next(), nil
}

// phaseDrift looks for drift on our fields caused by another manager
// since our last write: repaired by the apply, unless that manager keeps
// taking them back (then back off). Another fieldops object is never
// fought: that is a configuration conflict for people to settle.
func (r *Reconciler) phaseDrift(_ context.Context, p *pass) (skeleton.Step, error) {
	st, spec, gen := p.st, p.spec, p.gen()
	p.key, p.now = contestKey(p.obj, p.uid()), time.Now()
	if old := st.TargetUID; old != "" && old != p.uid() {
		r.contests.Forget(contestKey(p.obj, old)) // the contest was over an object that is gone
	}
	if st.LastAppliedTime == nil || st.ObservedGeneration != gen || specStalled(st) {
		return skeleton.Next(), nil
	}
	var err error
	if p.drifter, p.drifted, err = r.drifter(p.live, p.d.Owners, p.d.Intent, p.d.IntentSet.Intersection(p.d.RecordedBefore), p.manager, yieldsTo(spec)); err != nil {
		return r.fail(p.unit, err)
	}
	if rival, ok := ownershipcore.ParseManager(p.drifter); ok {
		return r.contestedByFieldops(p.unit, p.d.Ledger, p.live, p.drifter, rival)
	}
	at := r.contests.Next(p.key, p.drifter, p.now)
	if !p.drifted || at.IsZero() {
		return skeleton.Next(), nil
	}
	msg := fmt.Sprintf("field manager %s keeps taking back patched fields; next repair at %s", ownershipcore.DescribeManager(p.drifter), at.UTC().Format(time.RFC3339))
	requeue := at.Sub(p.now)
	if left := r.contested(p.unit, p.drifter, msg, p.now); left > 0 && left < requeue {
		requeue = left
	}
	return skeleton.Stop(ctrl.Result{RequeueAfter: requeue}), patchintent.WriteLedger(st, p.d.Ledger, p.uid())
}

// specStalled reports a generation judged by a spec error (Stalled, but
// not by a contest that timed out, whose repairs go on): none of it was
// applied yet, so what differs from it is no drift.
func specStalled(st *v1alpha1.FieldPatchStatus) bool {
	c := meta.FindStatusCondition(st.Conditions, conditions.Stalled)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason != ReasonContestTimeout
}

// phaseApply applies the intent with the patch's conflict strategy.
func (r *Reconciler) phaseApply(ctx context.Context, p *pass) (skeleton.Step, error) {
	st, gen := p.st, p.gen()
	strategy, err := r.strategy(p.unit, p.ignoreFailure)
	if err != nil {
		return r.fail(p.unit, err)
	}
	err = tenant.Explain(p.account, r.apply(ctx, p, strategy))
	if errors.Is(err, errRecordFirst) {
		return skeleton.Stop(ctrl.Result{}), nil // a selector patch saves it, then applies
	}
	r.observe(p.ref.GetKind(), p.res, err, p.drifter)
	var conflictErr *ownershipcore.ConflictError
	switch {
	case errors.As(err, &conflictErr):
		msg := describeConflicts(conflictErr.Conflicts)
		setStalled(st, gen, ReasonConflict, notes.Condition(msg))
		p.event(corev1.EventTypeWarning, ReasonConflict, "%s", msg)
		return skeleton.Stop(ctrl.Result{}), patchintent.WriteLedger(st, p.d.Ledger, p.uid())
	case errors.Is(err, ownershipcore.ErrTargetGone):
		return r.targetMissing(p.unit, p.ref)
	case errors.Is(err, ownershipcore.ErrUnknownKind):
		return r.fail(p.unit, &skeleton.ReasonError{Reason: ReasonUnknownKind, Err: err})
	case errors.Is(err, ownershipcore.ErrInvalidIntent):
		// Refused locally, before any request: only a spec change helps.
		return r.fail(p.unit, skeleton.Terminal(ReasonInvalidPatch, "%w", err))
	case ownershipcore.IsTerminal(err):
		// 422 Invalid, 400, or a 500 for a patch the apiserver cannot type
		// (a float where an int32 belongs): terminal until the spec changes.
		return r.fail(p.unit, skeleton.Terminal(ReasonInvalidPatch, "the apiserver rejected the patch: %w", err))
	case err != nil:
		return r.fail(p.unit, err)
	}
	log.FromContext(ctx).V(1).Info("applied", "action", p.res.Action, "target", objectName(p.ref), "forced", len(p.res.Forced), "yielded", len(p.res.Yielded))
	return skeleton.Next(), nil
}

// phaseApplied reports what the apply did (an event; a repair counts in
// the contest) and writes the record and the owned fields into status.
func (r *Reconciler) phaseApplied(ctx context.Context, p *pass) (skeleton.Step, error) {
	st := p.st
	if p.res.Wrote() {
		st.LastAppliedTime = &metav1.Time{Time: p.now}
		r.appliedEvent(p)
	} else if d := r.contests.Settle(p.key, p.now); d > 0 {
		p.requeue = d
	}
	var after ownershipcore.ManagedFields
	if p.res.Object != nil {
		var err error
		if after, err = ownershipcore.Owners(p.res.Object); err != nil {
			return r.fail(p.unit, err)
		}
		// The fields this apply took without force are recorded now, with
		// the owners its answer shows (patchintent.Decision.Applied: the
		// copy it was decided on may be behind the apiserver): nobody was
		// displaced, so a crash before this status write loses nothing (no
		// write before the apply): the next reconcile records them the
		// same way, as fields the patch holds with no record. Forced ones
		// were recorded before the apply.
		if before := p.d.Owners.Applied(p.manager); before != nil && !p.d.Taken(after).Intersection(before.Fields).Empty() && r.refreshRecord(ctx, p.unit) {
			// Held before this apply with no record: a lost status write,
			// or a cached FieldPatch behind the apiserver's. The latter
			// has the record; continue from it.
			l, err := patchintent.ReadLedger(p.st, p.uid())
			if err != nil {
				return r.fail(p.unit, err)
			}
			p.d.Rebase(l)
		}
		p.d.Applied(after)
	}
	if err := patchintent.WriteLedger(st, p.d.Ledger, p.uid()); err != nil {
		return r.fail(p.unit, err)
	}
	reportFields(st, after, p.manager)
	return skeleton.Next(), nil
}

// appliedEvent records the event of an apply that wrote: a repair of
// drift (backed off when the drifter keeps at it), or the first apply.
func (r *Reconciler) appliedEvent(p *pass) {
	switch {
	case p.drifter != "" && r.contests.Repaired(p.key, p.drifter, p.now) >= 2:
		p.event(corev1.EventTypeWarning, ReasonContested, "field manager %s took patched fields back again; repairs are backed off", ownershipcore.DescribeManager(p.drifter))
		p.requeue = r.contests.Base() // see whether the repair holds
	case p.drifted && p.drifter != "":
		p.event(corev1.EventTypeNormal, ReasonDriftRepaired, "repaired patched fields taken by field manager %s", ownershipcore.DescribeManager(p.drifter))
	case p.drifted:
		p.event(corev1.EventTypeNormal, ReasonDriftRepaired, "repaired patched fields that another actor removed")
	default:
		p.event(corev1.EventTypeNormal, ReasonApplied, "applied %d fields to %s %s", patchintent.CountLeaves(p.d.IntentSet), p.ref.GetKind(), objectName(p.ref))
	}
}

// phaseReport sets Ready, or Contested while a contest over the target
// lasts (looking again when it may time out).
func (r *Reconciler) phaseReport(_ context.Context, p *pass) (skeleton.Step, error) {
	st, gen := p.st, p.gen()
	if c := r.contests.Current(p.key, p.now); c != "" {
		msg := fmt.Sprintf("field manager %s keeps taking back patched fields; repairs are backed off", ownershipcore.DescribeManager(c))
		if left := r.contested(p.unit, c, msg, p.now); left > 0 && (p.requeue == 0 || left < p.requeue) {
			p.requeue = left
		}
		return skeleton.NextAfter(p.requeue), nil
	}
	st.ContestedBy, st.ContestedSince = "", nil
	msg := fmt.Sprintf("%d fields applied to %s %s", st.FieldCount, p.ref.GetKind(), objectName(p.ref))
	if len(p.res.Yielded) > 0 {
		msg += "; yielded " + describeConflicts(p.res.Yielded)
	}
	setReady(st, gen, msg)
	return skeleton.NextAfter(p.requeue), nil
}
