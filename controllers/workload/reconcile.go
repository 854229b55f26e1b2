/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/conditions"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/feature"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
	"github.com/fieldops/fieldops/ownershipcore/redact"
)

const (
	// transientRetry is how long to wait after an error a retry may fix
	// (a kind not served yet, a missing namespace, a failed request).
	transientRetry = 30 * time.Second
	// legacyRecheck is how soon the legacy path looks again at an object
	// its patch did not converge, as a periodic resync would.
	legacyRecheck = 5 * time.Second
	// migratedRecheck waits for the cache to see migrated managed fields.
	migratedRecheck = time.Second
)

// pass is the state of one reconcile of one workload.
type pass struct {
	mw      *v1alpha1.ManagedWorkload
	manager string
	// applier acts as the workload's account (spec.serviceAccountName).
	applier *ownershipcore.Applier
	account tenant.Account
	ignore  *fieldset.Set
	ssa     bool
	// prev are the last inventory's entries by object key and by index.
	prev        map[string]v1alpha1.InventoryEntry
	prevByIndex map[int]v1alpha1.InventoryEntry

	// judged: a reconcile has judged this generation before (see judged).
	judged bool
	// inventory are the entries of the objects applied so far.
	inventory []v1alpha1.InventoryEntry

	pluginFailed string
	requeue      time.Duration
	// migrated: an object's legacy ownership moved to our Apply entry;
	// it is applied on the requeue.
	migrated            bool
	notConverged        []string
	created, configured int
	// createdNames are the objects a new generation created, for its
	// Applied event.
	createdNames []string
}

func (p *pass) after(d time.Duration) {
	if p.requeue == 0 || d < p.requeue {
		p.requeue = d
	}
}

// newPass starts the pass of one reconcile of mw.
func newPass(mw *v1alpha1.ManagedWorkload) *pass {
	return &pass{mw: mw, judged: judged(mw)}
}

// judged reports whether a reconcile has judged mw's generation already
// (the Ready condition is stamped with it): then live objects that differ
// from the spec drifted, rather than wait for the spec's first apply.
// status.observedGeneration is no such sign: it moves only on success.
func judged(mw *v1alpha1.ManagedWorkload) bool {
	c := meta.FindStatusCondition(mw.Status.Conditions, conditions.Ready)
	return c != nil && c.ObservedGeneration == mw.Generation
}

// phaseSettings names the field manager and the mode; a suspended
// workload is done.
func (r *Reconciler) phaseSettings(_ context.Context, p *pass) (skeleton.Step, error) {
	st, gen := &p.mw.Status, p.mw.Generation
	p.manager, p.ssa = ManagerName(p.mw.Namespace, p.mw.Name), r.Gates.Enabled(feature.ServerSideApply)
	st.FieldManager = p.manager
	st.Mode = ModeLegacy
	if p.ssa {
		st.Mode = ModeServerSideApply
	}
	if p.mw.Spec.Suspend {
		conditions.Set(&st.Conditions, gen, conditions.Ready, metav1.ConditionFalse, ReasonSuspended, "reconciliation is suspended")
		return skeleton.Finish(ctrl.Result{}), nil
	}
	return skeleton.Next(), nil
}

// phaseSpec reads what the whole workload's spec says: the ignore paths,
// the account, the plugins. A spec error is Stalled, a terminal error.
func (r *Reconciler) phaseSpec(_ context.Context, p *pass) (skeleton.Step, error) {
	ignore, err := ownershipcore.ParsePathSet(p.mw.Spec.IgnorePaths)
	if err != nil {
		return r.stalled(p, skeleton.Terminal(ReasonInvalidIgnorePath, "%v", err))
	}
	p.ignore = ignore
	if p.applier, p.account, err = r.applierFor(p.mw); err != nil {
		return r.stalled(p, skeleton.Terminal(ReasonInvalidObject, "%v", err))
	}
	for _, name := range p.mw.Spec.IgnorePlugins {
		if _, err := r.checkPlugin(name); err != nil {
			return r.stalled(p, skeleton.Terminal(ReasonPluginUnavailable, "ignorePlugins: %v", err))
		}
	}
	p.prev, p.prevByIndex = map[string]v1alpha1.InventoryEntry{}, map[int]v1alpha1.InventoryEntry{}
	for _, e := range p.mw.Status.Inventory {
		if k := entryKey(e); k != "" {
			p.prev[k] = e
		}
		if e.Index >= 0 {
			p.prevByIndex[e.Index] = e
		}
	}
	return skeleton.Next(), nil
}

// stalled reports a spec error (a skeleton.Terminal): Stalled with its
// reason, and an event.
func (r *Reconciler) stalled(p *pass, err error) (skeleton.Step, error) {
	re, _ := skeleton.Reason(err)
	conditions.SetStalled(&p.mw.Status.Conditions, p.mw.Generation, re.Reason, re.Err.Error())
	r.event(p.mw, nil, corev1.EventTypeWarning, re.Reason, "%v", re.Err)
	return skeleton.Stop(ctrl.Result{}), err
}

// phaseApply applies every object in order.
func (r *Reconciler) phaseApply(ctx context.Context, p *pass) (skeleton.Step, error) {
	for _, o := range applyOrder(parseObjects(p.mw, r.Client.RESTMapper())) {
		p.inventory = append(p.inventory, r.reconcileObject(ctx, p, o))
	}
	return skeleton.Next(), nil
}

// phasePrune removes the objects that left the spec and writes the new
// inventory, in the spec's order.
func (r *Reconciler) phasePrune(ctx context.Context, p *pass) (skeleton.Step, error) {
	r.watches.Sweep(p.mw) // objects that left the spec are watched no more
	inventory := append(p.inventory, r.prune(ctx, p)...)
	sort.SliceStable(inventory, func(i, j int) bool {
		a, b := inventory[i].Index, inventory[j].Index
		return a >= 0 && (b < 0 || a < b)
	})
	p.mw.Status.Inventory = inventory
	return skeleton.Next(), nil
}

// phaseReport sets the counts and conditions. The generation is
// reconciled (observedGeneration moves) only when no object failed.
func (r *Reconciler) phaseReport(_ context.Context, p *pass) (skeleton.Step, error) {
	st := &p.mw.Status
	if p.created+p.configured > 0 || !p.judged || st.LastAppliedTime == nil {
		touched(st, time.Now())
	}
	r.report(p)
	if st.Failed > 0 && !meta.IsStatusConditionTrue(st.Conditions, conditions.Stalled) {
		return skeleton.Stop(ctrl.Result{RequeueAfter: p.requeue}), nil
	}
	if st.Failed > 0 {
		// Stalled (no failure a retry fixes): the generation is judged,
		// so kstatus reads Failed rather than InProgress.
		return skeleton.Finish(ctrl.Result{RequeueAfter: p.requeue}), nil
	}
	return skeleton.NextAfter(p.requeue), nil
}

// reconcileObject applies one object and returns its inventory entry.
func (r *Reconciler) reconcileObject(ctx context.Context, p *pass, o *object) v1alpha1.InventoryEntry {
	e, prev, hadPrev := p.entry(o)
	oe := o.Err
	if oe == nil {
		oe = r.checkTarget(p, o)
	}
	if oe == nil {
		if err := r.watches.Ensure(p.mw, p.account, o.Intent); err != nil {
			oe = objErr(ReasonApplyFailed, true, "%v", err)
		}
	}
	writes := p.created + p.configured
	if oe == nil {
		if p.ssa {
			oe = r.applySSA(ctx, p, o, &e, prev, hadPrev)
		} else {
			oe = r.applyLegacyObject(ctx, p, o, &e, hadPrev && prev.UID != "")
		}
	}
	if oe != nil {
		r.objectFailed(p, o, &e, oe, prev, hadPrev)
	}
	if action := appliedAction(e.Action, oe != nil, p.created+p.configured > writes); action != "" {
		metrics.ApplyTotal.WithLabelValues(metrics.ControllerWorkload, e.Kind, action).Inc()
	}
	return e
}

// appliedAction is the action label fieldops_apply_total counts for one
// object of this reconcile, or "" for none. Only what happened in this
// reconcile counts: a write (wrote: Created, Configured; Migrated, whose
// entry only the reconcile that moved the managers sets) or a failed
// attempt (Failed, Conflicted). An entry that keeps the last write's
// action over an apply that changed nothing, and a repair held back by a
// contest, count nothing.
func appliedAction(action string, failed, wrote bool) string {
	switch {
	case failed && (action == ActionFailed || action == string(ownershipcore.ActionConflicted)):
		return action
	case failed:
		return ""
	case wrote, action == ActionMigrated:
		return action
	}
	return ""
}

// entry starts o's inventory entry and finds its entry in the last
// inventory (by key, else by index), if any.
func (p *pass) entry(o *object) (e, prev v1alpha1.InventoryEntry, hadPrev bool) {
	e = v1alpha1.InventoryEntry{Index: o.Index}
	prev, hadPrev = p.prevByIndex[o.Index]
	if o.Intent == nil {
		return e, prev, hadPrev
	}
	e.APIVersion, e.Kind, e.Namespace, e.Name = o.Intent.GetAPIVersion(), o.Intent.GetKind(), o.Intent.GetNamespace(), o.Intent.GetName()
	if pk, ok := p.prev[o.Key]; ok && o.Key != "" {
		prev, hadPrev = pk, true
	}
	if hadPrev && entryKey(prev) == o.Key {
		e.UID = prev.UID // kept when this apply fails
	}
	return e, prev, hadPrev
}

// objectFailed records oe in o's entry e, schedules the retry and sends
// an event unless the last inventory already reported the same.
func (r *Reconciler) objectFailed(p *pass, o *object, e *v1alpha1.InventoryEntry, oe *objectError, prev v1alpha1.InventoryEntry, hadPrev bool) {
	if e.Action == "" {
		e.Action = ActionFailed
	}
	e.Reason, e.Message = oe.Reason, oe.Message
	if oe.Retry {
		p.after(transientRetry)
	}
	if !hadPrev || prev.Reason != oe.Reason || prev.Message != oe.Message {
		r.event(p.mw, o.Intent, corev1.EventTypeWarning, oe.Reason, "%s", oe.Message)
	}
}

// ignoreFor is the ignore set for one object: spec.ignorePaths and what
// the ignorePlugins name for obj (the live object, or the intent). A
// failing plugin adds nothing and is reported once per reconcile.
func (r *Reconciler) ignoreFor(ctx context.Context, p *pass, obj *unstructured.Unstructured) *fieldset.Set {
	if len(p.mw.Spec.IgnorePlugins) == 0 {
		return p.ignore
	}
	extra, failed, err := r.Plugins.IgnoredPaths(ctx, p.mw.Spec.IgnorePlugins, obj)
	if err != nil {
		failed = append(failed, err)
	}
	for _, f := range failed {
		if p.pluginFailed == "" {
			r.event(p.mw, obj, corev1.EventTypeWarning, ReasonPluginFailed, "%v; no extra paths ignored", f)
			p.pluginFailed = fmt.Sprintf("%v; no extra paths ignored", f)
		}
	}
	if extra == nil {
		return p.ignore
	}
	return p.ignore.Union(extra)
}

// createdObject counts a created object. The objects a new generation
// creates are named by its Applied event (one event, not one per
// object); an object created again for a generation already judged
// (deleted by someone else) has its own Created event.
func (r *Reconciler) createdObject(p *pass, o *object, name string) {
	p.created++
	if !p.judged {
		p.createdNames = append(p.createdNames, name)
		return
	}
	r.event(p.mw, o.Intent, corev1.EventTypeNormal, ReasonCreated, "created %s", name)
}

// adoptsClientSideApply is spec.adoptClientSideApply (default true).
func adoptsClientSideApply(mw *v1alpha1.ManagedWorkload) bool {
	return mw.Spec.AdoptClientSideApply == nil || *mw.Spec.AdoptClientSideApply
}

// drifter reports whether fields this workload owns on live drifted from
// the intent (without ignore), and the manager that owns a drifted field
// now (empty when it was removed and nobody owns it). A field now owned by
// a manager yields names is that manager's: not drift.
func (r *Reconciler) drifter(live, intent *unstructured.Unstructured, ignore *fieldset.Set, manager string, yields func(string, metav1.ManagedFieldsOperationType) bool) (string, bool) {
	if ignore != nil && !ignore.Empty() {
		var err error
		if intent, err = r.Applier.RemoveFields(intent, ignore); err != nil {
			return "", false
		}
	}
	diff, err := r.Applier.OwnedDiff(live, intent, manager)
	if err != nil || diff.Empty() {
		return "", false
	}
	who, diff, err := ownershipcore.Drift(live, diff, manager, yields)
	if err != nil {
		return "", true
	}
	return who, !diff.Empty()
}

// drift counts and reports a repair of owned fields.
func (r *Reconciler) drift(p *pass, name string, live, intent *unstructured.Unstructured) {
	metrics.DriftTotal.WithLabelValues(metrics.ControllerWorkload, live.GetKind()).Inc()
	detail := ""
	if diff, err := r.Applier.OwnedDiff(live, intent, p.manager); err == nil && !diff.Empty() {
		paths := ownershipcore.FormatSet(diff)
		if len(paths) > 5 {
			paths = append(paths[:5], fmt.Sprintf("and %d more", len(paths)-5))
		}
		detail = ": " + strings.Join(paths, ", ")
		if owners, err := ownershipcore.Owners(live); err == nil {
			if who := owners.OwnersOf(diff, p.manager).Managers(); len(who) > 0 {
				detail += fmt.Sprintf(" (changed by %s)", strings.Join(who, ", "))
			}
		}
	}
	r.event(p.mw, live, corev1.EventTypeNormal, ReasonDriftRepaired, "repaired owned fields of %s%s", name, detail)
}

// applyLegacyObject takes the legacy path for one object.
func (r *Reconciler) applyLegacyObject(ctx context.Context, p *pass, o *object, e *v1alpha1.InventoryEntry, applied bool) *objectError {
	name := fmt.Sprintf("%s %s", e.Kind, refName(e.Namespace, e.Name))
	action, obj, residual, err := r.applyLegacy(ctx, p.applier, o.Intent, p.manager, func(obj *unstructured.Unstructured) *fieldset.Set {
		return r.ignoreFor(ctx, p, obj)
	})
	if err != nil {
		return classify(name, err)
	}
	e.Action, e.UID = string(action), obj.GetUID()
	setHealth(e, obj)
	switch action {
	case ownershipcore.ActionCreated:
		r.createdObject(p, o, name)
	case ownershipcore.ActionConfigured:
		p.configured++
		if applied && p.judged {
			metrics.DriftTotal.WithLabelValues(metrics.ControllerWorkload, e.Kind).Inc()
		}
	}
	if len(residual) > 0 {
		p.notConverged = append(p.notConverged, fmt.Sprintf("%s (%s)", name, strings.Join(residual, ", ")))
		p.after(legacyRecheck)
	}
	return nil
}

// classify turns an apply error into an object error, its message
// redact.Message(err). An object that can never be applied as
// it is (ownershipcore.IsTerminal: refused locally, or by the apiserver
// with 422, 400 or a 500 for a patch it cannot type) is Rejected without
// retry: only a change of the spec helps.
func classify(name string, err error) *objectError {
	msg := redact.Message(err)
	switch {
	case errors.Is(err, ownershipcore.ErrUnknownKind):
		return objErr(ReasonUnknownKind, true, "%s: %s", name, msg)
	case errors.Is(err, ownershipcore.ErrInvalidIntent):
		return objErr(ReasonRejected, false, "%s: %s", name, msg)
	case ownershipcore.IsTerminal(err):
		return objErr(ReasonRejected, false, "%s: the apiserver rejected the object: %s", name, msg)
	case apierrors.IsForbidden(err) && strings.Contains(msg, "cannot "):
		// RBAC: the account may not (the message names verb, resource
		// and account). Retried every 30 s: roles may change.
		return objErr(ReasonForbidden, true, "%s: %s", name, msg)
	case apierrors.IsForbidden(err):
		return objErr(ReasonRejected, true, "%s: forbidden: %s", name, msg)
	default:
		return objErr(ReasonApplyFailed, true, "%s: %s", name, msg)
	}
}

// prune removes the objects of the last inventory that left the spec and
// returns entries for those whose removal failed (retried later).
func (r *Reconciler) prune(ctx context.Context, p *pass) []v1alpha1.InventoryEntry {
	keep := sets.New(indexKeys(p.mw)...)
	var gone []v1alpha1.InventoryEntry
	for _, e := range p.mw.Status.Inventory {
		if e.UID != "" && !keep.Has(entryKey(e)) {
			gone = append(gone, e)
		}
	}
	var pending []v1alpha1.InventoryEntry
	for _, e := range removeOrder(gone) {
		if _, err := r.removeObject(ctx, p.applier, p.mw, e, p.manager); err != nil {
			e.Index, e.Action, e.Reason, e.Message = -1, ActionFailed, ReasonPruneFailed, err.Error()
			r.event(p.mw, nil, corev1.EventTypeWarning, ReasonPruneFailed, "%v", err)
			pending = append(pending, e)
			p.after(transientRetry)
		}
	}
	return pending
}

// report sets the counts and conditions and sends the summary event.
func (r *Reconciler) report(p *pass) {
	st, gen := &p.mw.Status, p.mw.Generation
	before := readyReason(st)
	conditions.SetPluginFailure(&st.Conditions, gen, p.pluginFailed)
	failures, contested, stalled := tally(st, p.requeue != 0)
	r.appliedEvent(p)
	switch {
	case st.Failed > 0 && contested == st.Failed:
		conditions.SetWaiting(&st.Conditions, gen, ReasonContested, fmt.Sprintf("%d of %d objects contested: %s", contested, len(st.Inventory), strings.Join(failures, "; ")))
	case st.Failed > 0:
		msg := fmt.Sprintf("%d of %d objects failed: %s", st.Failed, len(st.Inventory), strings.Join(failures, "; "))
		if stalled {
			conditions.SetStalled(&st.Conditions, gen, ReasonObjectsFailed, msg)
		} else {
			conditions.SetWaiting(&st.Conditions, gen, ReasonObjectsFailed, msg)
		}
	case len(p.notConverged) > 0:
		conditions.SetWaiting(&st.Conditions, gen, ReasonNotConverged, fmt.Sprintf(
			"the legacy JSON patch did not hold on %s: another actor changes these fields back on every write (a mutating webhook?); the ServerSideApply gate leaves them to it", strings.Join(p.notConverged, "; ")))
	case p.migrated:
		// Not any requeue: a contest's recheck of a repair keeps Ready.
		conditions.SetWaiting(&st.Conditions, gen, ReasonMigrated, "field ownership migrated to Server-Side Apply; applying next")
	default:
		r.reportReady(p, before)
	}
}

// readyReason is the reason of st's Ready condition, "" without one.
func readyReason(st *v1alpha1.ManagedWorkloadStatus) string {
	if c := meta.FindStatusCondition(st.Conditions, conditions.Ready); c != nil {
		return c.Reason
	}
	return ""
}

// tally counts the inventory's applied and failed entries into st and
// returns the failures as "<reason>: <message>", how many of them are
// contests, and whether they are stalled: no failure waits for a retry
// (requeued: the pass scheduled one).
func tally(st *v1alpha1.ManagedWorkloadStatus, requeued bool) (failures []string, contested int, stalled bool) {
	st.Applied, st.Failed = 0, 0
	stalled = true
	for _, e := range st.Inventory {
		if e.Reason == "" {
			st.Applied++
			continue
		}
		if e.Reason == ReasonContested {
			contested++
		}
		st.Failed++
		failures = append(failures, fmt.Sprintf("%s: %s", e.Reason, e.Message))
		if requeued {
			stalled = false
		}
	}
	return failures, contested, stalled
}

// appliedEvent sends the Applied event of a new generation that wrote,
// naming the objects it created; repairs of one already judged have
// their own events (DriftRepaired, Created).
func (r *Reconciler) appliedEvent(p *pass) {
	if p.created+p.configured == 0 || p.judged {
		return
	}
	st := &p.mw.Status
	created := ""
	if len(p.createdNames) > 0 {
		created = " (" + strings.Join(p.createdNames, ", ") + ")"
	}
	r.event(p.mw, nil, corev1.EventTypeNormal, ReasonApplied, "applied %d objects (%s): %d created%s, %d configured", st.Applied, st.Mode, p.created, created, p.configured)
}

// reportReady sets Ready once every object is applied: Applied when the
// objects' health does not decide it (all healthy, or spec.wait false);
// otherwise reportHealth set it, the timeout is looked at again, and a
// change of Ready's reason from before (to another than Progressing) is a
// warning event.
func (r *Reconciler) reportReady(p *pass, before string) {
	st, gen := &p.mw.Status, p.mw.Generation
	set, left := reportHealth(p.mw, time.Now())
	if !set {
		msg := fmt.Sprintf("%d objects applied (%s)", st.Applied, st.Mode)
		if waits(p.mw) {
			msg = fmt.Sprintf("%d objects applied (%s) and healthy", st.Applied, st.Mode)
		}
		conditions.SetReady(&st.Conditions, gen, ReasonApplied, msg)
		return
	}
	if left > 0 {
		p.after(left) // look again at the timeout
	}
	if c := meta.FindStatusCondition(st.Conditions, conditions.Ready); c != nil && c.Reason != before && c.Reason != ReasonProgressing {
		r.event(p.mw, nil, corev1.EventTypeWarning, c.Reason, "%s", c.Message)
	}
}
