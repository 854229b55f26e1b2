/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/conditions"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/internal/patchplan"
	"github.com/fieldops/fieldops/internal/patchtarget"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
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
	// plan is the reconcile's plan (patchplan.MakeWith), d its decision: the
	// intent, the target's owners as read and the record of previous
	// owners; out what executing it did (patchplan.Execute).
	plan *patchplan.Plan
	d    *patchintent.Decision
	out  patchplan.Outcome
	// ignore are the fields the intent leaves out (ignorePaths and the
	// ignorable-paths plugins'); ignoreFailure is this reconcile's failure
	// of such a plugin (PluginFailure: pluginCondition, strategy).
	ignore        *fieldset.Set
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
		return fail(p.unit, err)
	}
	p.ref = ref
	if p.applier, p.account, err = r.applierFor(p.obj); err != nil {
		return fail(p.unit, err)
	}
	if err := r.watches.Track(p.obj, p.account, ref); err != nil {
		return fail(p.unit, err)
	}
	if p.live, err = p.applier.Get(ctx, ref); err != nil {
		return fail(p.unit, tenant.Explain(p.account, err))
	}
	if p.live == nil {
		return r.run.targetMissing(p.unit, ref)
	}
	if err := patchtarget.ManagedByFieldops(p.live); err != nil {
		return fail(p.unit, targetErr(err))
	}
	return skeleton.Next(), nil
}

// specStalled reports a generation judged by a spec error (Stalled, but
// not by a contest that timed out, whose repairs go on): none of it was
// applied yet, so what differs from it is no drift.
func specStalled(st *v1alpha1.FieldPatchStatus) bool {
	c := meta.FindStatusCondition(st.Conditions, conditions.Stalled)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason != ReasonContestTimeout
}
