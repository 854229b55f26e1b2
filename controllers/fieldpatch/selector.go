/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/controllers/internal/targetcache"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/ownershipcore"
)

// A selector patch (spec.targetSelector) runs, for every target it
// matches, the single-target phases of this controller (intent, record,
// drift, apply, applied, report: patchintent.Decide, RecordForced and the
// ownership core's Apply and LetGo, the one write path) on the target's
// unit (targetUnit): the patch's spec naming that one target, and as
// status that target's record of previous owners. What the phases write
// to that status is the target's new record; what they would write to the
// apiserver is redirected:
//
//   - a record that must reach the apiserver before a forced write
//     (saveRecord) is collected instead (errRecordFirst): every such record
//     of the reconcile is written in one status write, then those targets
//     are applied, so a converge costs about one request per target;
//   - events are collected and recorded once per reason per reconcile;
//   - the previous values of deletionPolicy Restore go to a Secret per
//     target.

// selectorReconciler reconciles selector patches: for every target its
// selector matches, the target's unit runs the single-target phases
// (runner), and the records its targets need before their writes are
// saved at once (records.saveTargetRecords); targets that stop matching,
// and every target at the patch's deletion, are given back (executor).
type selectorReconciler struct {
	// watches are the selector watches (nil before SetupWithManager).
	watches      *selectorWatches
	client       client.Client
	cluster      bool
	ownNamespace string
	contests     *ownershipcore.Contests
	records      *records
	exec         *executor
	run          *runner
	// applierFor gives the Applier of the account a patch acts as.
	applierFor func(v1alpha1.Patcher) (*ownershipcore.Applier, tenant.Account, error)
	// patchUnit is the unit of the patch itself (its status, its events).
	patchUnit func(v1alpha1.Patcher) *unit
}

// errRecordFirst stops a target's pass whose record of previous owners
// must be saved before its write: the reconcile saves the records of
// every such target at once, then runs their passes again.
var errRecordFirst = errors.New("the record of previous owners is saved first")

// selectorWorkers is how many targets of one selector patch are decided
// and applied at once.
const selectorWorkers = 8

// phaseSelector reconciles a selector patch over every target it matches
// and ends the reconcile; a patch with spec.target goes on to the
// single-target phases.
func (r *Reconciler) phaseSelector(ctx context.Context, p *pass) (skeleton.Step, error) {
	if p.obj.PatchSpec().TargetSelector == nil {
		return skeleton.Next(), nil
	}
	return r.sel.reconcileSelector(ctx, p.obj, p.manager)
}

// outcome classes of one target.
const (
	classApplied = iota
	classContested
	classFailed
	classForbidden
	classSkipped
)

// targetResult is what one target's pass came to.
type targetResult struct {
	entry   *targetEntry // the record to keep; nil: none
	pending *v1alpha1.FieldPatchStatus
	class   int
	reason  string
	message string
	// terminal: a spec error (Stalled) rather than a state that may pass.
	terminal bool
	err      error
	requeue  time.Duration
	wrote    bool
}

// selectorPass is the state of one reconcile of a selector patch.
type selectorPass struct {
	obj v1alpha1.Patcher
	// patch is obj's own unit: its status and events.
	patch   *unit
	manager string
	sel     *compiledSelector
	applier *ownershipcore.Applier
	account tenant.Account
	w       *selectorWatch
	events  *eventLog
	now     time.Time
	// entries are the records by target UID (read, then updated);
	// wroteBefore the targets with a record before this reconcile.
	entries     map[types.UID]*targetEntry
	wroteBefore map[types.UID]bool
	// matched are the targets (held by the selector watch), sorted by
	// namespace and name.
	matched []targetcache.Held
	results []targetResult
}

// reconcileSelector is the reconcile of a selector patch: list the
// targets from the patch's watch, run every target's pass (saving the
// records of previous owners that must come first in one status write),
// give back the targets that stopped matching, and report.
func (sr *selectorReconciler) reconcileSelector(ctx context.Context, obj v1alpha1.Patcher, manager string) (skeleton.Step, error) {
	sp := &selectorPass{obj: obj, patch: sr.patchUnit(obj), manager: manager, events: &eventLog{}, now: time.Now()}
	var err error
	if sp.sel, err = sr.compileSelector(obj); err != nil {
		return fail(sp.patch, err)
	}
	if sp.applier, sp.account, err = sr.applierFor(obj); err != nil {
		return fail(sp.patch, err)
	}
	if step, ok, err := sr.listTargets(sp); !ok {
		return step, err
	}
	if err := sr.recordAhead(ctx, sp); err != nil {
		return fail(sp.patch, err)
	}
	sr.runPasses(ctx, sp, nil)
	if err := sr.recordFirst(ctx, sp); err != nil {
		return fail(sp.patch, err)
	}
	leaveErrs := sr.leaveUnmatched(ctx, sp)
	return sr.reportSelector(sp, leaveErrs)
}

// listTargets starts (or finds) the patch's watch and, once it has
// synced, lists the targets; ok is false when the reconcile ends here
// (with step and err).
func (sr *selectorReconciler) listTargets(sp *selectorPass) (_ skeleton.Step, ok bool, _ error) {
	st, gen, sel := sp.obj.PatchStatus(), sp.obj.GetGeneration(), sp.sel
	w, err := sr.watches.ensure(client.ObjectKeyFromObject(sp.obj), sel.watchKey(sp.account), sel.nsLabels != nil)
	if err != nil {
		step, err := fail(sp.patch, err)
		return step, false, err
	}
	sp.w = w
	synced, werr := w.synced()
	if synced && sel.nsLabels != nil && !sr.watches.namespacesSynced() {
		synced = false
	}
	if !synced {
		if werr != nil {
			step, err := fail(sp.patch, tenant.Explain(sp.account, fmt.Errorf("list %s: %w", sel.gvr.Resource, werr)))
			return step, false, err
		}
		setWaiting(st, gen, ReasonListingTargets, fmt.Sprintf("listing the %s the selector may match", sel.gvr.Resource))
		return skeleton.Stop(ctrl.Result{}), false, nil
	}
	sp.entries = readTargets(st.Targets)
	sp.wroteBefore = make(map[types.UID]bool, len(sp.entries))
	for uid := range sp.entries {
		sp.wroteBefore[uid] = true
	}
	recorded, nsLabels := sp.wroteBefore, sr.watches.namespaceLabels
	w.mu.Lock()
	w.relevant = func(h targetcache.Held) bool {
		return recorded[h.UID] || sel.matchesPlace(h.Namespace, h.Name, nsLabels)
	}
	w.mu.Unlock()
	for _, h := range w.held.Objects() { // sorted
		if sel.matchesPlace(h.Namespace, h.Name, nsLabels) {
			sp.matched = append(sp.matched, h)
		}
	}
	sp.results = make([]targetResult, len(sp.matched))
	return skeleton.Step{}, true, nil
}

// runPasses runs the passes of the targets idx of sp.matched (nil: all),
// selectorWorkers at a time.
func (sr *selectorReconciler) runPasses(ctx context.Context, sp *selectorPass, idx []int) {
	if idx == nil {
		idx = make([]int, len(sp.matched))
		for i := range idx {
			idx[i] = i
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, selectorWorkers)
	for _, i := range idx {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			sp.results[i] = sr.targetPass(ctx, sp, sp.matched[i], sp.entries[sp.matched[i].UID])
		}(i)
	}
	wg.Wait()
}

// recordAhead saves, in one status write, a record (with no previous
// owners) of every matched target the patch has none of, before any
// write to it. A selector patch finds the targets to give back at its
// deletion in its records alone (its spec names none), so a target must
// be recorded before its first write: an apply whose status write then
// fails, or a manager stopped between the two, leaves no target the
// deletion cannot find. A record stays while its target matches, written
// to or not (leaveUnmatched gives a target back and forgets it once it
// no longer matches); fieldops's own objects (protected, known from their
// names) get none. The held objects are not decoded here: a target
// fieldops manages (known from its owner references) is recorded, and
// its pass keeps the record (keptRecord).
func (sr *selectorReconciler) recordAhead(ctx context.Context, sp *selectorPass) error {
	var idx []int
	pending := map[types.UID]*v1alpha1.FieldPatchStatus{}
	for i, h := range sp.matched {
		if sp.entries[h.UID] != nil {
			continue
		}
		if _, skip := sr.protected(sp.sel.gvk, h.Namespace, h.Name); skip {
			continue
		}
		idx = append(idx, i)
		pending[h.UID] = &v1alpha1.FieldPatchStatus{}
	}
	if len(idx) == 0 {
		return nil
	}
	_, err := sr.records.saveTargetRecords(ctx, sp.obj, sp.matched, idx, pending, sp.obj)
	return err
}

// recordFirst saves the records that must reach the apiserver before
// their targets' forced writes, at once, then runs those targets' passes
// again.
func (sr *selectorReconciler) recordFirst(ctx context.Context, sp *selectorPass) error {
	var again []int
	pending := map[types.UID]*v1alpha1.FieldPatchStatus{}
	for i, res := range sp.results {
		if res.pending != nil {
			again = append(again, i)
			pending[sp.matched[i].UID] = res.pending
		}
	}
	if len(again) == 0 {
		return nil
	}
	saved, err := sr.records.saveTargetRecords(ctx, sp.obj, sp.matched, again, pending, nil)
	if err != nil {
		return err
	}
	for _, i := range again {
		sp.entries[sp.matched[i].UID] = saved[sp.matched[i].UID]
	}
	sr.runPasses(ctx, sp, again)
	for _, i := range again {
		if sp.results[i].pending != nil {
			msg := "the record of previous owners changed again before the write; retried"
			sp.results[i] = targetResult{entry: sp.entries[sp.matched[i].UID], class: classFailed, reason: ReasonApplyFailed, message: msg, err: errors.New(msg)}
		}
	}
	return nil
}

// leaveUnmatched gives back the fields of the targets with a record that
// no longer match, and forgets those that are gone. A target still in the
// selector watch (its labels match, its name or namespace no longer do)
// is decoded from it; one that left the watch (relabelled out, or
// deleted) is read through the patch's account: one GET, then none once
// its record is gone.
func (sr *selectorReconciler) leaveUnmatched(ctx context.Context, sp *selectorPass) []error {
	inMatch := make(map[types.UID]bool, len(sp.matched))
	for _, h := range sp.matched {
		inMatch[h.UID] = true
	}
	var errs []error
	for uid, e := range sp.entries {
		if inMatch[uid] {
			continue
		}
		live, err := heldObject(sp.w.held, uid)
		if err == nil {
			err = sr.giveBackTarget(ctx, sp.obj, sp.manager, sp.applier, sp.sel.gvk, e, live, sp.events)
		}
		if err != nil && !isGoneErr(err) {
			errs = append(errs, fmt.Errorf("%s: %w", objectName(e.refObject()), tenant.Explain(sp.account, err)))
			continue
		}
		delete(sp.entries, uid)
		sr.contests.Forget(contestKey(sp.obj, string(uid)))
		sr.exec.outcomes.Delete(targetOutcomeKey(sp.obj, uid))
		sp.w.forget(uid)
	}
	return errs
}
