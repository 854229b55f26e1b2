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
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/notes"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/controllers/internal/targetcache"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/internal/patchtarget"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
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

// errRecordFirst stops a target's pass whose record of previous owners
// must be saved before its write: the reconcile saves the records of
// every such target at once, then runs their passes again.
var errRecordFirst = errors.New("the record of previous owners is saved first")

// selectorWorkers is how many targets of one selector patch are decided
// and applied at once.
const selectorWorkers = 8

// eventLog collects the events of a reconcile's target passes, by reason.
type eventLog struct {
	mu     sync.Mutex
	groups map[string]*eventGroup
	order  []string
}

type eventGroup struct {
	typ   string
	n     int
	first string
}

func (l *eventLog) add(typ, reason, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.groups == nil {
		l.groups = map[string]*eventGroup{}
	}
	g, ok := l.groups[reason]
	if !ok {
		g = &eventGroup{typ: typ, first: msg}
		l.groups[reason] = g
		l.order = append(l.order, reason)
	}
	g.n++
}

// emit records one event per reason on obj.
func (l *eventLog) emit(r *Reconciler, obj v1alpha1.Patcher) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, reason := range l.order {
		g := l.groups[reason]
		if g.n == 1 {
			r.event(obj, g.typ, reason, "%s", g.first)
			continue
		}
		r.event(obj, g.typ, reason, "%d targets; the first: %s", g.n, g.first)
	}
}

// compiledSelector is spec.targetSelector, checked and parsed.
type compiledSelector struct {
	gvk        schema.GroupVersionKind
	gvr        schema.GroupVersionResource
	namespaced bool
	// namespace is the FieldPatch's own, "" for a ClusterFieldPatch.
	namespace string
	labels    labels.Selector
	names     map[string]bool
	// nsLabels selects namespaces (ClusterFieldPatch of a namespaced kind).
	nsLabels labels.Selector
}

// compileSelector checks spec.targetSelector: a kind the apiserver
// serves, never one of fieldops's own kinds; a FieldPatch's targets are
// namespaced and in its own namespace (no namespaceSelector); a
// ClusterFieldPatch's namespaced targets need a namespaceSelector, and a
// cluster-scoped kind takes none. Errors are terminal InvalidTarget or
// ForbiddenTarget, or UnknownKind (retried: a CRD may be installed).
func (r *Reconciler) compileSelector(obj v1alpha1.Patcher) (*compiledSelector, error) {
	ts := obj.PatchSpec().TargetSelector
	gv, err := schema.ParseGroupVersion(ts.APIVersion)
	if err != nil {
		return nil, skeleton.Terminal(ReasonInvalidTarget, "targetSelector.apiVersion %q: %v", ts.APIVersion, err)
	}
	c := &compiledSelector{gvk: gv.WithKind(ts.Kind), names: map[string]bool{}}
	if why, ok := patchtarget.Protected(c.gvk.Group, c.gvk.Kind, "", "", ""); ok {
		return nil, skeleton.Terminal(ReasonForbiddenTarget, "targetSelector selects %s, which is %s; fieldops does not patch its own objects", c.gvk.Kind, why)
	}
	mapping, err := r.Client.RESTMapper().RESTMapping(c.gvk.GroupKind(), c.gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			err = fmt.Errorf("kind %s is not served by the apiserver", c.gvk)
		}
		return nil, &skeleton.ReasonError{Reason: ReasonUnknownKind, Err: err}
	}
	c.gvr = mapping.Resource
	c.namespaced = mapping.Scope.Name() == meta.RESTScopeNameNamespace
	if err := selectorScope(r.Cluster, c.namespaced, ts.NamespaceSelector != nil, c.gvk.Kind); err != nil {
		return nil, err
	}
	if !r.Cluster {
		c.namespace = obj.GetNamespace()
	}
	if ts.LabelSelector == nil {
		return nil, skeleton.Terminal(ReasonInvalidTarget, "targetSelector.labelSelector is required ({} selects every object)")
	}
	if c.labels, err = metav1.LabelSelectorAsSelector(ts.LabelSelector); err != nil {
		return nil, skeleton.Terminal(ReasonInvalidTarget, "targetSelector.labelSelector: %v", err)
	}
	if ts.NamespaceSelector != nil {
		if c.nsLabels, err = metav1.LabelSelectorAsSelector(ts.NamespaceSelector); err != nil {
			return nil, skeleton.Terminal(ReasonInvalidTarget, "targetSelector.namespaceSelector: %v", err)
		}
	}
	for _, n := range ts.Names {
		c.names[n] = true
	}
	return c, nil
}

// selectorScope checks a selector's scope: a FieldPatch selects
// namespaced objects of its own namespace (no namespaceSelector); a
// ClusterFieldPatch needs a namespaceSelector for a namespaced kind, and
// takes none for a cluster-scoped one.
func selectorScope(cluster, namespaced, nsSelector bool, kind string) error {
	switch {
	case !cluster && !namespaced:
		return skeleton.Terminal(ReasonInvalidTarget, "targetSelector selects %s, which is cluster-scoped: use a ClusterFieldPatch", kind)
	case !cluster && nsSelector:
		return skeleton.Terminal(ReasonInvalidTarget, "targetSelector.namespaceSelector: a FieldPatch selects objects of its own namespace only; use a ClusterFieldPatch")
	case cluster && namespaced && !nsSelector:
		return skeleton.Terminal(ReasonInvalidTarget, "targetSelector.namespaceSelector is required for the namespaced kind %s ({} selects every namespace)", kind)
	case cluster && !namespaced && nsSelector:
		return skeleton.Terminal(ReasonInvalidTarget, "targetSelector.namespaceSelector: %s is cluster-scoped", kind)
	}
	return nil
}

// matchesPlace reports whether an object of the selector watch (whose
// labels the apiserver matched) in namespace, named name, is a target: in
// scope, its name listed (when names are), its namespace's labels matched
// (when namespaces are selected; a namespace not known yet matches
// nothing).
func (c *compiledSelector) matchesPlace(namespace, name string, nsLabels func(string) (map[string]string, bool)) bool {
	if c.namespace != "" && namespace != c.namespace {
		return false
	}
	if len(c.names) > 0 && !c.names[name] {
		return false
	}
	if c.nsLabels != nil {
		l, ok := nsLabels(namespace)
		if !ok || !c.nsLabels.Matches(labels.Set(l)) {
			return false
		}
	}
	return true
}

// watchKey is the key of the selector watch of c as account: the
// apiserver applies the label selector.
func (c *compiledSelector) watchKey(account tenant.Account) targetcache.SelectorKey {
	k := targetcache.SelectorKey{GVR: c.gvr, GVK: c.gvk, Namespace: c.namespace, LabelSelector: c.labels.String()}
	if !account.IsManager() {
		k.UserName = account.UserName()
	}
	return k
}

// phaseSelector reconciles a selector patch over every target it matches
// and ends the reconcile; a patch with spec.target goes on to the
// single-target phases.
func (r *Reconciler) phaseSelector(ctx context.Context, p *pass) (skeleton.Step, error) {
	if p.obj.PatchSpec().TargetSelector == nil {
		return skeleton.Next(), nil
	}
	return r.reconcileSelector(ctx, p.obj, p.manager)
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
func (r *Reconciler) reconcileSelector(ctx context.Context, obj v1alpha1.Patcher, manager string) (skeleton.Step, error) {
	sp := &selectorPass{obj: obj, patch: r.patchUnit(obj), manager: manager, events: &eventLog{}, now: time.Now()}
	var err error
	if sp.sel, err = r.compileSelector(obj); err != nil {
		return r.fail(sp.patch, err)
	}
	if sp.applier, sp.account, err = r.applierFor(obj); err != nil {
		return r.fail(sp.patch, err)
	}
	if step, ok, err := r.listTargets(sp); !ok {
		return step, err
	}
	if err := r.recordAhead(ctx, sp); err != nil {
		return r.fail(sp.patch, err)
	}
	r.runPasses(ctx, sp, nil)
	if err := r.recordFirst(ctx, sp); err != nil {
		return r.fail(sp.patch, err)
	}
	leaveErrs := r.leaveUnmatched(ctx, sp)
	return r.reportSelector(sp, leaveErrs)
}

// listTargets starts (or finds) the patch's watch and, once it has
// synced, lists the targets; ok is false when the reconcile ends here
// (with step and err).
func (r *Reconciler) listTargets(sp *selectorPass) (_ skeleton.Step, ok bool, _ error) {
	st, gen, sel := sp.obj.PatchStatus(), sp.obj.GetGeneration(), sp.sel
	w, err := r.selectors.ensure(client.ObjectKeyFromObject(sp.obj), sel.watchKey(sp.account), sel.nsLabels != nil)
	if err != nil {
		step, err := r.fail(sp.patch, err)
		return step, false, err
	}
	sp.w = w
	synced, werr := w.synced()
	if synced && sel.nsLabels != nil && !r.selectors.namespacesSynced() {
		synced = false
	}
	if !synced {
		if werr != nil {
			step, err := r.fail(sp.patch, tenant.Explain(sp.account, fmt.Errorf("list %s: %w", sel.gvr.Resource, werr)))
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
	recorded, nsLabels := sp.wroteBefore, r.selectors.namespaceLabels
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
func (r *Reconciler) runPasses(ctx context.Context, sp *selectorPass, idx []int) {
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
			sp.results[i] = r.targetPass(ctx, sp, sp.matched[i], sp.entries[sp.matched[i].UID])
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
func (r *Reconciler) recordAhead(ctx context.Context, sp *selectorPass) error {
	var idx []int
	pending := map[types.UID]*v1alpha1.FieldPatchStatus{}
	for i, h := range sp.matched {
		if sp.entries[h.UID] != nil {
			continue
		}
		if _, skip := r.protected(sp.sel.gvk, h.Namespace, h.Name); skip {
			continue
		}
		idx = append(idx, i)
		pending[h.UID] = &v1alpha1.FieldPatchStatus{}
	}
	if len(idx) == 0 {
		return nil
	}
	_, err := r.saveTargetRecords(ctx, sp.obj, sp.matched, idx, pending, sp.obj)
	return err
}

// recordFirst saves the records that must reach the apiserver before
// their targets' forced writes, at once, then runs those targets' passes
// again.
func (r *Reconciler) recordFirst(ctx context.Context, sp *selectorPass) error {
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
	saved, err := r.saveTargetRecords(ctx, sp.obj, sp.matched, again, pending, nil)
	if err != nil {
		return err
	}
	for _, i := range again {
		sp.entries[sp.matched[i].UID] = saved[sp.matched[i].UID]
	}
	r.runPasses(ctx, sp, again)
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
func (r *Reconciler) leaveUnmatched(ctx context.Context, sp *selectorPass) []error {
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
			err = r.giveBackTarget(ctx, sp.obj, sp.manager, sp.applier, sp.sel.gvk, e, live, sp.events)
		}
		if err != nil && !isGoneErr(err) {
			errs = append(errs, fmt.Errorf("%s: %w", objectName(e.refObject()), tenant.Explain(sp.account, err)))
			continue
		}
		delete(sp.entries, uid)
		r.contests.Forget(contestKey(sp.obj, string(uid)))
		sp.w.forget(uid)
	}
	return errs
}

// selectorCounts are the counts and problems of a reconcile's targets.
type selectorCounts struct {
	ts       *v1alpha1.TargetsStatus
	problems []v1alpha1.TargetProblem
	firstErr error
	requeue  time.Duration
	wrote    bool
	// terminalOnly: every target not applied failed on a spec error.
	terminalOnly bool
	fields       int32
}

// count merges the results into the records and counts them.
func (sp *selectorPass) count() selectorCounts {
	c := selectorCounts{ts: &v1alpha1.TargetsStatus{Matched: int32(len(sp.matched))}, terminalOnly: true}
	for i, res := range sp.results {
		uid := sp.matched[i].UID
		if res.entry != nil {
			sp.entries[uid] = res.entry
			c.fields += res.entry.rec.Fields
		} else {
			delete(sp.entries, uid)
		}
		c.wrote = c.wrote || res.wrote
		if res.requeue > 0 && (c.requeue == 0 || res.requeue < c.requeue) {
			c.requeue = res.requeue
		}
		if res.class == classApplied {
			c.ts.Applied++
			sp.w.setReason(uid, "")
			continue
		}
		c.add(res.class)
		sp.w.setReason(uid, res.reason)
		if !res.terminal && res.class != classSkipped {
			c.terminalOnly = false
		}
		if res.err != nil && c.firstErr == nil {
			c.firstErr = res.err
		}
		c.problems = append(c.problems, v1alpha1.TargetProblem{Namespace: sp.matched[i].Namespace, Name: sp.matched[i].Name, Reason: res.reason, Message: notes.Condition(res.message)})
	}
	return c
}

// add counts a target not applied of class.
func (c *selectorCounts) add(class int) {
	switch class {
	case classContested:
		c.ts.Contested++
	case classForbidden:
		c.ts.Forbidden++
	case classSkipped:
		c.ts.Skipped++
	default:
		c.ts.Failed++
	}
}

// reportSelector writes status.targets and the conditions, records the
// reconcile's events, and ends the reconcile.
func (r *Reconciler) reportSelector(sp *selectorPass, leaveErrs []error) (skeleton.Step, error) {
	obj := sp.obj
	st, gen := obj.PatchStatus(), obj.GetGeneration()
	c := sp.count()
	ts := c.ts
	notApplied := len(c.problems)
	if len(c.problems) > v1alpha1.MaxNotApplied {
		c.problems = c.problems[:v1alpha1.MaxNotApplied]
	}
	ts.NotApplied = c.problems
	ts.Records, ts.Ledgers = writeTargets(sp.entries)
	st.Targets = ts
	st.FieldCount = int(c.fields)
	st.TargetUID, st.ManagedFields, st.RecordedFields, st.PreviousOwners = "", nil, nil, nil
	st.ContestedBy, st.ContestedSince = "", nil
	if c.wrote {
		st.LastAppliedTime = &metav1.Time{Time: sp.now}
	}
	sp.events.emit(r, obj)

	kind := sp.sel.gvk.Kind
	switch {
	case len(leaveErrs) > 0:
		msg := fmt.Sprintf("giving back the fields of targets that no longer match: %v", errors.Join(leaveErrs...))
		setWaiting(st, gen, ReasonDeleteFailed, notes.Condition(msg))
		r.event(obj, corev1.EventTypeWarning, ReasonDeleteFailed, "%s", msg)
		return skeleton.Stop(ctrl.Result{RequeueAfter: transientRetry}), nil
	case notApplied == 0:
		msg := fmt.Sprintf("applied to %d of %d matching %s (%d fields)", ts.Applied, ts.Matched, kind, c.fields)
		setReady(st, gen, msg)
	case ts.Skipped == int32(notApplied):
		setReady(st, gen, notes.Condition(fmt.Sprintf("applied to %d of %d matching %s; %d skipped: %s", ts.Applied, ts.Matched, kind, ts.Skipped, describeProblems(c.problems))))
	default:
		msg := fmt.Sprintf("%d of %d matching %s not applied (%d contested, %d failed, %d forbidden, %d skipped): %s", notApplied, ts.Matched, kind, ts.Contested, ts.Failed, ts.Forbidden, ts.Skipped, describeProblems(c.problems))
		reason := ReasonTargetsNotApplied
		if ts.Contested == int32(notApplied) {
			reason = ReasonContested
		}
		if c.terminalOnly && ts.Applied == 0 {
			setStalled(st, gen, c.problems[0].Reason, notes.Condition(msg))
		} else {
			setWaiting(st, gen, reason, notes.Condition(msg))
		}
	}
	if c.firstErr != nil {
		if c.requeue == 0 || c.requeue > transientRetry {
			c.requeue = transientRetry
		}
		return skeleton.Stop(ctrl.Result{RequeueAfter: c.requeue}), nil
	}
	return skeleton.Finish(ctrl.Result{RequeueAfter: c.requeue}), nil
}

// describeProblems prints the first targets not applied.
func describeProblems(ps []v1alpha1.TargetProblem) string {
	var parts []string
	for i, p := range ps {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more (status.targets.notApplied)", len(ps)-3))
			break
		}
		name := p.Name
		if p.Namespace != "" {
			name = p.Namespace + "/" + name
		}
		parts = append(parts, fmt.Sprintf("%s: %s: %s", name, p.Reason, p.Message))
	}
	return strings.Join(parts, "; ")
}

// targetPhases are the single-target phases a target's pass runs.
func (r *Reconciler) targetPhases() []skeleton.Phase[*pass] {
	return []skeleton.Phase[*pass]{
		{Name: "intent", Run: r.phaseIntent},
		{Name: "record", Run: r.phaseRecord},
		{Name: "drift", Run: r.phaseDrift},
		{Name: "apply", Run: r.phaseApply},
		{Name: "applied", Run: r.phaseApplied},
		{Name: "report", Run: r.phaseReport},
	}
}

// targetPass runs the single-target phases for the target h (held by the
// selector watch; decoded into a copy of the pass's own) on the
// target's unit, holding its stored record. A target whose version
// and the patch's generation are those of a pass that found it applied
// is skipped before it is decoded (no decision, no request): a quiet
// selector patch costs nothing.
//
// A target without a record before this reconcile (sp.wroteBefore) has
// no earlier write: a record saved in this reconcile (errRecordFirst) is
// not one, and what differs from it is no drift.
func (r *Reconciler) targetPass(ctx context.Context, sp *selectorPass, h targetcache.Held, stored *targetEntry) targetResult {
	uid, obj := h.UID, sp.obj
	// A record with no field is decided again (it may be one saved ahead
	// of a write whose result was not saved).
	if stored != nil && stored.rec.Fields > 0 && sp.w.isConverged(uid, fmt.Sprintf("%s/%d", h.ResourceVersion, obj.GetGeneration())) {
		return targetResult{entry: stored, class: classApplied}
	}
	live, err := h.Object()
	if err != nil {
		return targetResult{entry: r.keptRecord(sp, h, stored), class: classFailed, reason: ReasonApplyFailed, message: err.Error(), err: err}
	}
	if msg, skip := r.skipped(live); skip {
		return targetResult{entry: r.keptRecord(sp, h, stored), class: classSkipped, reason: ReasonForbiddenTarget, message: msg}
	}
	gvk := live.GroupVersionKind()
	u := targetUnit(obj, live, stored, sp.w.reason(uid), sp.manager, sp.now, sp.events)
	if !sp.wroteBefore[uid] {
		u.st.LastAppliedTime = nil
	}
	ref := &unstructured.Unstructured{}
	ref.SetGroupVersionKind(gvk)
	ref.SetNamespace(live.GetNamespace())
	ref.SetName(live.GetName())
	p := &pass{unit: u, manager: sp.manager, ref: ref, live: live, applier: sp.applier, account: sp.account}
	res, _, err := skeleton.RunPhases(ctx, p, r.targetPhases())
	if u.target.pending != nil {
		return targetResult{entry: stored, pending: u.target.pending}
	}
	out := targetResult{requeue: res.RequeueAfter, wrote: p.res.Wrote()}
	sst := u.st
	entry := &targetEntry{rec: v1alpha1.TargetRecord{Namespace: live.GetNamespace(), Name: live.GetName(), UID: string(uid), Fields: int32(sst.FieldCount), ContestedBy: sst.ContestedBy, ContestedSince: sst.ContestedSince}}
	entry.takeLedger(sst)
	after := live
	if p.res.Object != nil {
		after = p.res.Object
	} else if p.current != nil {
		after = p.current
	}
	if p.res.Wrote() && p.res.Object != nil {
		sp.w.setWrote(uid, p.res.Object.GetResourceVersion())
	}
	classify(&out, sst, err)
	// Every target a pass ran for keeps its record, fields or none: it
	// was saved ahead of the pass's writes (recordAhead), and a record
	// dropped would be saved ahead again at the next reconcile.
	out.entry = entry
	if out.class == classApplied && res.RequeueAfter == 0 {
		sp.w.setConverged(uid, fmt.Sprintf("%s/%d", after.GetResourceVersion(), obj.GetGeneration()))
	} else {
		sp.w.setConverged(uid, "")
	}
	return out
}

// skipped says why fieldops never patches live (its own objects, and the
// objects it manages), as it refuses such a single target.
func (r *Reconciler) skipped(live *unstructured.Unstructured) (string, bool) {
	if why, ok := r.protected(live.GroupVersionKind(), live.GetNamespace(), live.GetName()); ok {
		return why, true
	}
	if err := patchtarget.ManagedByFieldops(live); err != nil {
		return "skipped: " + err.Error(), true
	}
	return "", false
}

// protected says why fieldops never patches the object namespace/name of
// gvk (its own objects, known from their names).
func (r *Reconciler) protected(gvk schema.GroupVersionKind, namespace, name string) (string, bool) {
	if why, ok := patchtarget.Protected(gvk.Group, gvk.Kind, namespace, name, r.Tenancy.OwnNamespace); ok {
		return fmt.Sprintf("skipped: %s; fieldops does not patch its own objects", why), true
	}
	return "", false
}

// keptRecord is the record a target h keeps when its pass stops before
// its phases (skipped, or not decoded): stored, or, unless fieldops
// protects the object (recordAhead did not record it), a record with no
// field, so that the next reconcile does not record it ahead again.
func (r *Reconciler) keptRecord(sp *selectorPass, h targetcache.Held, stored *targetEntry) *targetEntry {
	if stored != nil {
		return stored
	}
	if _, ok := r.protected(sp.sel.gvk, h.Namespace, h.Name); ok {
		return nil
	}
	return &targetEntry{rec: v1alpha1.TargetRecord{Namespace: h.Namespace, Name: h.Name, UID: string(h.UID)}}
}

// classify sets the class, reason and message of a target's pass from
// the Ready and Stalled conditions its phases left on the target unit's
// status st, and err, the phases' error.
func classify(out *targetResult, st *v1alpha1.FieldPatchStatus, err error) {
	c := meta.FindStatusCondition(st.Conditions, ConditionReady)
	switch {
	case c != nil && c.Status == metav1.ConditionTrue && err == nil:
		out.class = classApplied
		return
	case c == nil:
		out.class, out.reason, out.message = classFailed, ReasonApplyFailed, "not applied"
	default:
		out.reason, out.message = c.Reason, c.Message
		out.class = classFailed
		switch c.Reason {
		case ReasonContested, ReasonContestTimeout:
			out.class = classContested
		case ReasonForbidden:
			out.class = classForbidden
		case ReasonForbiddenTarget:
			out.class = classSkipped
		}
		stalled := meta.FindStatusCondition(st.Conditions, ConditionStalled)
		out.terminal = stalled != nil && stalled.Status == metav1.ConditionTrue && c.Reason != ReasonContestTimeout
	}
	if err != nil && !skeleton.IsTerminal(err) {
		out.err = err
	}
}

// targetUnit is the unit of the target live of the selector patch obj:
// obj's spec with target naming live, and as status the stored record of
// live (and, for a target not applied at the last reconcile, that reason,
// so that its events are recorded when the reason changes, as for a
// single target). Its events go to events, named after the target.
func targetUnit(obj v1alpha1.Patcher, live *unstructured.Unstructured, stored *targetEntry, lastReason, manager string, now time.Time, events *eventLog) *unit {
	spec := obj.PatchSpec().DeepCopy()
	spec.TargetSelector = nil
	spec.Target = v1alpha1.TargetReference{APIVersion: live.GetAPIVersion(), Kind: live.GetKind(), Name: live.GetName(), Namespace: live.GetNamespace()}
	pst := obj.PatchStatus()
	st := v1alpha1.FieldPatchStatus{ObservedGeneration: pst.ObservedGeneration, FieldManager: manager}
	gen := obj.GetGeneration()
	if stored != nil {
		stored.ledgerStatus(&st)
		st.FieldCount = int(stored.rec.Fields)
		st.ContestedBy, st.ContestedSince = stored.rec.ContestedBy, stored.rec.ContestedSince.DeepCopy()
		st.LastAppliedTime = pst.LastAppliedTime.DeepCopy()
		if st.LastAppliedTime == nil {
			st.LastAppliedTime = &metav1.Time{Time: now}
		}
	}
	switch {
	case lastReason != "":
		setWaiting(&st, gen, lastReason, "")
	case stored != nil:
		setReady(&st, gen, "")
	}
	name := fmt.Sprintf("%s %s", live.GetKind(), objectName(live))
	return &unit{obj: obj, spec: spec, st: &st, target: &selectorTarget{uid: live.GetUID(), name: name, stored: stored}, sink: func(typ, reason, note string) {
		events.add(typ, reason, name+": "+note)
	}}
}

// saveTargetRecord is saveRecord for a target of a selector patch: the
// target's stored record continued (Follow with owners and present, then
// change); when it differs from the stored one, it is kept as the
// target's pending record and errRecordFirst stops its pass (the
// reconcile saves every pending record in one status write and runs the
// pass again).
func saveTargetRecord(p *pass, owners ownershipcore.ManagedFields, present *fieldset.Set, change func(*ownershipcore.Ledger) bool) (*ownershipcore.Ledger, error) {
	sh, uid := p.target, p.uid()
	stored := &v1alpha1.FieldPatchStatus{}
	if sh.stored != nil {
		sh.stored.ledgerStatus(stored)
	}
	l, err := patchintent.ReadLedger(stored, uid)
	if err != nil {
		return nil, err
	}
	l.Follow(owners, present, p.manager)
	if change != nil {
		change(l)
	}
	next := &v1alpha1.FieldPatchStatus{}
	if err := patchintent.WriteLedger(next, l, uid); err != nil {
		return nil, err
	}
	if sameLedger(stored, next, uid) {
		return l, nil
	}
	sh.pending = next
	return nil, errRecordFirst
}

// sameLedger reports whether two statuses hold the same record of
// previous owners for the target with uid (decoded: the encoding of a
// field set may differ in key order).
func sameLedger(a, b *v1alpha1.FieldPatchStatus, uid string) bool {
	la, err := patchintent.ReadLedger(a, uid)
	if err != nil {
		return false
	}
	lb, err := patchintent.ReadLedger(b, uid)
	if err != nil {
		return false
	}
	if a.TargetUID != b.TargetUID && (len(la.Entries) > 0 || !la.Recorded.Empty()) {
		return false
	}
	if !la.Recorded.Equals(lb.Recorded) || len(la.Entries) != len(lb.Entries) {
		return false
	}
	for i := range la.Entries {
		ea, eb := la.Entries[i], lb.Entries[i]
		if ea.ManagerKey != eb.ManagerKey || ea.Via != eb.Via || !ea.Fields.Equals(eb.Fields) || !ea.Shared.Equals(eb.Shared) {
			return false
		}
	}
	return true
}

// saveTargetRecords writes the pending records of previous owners of the
// targets idx (of matched) in one status write: the patch as base holds
// it (nil: read fresh), its records continued with the pending ones,
// written with an optimistic lock on that resourceVersion (as saveRecord
// does for one target; a base the apiserver has moved past is a
// Conflict, and the reconcile is retried). It returns the records as
// saved, by target UID.
func (r *Reconciler) saveTargetRecords(ctx context.Context, obj v1alpha1.Patcher, matched []targetcache.Held, idx []int, pending map[types.UID]*v1alpha1.FieldPatchStatus, base v1alpha1.Patcher) (map[types.UID]*targetEntry, error) {
	fresh := r.newObject()
	if base != nil {
		fresh = base.DeepCopyObject().(v1alpha1.Patcher)
	} else if err := r.reader().Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
		return nil, fmt.Errorf("read %s for the records of previous owners: %w", obj.GetName(), err)
	}
	snapshot := fresh.DeepCopyObject().(v1alpha1.Patcher)
	entries := readTargets(fresh.PatchStatus().Targets)
	for _, i := range idx {
		h := matched[i]
		e := entries[h.UID]
		if e == nil {
			e = &targetEntry{rec: v1alpha1.TargetRecord{Namespace: h.Namespace, Name: h.Name, UID: string(h.UID)}}
			entries[h.UID] = e
		}
		e.takeLedger(pending[h.UID])
	}
	ts := fresh.PatchStatus().Targets
	if ts == nil {
		ts = &v1alpha1.TargetsStatus{}
		fresh.PatchStatus().Targets = ts
	}
	ts.Records, ts.Ledgers = writeTargets(entries)
	rv := fresh.GetResourceVersion()
	if err := r.Client.Status().Patch(ctx, fresh, client.MergeFromWithOptions(snapshot, client.MergeFromWithOptimisticLock{})); err != nil {
		r.writes().Unsure(obj, err)
		return nil, fmt.Errorf("record previous owners: %w", err)
	}
	r.writes().Wrote(fresh, rv)
	if obj.GetResourceVersion() != rv && fresh.GetResourceVersion() != rv {
		r.writes().WrittenAt(obj, obj.GetResourceVersion(), fresh.GetResourceVersion())
	}
	return entries, nil
}

// giveBackTarget runs the deletion policy on one target of a selector
// patch (live: as the watch holds it, or nil to read it) with its record:
// a target that stopped matching, or every target at the patch's
// deletion.
func (r *Reconciler) giveBackTarget(ctx context.Context, obj v1alpha1.Patcher, manager string, applier *ownershipcore.Applier, gvk schema.GroupVersionKind, e *targetEntry, live *unstructured.Unstructured, events *eventLog) error {
	ref := &unstructured.Unstructured{}
	ref.SetGroupVersionKind(gvk)
	ref.SetNamespace(e.rec.Namespace)
	ref.SetName(e.rec.Name)
	ref.SetUID(types.UID(e.rec.UID))
	target := live
	if target == nil {
		target = ref
	}
	u := targetUnit(obj, target, e, "", manager, time.Now(), events)
	u.st.TargetUID, u.target.uid = e.rec.UID, types.UID(e.rec.UID)
	err := r.giveBack(ctx, applier, u, ref, manager, live)
	var read targetReadError
	if errors.As(err, &read) && apierrors.IsForbidden(err) && e.rec.Fields == 0 && e.emptyLedger() {
		// A target recorded with no field and no previous owner that the
		// account may not read (a target it was never allowed to write
		// to, recorded ahead of a write that was refused): nothing of
		// the patch's to give back, and no retry that could succeed. A
		// refused write is an error: the patch's fields may be there.
		return nil
	}
	return err
}

// giveBackSelector gives every target of a deleted selector patch its
// fields back (giveBackTarget), decoding each from the patch's selector
// watch when it holds it (synced), else reading it through the patch's
// account (a target relabelled out, or before the watch synced). Targets
// given back leave status.targets.records, so that a retry after a
// failure gives back only the rest.
func (r *Reconciler) giveBackSelector(ctx context.Context, obj v1alpha1.Patcher, manager string) error {
	st := obj.PatchStatus()
	entries := readTargets(st.Targets)
	if len(entries) == 0 {
		return nil
	}
	ts := obj.PatchSpec().TargetSelector
	gv, err := schema.ParseGroupVersion(ts.APIVersion)
	if err != nil {
		return nil
	}
	gvk := gv.WithKind(ts.Kind)
	applier, account, err := r.applierFor(obj)
	if err != nil {
		return err
	}
	held := r.syncedSelectorWatch(client.ObjectKeyFromObject(obj))
	events := &eventLog{}
	var mu sync.Mutex
	var errs []error
	var done []types.UID
	var wg sync.WaitGroup
	sem := make(chan struct{}, selectorWorkers)
	for _, e := range entries {
		wg.Add(1)
		sem <- struct{}{}
		go func(e *targetEntry) {
			defer func() { <-sem; wg.Done() }()
			uid := types.UID(e.rec.UID)
			live, err := heldObject(held, uid)
			if err == nil {
				err = r.giveBackTarget(ctx, obj, manager, applier, gvk, e, live, events)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && !isGoneErr(err) {
				errs = append(errs, fmt.Errorf("%s: %w", objectName(e.refObject()), tenant.Explain(account, err)))
				return
			}
			done = append(done, uid)
		}(e)
	}
	wg.Wait()
	for _, uid := range done {
		delete(entries, uid)
	}
	events.emit(r, obj)
	if st.Targets != nil {
		st.Targets.Records, st.Targets.Ledgers = writeTargets(entries)
	}
	return errors.Join(errs...)
}

// syncedSelectorWatch returns the selector watch of the patch key once it
// has synced; nil before, or without a watch.
func (r *Reconciler) syncedSelectorWatch(key types.NamespacedName) *targetcache.SelectorWatch {
	w := r.selectors.get(key)
	if w == nil {
		return nil
	}
	if ok, _ := w.synced(); !ok {
		return nil
	}
	return w.held
}

// heldObject decodes the object with uid from held (nil: no watch); nil
// when held does not hold it, for the caller to read it live.
func heldObject(held *targetcache.SelectorWatch, uid types.UID) (*unstructured.Unstructured, error) {
	if held == nil {
		return nil, nil
	}
	h, ok := held.Get(uid)
	if !ok {
		return nil, nil
	}
	return h.Object()
}

// isGoneErr reports a target that is gone or no longer what the record
// names: nothing to give back.
func isGoneErr(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsBadRequest(err) || errors.Is(err, ownershipcore.ErrTargetGone)
}

// refObject is an empty object naming e's target (for messages).
func (e *targetEntry) refObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetNamespace(e.rec.Namespace)
	u.SetName(e.rec.Name)
	return u
}

// selector watch bookkeeping.

func (w *selectorWatch) isConverged(uid types.UID, version string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.converged[uid] == version
}

func (w *selectorWatch) setConverged(uid types.UID, version string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if version == "" {
		delete(w.converged, uid)
		return
	}
	w.converged[uid] = version
}

func (w *selectorWatch) setWrote(uid types.UID, rv string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wrote[uid] = rv
}

func (w *selectorWatch) reason(uid types.UID) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reasons[uid]
}

func (w *selectorWatch) setReason(uid types.UID, reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if reason == "" {
		delete(w.reasons, uid)
		return
	}
	w.reasons[uid] = reason
}

// forget drops what the watch remembers of a target.
func (w *selectorWatch) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.wrote, uid)
	delete(w.converged, uid)
	delete(w.reasons, uid)
}
