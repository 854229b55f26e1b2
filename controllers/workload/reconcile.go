/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload

import (
	"context"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/conditions"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/feature"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
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
	r.events.event(p.mw, nil, corev1.EventTypeWarning, re.Reason, "%v", re.Err)
	return skeleton.Stop(ctrl.Result{}), err
}

// phaseApply applies every object in order.
func (r *Reconciler) phaseApply(ctx context.Context, p *pass) (skeleton.Step, error) {
	for _, o := range applyOrder(parseObjects(p.mw, r.Client.RESTMapper())) {
		p.inventory = append(p.inventory, r.objects.reconcileObject(ctx, p, o))
	}
	return skeleton.Next(), nil
}

// phasePrune removes the objects that left the spec and writes the new
// inventory, in the spec's order.
func (r *Reconciler) phasePrune(ctx context.Context, p *pass) (skeleton.Step, error) {
	r.watches.Sweep(p.mw) // objects that left the spec are watched no more
	inventory := append(p.inventory, r.pruner.prune(ctx, p)...)
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
	r.reporter.report(p)
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
