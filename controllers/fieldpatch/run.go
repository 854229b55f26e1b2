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
	"github.com/fieldops/fieldops/controllers/internal/notes"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/internal/patchplan"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
	"github.com/fieldops/fieldops/plugins/host"
)

// runner runs the single-target phases (intent, drift, plan, execute,
// applied, report) of a unit: it decides the intent (patchintent.Decide),
// looks for drift, makes the reconcile's plan (patchplan.MakeWith) and
// runs it with the executor's writer
// (patchplan.Execute), the same executor kubectl fieldops plan runs with
// dry runs.
type runner struct {
	// Applier is the manager's own: its model decides.
	Applier *ownershipcore.Applier
	// Plugins runs the conflict and ignorable-paths plugins (nil: none).
	Plugins  *host.Host
	contests *ownershipcore.Contests
	records  *records
	exec     *executor
}

// phaseIntent decides the reconcile (patchintent.Decide): the intent and
// its field set, and the record of previous owners followed to the
// target as read.
func (n *runner) phaseIntent(ctx context.Context, p *pass) (skeleton.Step, error) {
	var err error
	p.d, p.ignore, p.ignoreFailure, err = n.decide(ctx, p)
	var invalid *skeleton.ReasonError
	if errors.As(err, &invalid) && invalid.Reason == ReasonInvalidPatch && p.spec.Type == v1alpha1.PatchTypeJSON && n.records.refreshRecord(ctx, p.unit) {
		// A JSON patch's test ops are judged with the record of the fields
		// the patch took; a cached FieldPatch may lag behind our own last
		// status write, so judge again with the apiserver's.
		p.d, p.ignore, p.ignoreFailure, err = n.decide(ctx, p)
	}
	pluginCondition(p.unit, p.ignoreFailure)
	if err != nil {
		return fail(p.unit, tenant.Explain(p.account, err))
	}
	return skeleton.Next(), nil
}

// phasePlan makes the reconcile's plan (patchplan.MakeWith) from the
// decision: the fields that left the patch to give back, the apply as
// the ownership core decides it with the patch's conflict strategy (a
// plugin is asked here, once per conflict, before any write), and the
// record of the forced fields' owners. It runs after the drift check: a
// reconcile that backs off asks no plugin and reads no record.
func (n *runner) phasePlan(ctx context.Context, p *pass) (skeleton.Step, error) {
	strategy, err := n.strategy(p.unit, p.ignoreFailure)
	if err != nil {
		return fail(p.unit, err)
	}
	in := patchplan.Input{Input: patchintent.Input{Spec: p.spec, Status: p.st, Live: p.live, Manager: p.manager, Ignore: p.ignore}, Strategy: strategy}
	p.plan, err = patchplan.MakeWith(ctx, p.applier, p.d, in, patchplan.Readers{Records: p.applier.GetFresh,
		PreviousValues: func(ctx context.Context) (*unstructured.Unstructured, error) {
			return n.records.readPreviousValues(ctx, p.applier, p.unit, p.uid())
		}})
	switch {
	case errors.Is(err, ownershipcore.ErrTargetGone):
		return n.targetMissing(p.unit, p.ref)
	case err != nil:
		return fail(p.unit, tenant.Explain(p.account, err))
	}
	n.records.reportUnread(p, p.plan.Unread)
	return skeleton.Next(), nil
}

// stalePlanRetry is when a plan found stale is made again.
const stalePlanRetry = time.Second

// phaseExecute runs the plan (patchplan.Execute): the record first when
// the apply would destroy what it follows from or forces fields, the
// give-back of the fields that left the patch, then the apply. Previous
// owners of fields taken without force are recorded after the apply
// (phaseApplied): a field the patch yields or fails on is not its own,
// and its owners then are none of its business.
func (n *runner) phaseExecute(ctx context.Context, p *pass) (skeleton.Step, error) {
	out, err := patchplan.Execute(ctx, p.plan, n.exec.writer(p))
	p.out, p.res, p.current = out, out.Result, p.live
	if out.Given != nil {
		p.current = out.Given
	}
	n.exec.gaveBackEvent(p, out.GaveBack)
	switch {
	case errors.Is(err, errRecordFirst):
		return skeleton.Stop(ctrl.Result{}), nil // a selector patch saves it, then applies
	case errors.Is(err, patchplan.ErrStalePlan):
		// The cached patch was behind the record just saved: plan again
		// once the cache has it (the skeleton waits for our own write).
		return skeleton.Stop(ctrl.Result{RequeueAfter: stalePlanRetry}), nil
	}
	var step *patchplan.StepError
	if errors.As(err, &step) {
		err = step.Err
		if step.Write != patchplan.WriteApply && !errors.Is(err, ownershipcore.ErrTargetGone) {
			n.exec.observe(p.ref.GetKind(), p.res, err, p.drifter)
			return fail(p.unit, tenant.Explain(p.account, err))
		}
	}
	return n.applied(ctx, p, tenant.Explain(p.account, err))
}

// phaseDrift looks for drift on our fields caused by another manager
// since our last write: repaired by the apply, unless that manager keeps
// taking them back (then back off). Another fieldops object is never
// fought: that is a configuration conflict for people to settle.
func (n *runner) phaseDrift(_ context.Context, p *pass) (skeleton.Step, error) {
	st, spec, gen := p.st, p.spec, p.gen()
	p.key, p.now = contestKey(p.obj, p.uid()), time.Now()
	if old := st.TargetUID; old != "" && old != p.uid() {
		n.contests.Forget(contestKey(p.obj, old)) // the contest was over an object that is gone
	}
	if st.LastAppliedTime == nil || st.ObservedGeneration != gen || specStalled(st) {
		return skeleton.Next(), nil
	}
	var err error
	if p.drifter, p.drifted, err = n.drifter(p.live, p.d.Owners, p.d.Intent, p.d.IntentSet.Intersection(p.d.RecordedBefore), p.manager, yieldsTo(spec)); err != nil {
		return fail(p.unit, err)
	}
	if rival, ok := ownershipcore.ParseManager(p.drifter); ok {
		return n.contestedByFieldops(p.unit, p.d.Ledger, p.live, p.drifter, rival)
	}
	at := n.contests.Next(p.key, p.drifter, p.now)
	if !p.drifted || at.IsZero() {
		return skeleton.Next(), nil
	}
	msg := fmt.Sprintf("field manager %s keeps taking back patched fields; next repair at %s", ownershipcore.DescribeManager(p.drifter), at.UTC().Format(time.RFC3339))
	requeue := at.Sub(p.now)
	if left := n.contested(p.unit, p.drifter, msg, p.now); left > 0 && left < requeue {
		requeue = left
	}
	return skeleton.Stop(ctrl.Result{RequeueAfter: requeue}), patchintent.WriteLedger(st, p.d.Ledger, p.uid())
}

// applied reports the apply's answer (err): a conflict, a target gone,
// an intent refused, or an apply done.
func (n *runner) applied(ctx context.Context, p *pass, err error) (skeleton.Step, error) {
	st, gen := p.st, p.gen()
	n.exec.observe(p.ref.GetKind(), p.res, err, p.drifter)
	var conflictErr *ownershipcore.ConflictError
	switch {
	case errors.As(err, &conflictErr):
		msg := describeConflicts(conflictErr.Conflicts)
		setStalled(st, gen, ReasonConflict, notes.Condition(msg))
		p.event(corev1.EventTypeWarning, ReasonConflict, "%s", msg)
		return skeleton.Stop(ctrl.Result{}), patchintent.WriteLedger(st, p.out.Record, p.uid())
	case errors.As(err, new(*patchintent.ForceRefusedError)):
		// Owners whose entries are in another version: terminal, a change
		// of the patch or of the target reconciles it again.
		return fail(p.unit, skeleton.Terminal(ReasonConflict, "%v", err))
	case errors.Is(err, ownershipcore.ErrTargetGone):
		return n.targetMissing(p.unit, p.ref)
	case errors.Is(err, ownershipcore.ErrUnknownKind):
		return fail(p.unit, &skeleton.ReasonError{Reason: ReasonUnknownKind, Err: err})
	case errors.Is(err, ownershipcore.ErrInvalidIntent):
		// Refused locally, before any request: only a spec change helps.
		return fail(p.unit, skeleton.Terminal(ReasonInvalidPatch, "%w", err))
	case ownershipcore.IsTerminal(err):
		// 422 Invalid, 400, or a 500 for a patch the apiserver cannot type
		// (a float where an int32 belongs): terminal until the spec changes.
		return fail(p.unit, skeleton.Terminal(ReasonInvalidPatch, "the apiserver rejected the patch: %w", err))
	case err != nil:
		return fail(p.unit, err)
	}
	log.FromContext(ctx).V(1).Info("applied", "action", p.res.Action, "target", objectName(p.ref), "forced", len(p.res.Forced), "yielded", len(p.res.Yielded))
	return skeleton.Next(), nil
}

// phaseApplied reports what the apply did (an event; a repair counts in
// the contest) and writes the record and the owned fields into status.
func (n *runner) phaseApplied(ctx context.Context, p *pass) (skeleton.Step, error) {
	st := p.st
	if p.res.Wrote() {
		st.LastAppliedTime = &metav1.Time{Time: p.now}
		n.appliedEvent(p)
	} else if d := n.contests.Settle(p.key, p.now); d > 0 {
		p.requeue = d
	}
	var after ownershipcore.ManagedFields
	if p.res.Object != nil {
		var err error
		if after, err = ownershipcore.Owners(p.res.Object); err != nil {
			return fail(p.unit, err)
		}
	}
	// The fields this apply took without force are in the record now,
	// with the owners its answer shows (patchplan.Execute,
	// Decision.Applied): nobody was displaced, so a crash before this
	// status write loses nothing (no write before the apply): the next
	// reconcile records them the same way, as fields the patch holds with
	// no record. Forced ones were recorded before the apply.
	if err := patchintent.WriteLedger(st, p.out.Record, p.uid()); err != nil {
		return fail(p.unit, err)
	}
	reportFields(st, after, p.manager)
	return skeleton.Next(), nil
}

// phaseReport sets Ready, or Contested while a contest over the target
// lasts (looking again when it may time out).
func (n *runner) phaseReport(_ context.Context, p *pass) (skeleton.Step, error) {
	st, gen := p.st, p.gen()
	if c := n.contests.Current(p.key, p.now); c != "" {
		msg := fmt.Sprintf("field manager %s keeps taking back patched fields; repairs are backed off", ownershipcore.DescribeManager(c))
		if left := n.contested(p.unit, c, msg, p.now); left > 0 && (p.requeue == 0 || left < p.requeue) {
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

// appliedEvent records the event of an apply that wrote: a repair of
// drift (backed off when the drifter keeps at it), or the first apply.
func (n *runner) appliedEvent(p *pass) {
	switch {
	case p.drifter != "" && n.contests.Repaired(p.key, p.drifter, p.now) >= 2:
		p.event(corev1.EventTypeWarning, ReasonContested, "field manager %s took patched fields back again; repairs are backed off", ownershipcore.DescribeManager(p.drifter))
		p.requeue = n.contests.Base() // see whether the repair holds
	case p.drifted && p.drifter != "":
		p.event(corev1.EventTypeNormal, ReasonDriftRepaired, "repaired patched fields taken by field manager %s", ownershipcore.DescribeManager(p.drifter))
	case p.drifted:
		p.event(corev1.EventTypeNormal, ReasonDriftRepaired, "repaired patched fields that another actor removed")
	default:
		p.event(corev1.EventTypeNormal, ReasonApplied, "applied %d fields to %s %s", patchintent.CountLeaves(p.d.IntentSet), p.ref.GetKind(), objectName(p.ref))
	}
}

// targetMissing reports a target that does not exist (or was replaced
// while we wrote): nothing is written, and the target's watch brings the
// patch back when it appears.
func (n *runner) targetMissing(u *unit, ref *unstructured.Unstructured) (skeleton.Step, error) {
	msg := fmt.Sprintf("target %s %s not found; it is patched when it appears", ref.GetKind(), objectName(ref))
	if c := meta.FindStatusCondition(u.st.Conditions, ConditionReady); c == nil || c.Reason != ReasonTargetNotFound {
		u.event(corev1.EventTypeWarning, ReasonTargetNotFound, "%s", msg)
	}
	setWaiting(u.st, u.gen(), ReasonTargetNotFound, msg)
	return skeleton.Stop(ctrl.Result{}), nil
}

// contestedByFieldops reports that another fieldops object took patched
// fields: no repair (two fieldops objects would otherwise write in turn
// forever); the patch waits until that object lets the fields go (it is
// deleted and hands them back, or its patch changes), which the target's
// watch brings here.
func (n *runner) contestedByFieldops(u *unit, ledger *ownershipcore.Ledger, live *unstructured.Unstructured, manager string, rival ownershipcore.FieldopsObject) (skeleton.Step, error) {
	st := u.st
	msg := fmt.Sprintf("%s (field manager %q) took patched fields; fieldops objects do not fight each other: change or delete one of them", rival, manager)
	if c := meta.FindStatusCondition(st.Conditions, ConditionReady); c == nil || (c.Reason != ReasonContested && c.Reason != ReasonContestTimeout) || st.ContestedBy != manager {
		u.event(corev1.EventTypeWarning, ReasonContested, "%s", msg)
	}
	left := n.contested(u, manager, msg, time.Now())
	return skeleton.Stop(ctrl.Result{RequeueAfter: left}), patchintent.WriteLedger(st, ledger, string(live.GetUID()))
}

// contested reports that manager keeps taking the patched fields back
// (msg says how): Ready=False with reason Contested while the contest is
// younger than spec.contestTimeout, then Stalled with reason
// ContestTimeout naming the manager, so kstatus (`kubectl wait`, Flux
// health checks) sees a failure instead of progress that never ends.
// Repairs go on, backed off, either way. It returns the time left until
// the timeout (0 once past), for the caller to look again then.
func (n *runner) contested(u *unit, manager, msg string, now time.Time) time.Duration {
	st, gen := u.st, u.gen()
	if st.ContestedBy != manager || st.ContestedSince == nil {
		st.ContestedSince = &metav1.Time{Time: now}
	}
	st.ContestedBy = manager
	timeout := contestTimeout(u.spec)
	if left := st.ContestedSince.Add(timeout).Sub(now); left > 0 {
		setWaiting(st, gen, ReasonContested, msg)
		return left
	}
	stalledMsg := fmt.Sprintf("contested by field manager %s for more than %s (spec.contestTimeout): %s", ownershipcore.DescribeManager(manager), timeout, msg)
	if c := meta.FindStatusCondition(st.Conditions, ConditionReady); c == nil || c.Reason != ReasonContestTimeout {
		u.event(corev1.EventTypeWarning, ReasonContestTimeout, "%s", stalledMsg)
	}
	setStalled(st, gen, ReasonContestTimeout, notes.Condition(stalledMsg))
	return 0
}

// drifter reports drift on fields (intent fields this patch wrote
// before): whether a field's live value differs from the intent, and the
// manager that owns a drifted field now (empty when the field was removed
// and nobody owns it). Fields the patch has not written yet are never
// drift: taking them is an apply, and nobody is blamed for it. A field
// now owned by a manager the patch yields to is theirs: not drift.
func (n *runner) drifter(live *unstructured.Unstructured, owners ownershipcore.ManagedFields, intent *unstructured.Unstructured, fields *fieldset.Set, manager string, yields func(string, metav1.ManagedFieldsOperationType) bool) (string, bool, error) {
	drift, err := n.Applier.OwnedDiffOf(live, owners, intent, manager)
	if err != nil {
		return "", false, err
	}
	who, drift, err := ownershipcore.Drift(live, drift.Intersection(fields), manager, yields)
	if err != nil || drift.Empty() {
		return "", false, err
	}
	return who, true, nil
}

// phases are the single-target phases a unit runs.
func (n *runner) phases() []skeleton.Phase[*pass] {
	return []skeleton.Phase[*pass]{
		{Name: "intent", Run: n.phaseIntent},
		{Name: "drift", Run: n.phaseDrift},
		{Name: "plan", Run: n.phasePlan},
		{Name: "execute", Run: n.phaseExecute},
		{Name: "applied", Run: n.phaseApplied},
		{Name: "report", Run: n.phaseReport},
	}
}
