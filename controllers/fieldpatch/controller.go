/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/notes"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/controllers/internal/watch"
	"github.com/fieldops/fieldops/internal/names"
	"github.com/fieldops/fieldops/internal/patchtarget"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/redact"
	"github.com/fieldops/fieldops/plugins/host"
)

// Finalizer holds a FieldPatch until its fields are handed back.
const Finalizer = "fieldops.dev/hand-back"

// Manager name prefixes: a FieldPatch applies with
// "fieldops-fieldpatch/<namespace>/<name>", a ClusterFieldPatch with
// "fieldops-clusterfieldpatch/<name>" (ownershipcore.ManagerName).
const (
	ManagerPrefix        = names.FieldPatchPrefix
	ClusterManagerPrefix = names.ClusterFieldPatchPrefix
	// OwnManagerPrefix marks field managers of fieldops itself; objects
	// with such a manager are never FieldPatch targets.
	OwnManagerPrefix = names.OwnPrefix
)

// transientRetry is how long to wait after an error a retry may fix
// (a kind not served yet, a failed request).
const transientRetry = 30 * time.Second

// Reconciler reconciles FieldPatch (Cluster false) or ClusterFieldPatch
// (Cluster true).
type Reconciler struct {
	// Concurrency is how many objects are reconciled at once (the
	// manager's --concurrency); 0 means 1.
	Concurrency int
	Client      client.Client
	// APIReader reads FieldPatches without the cache where a stale copy
	// would be wrong (the record of previous owners). Nil means Client.
	APIReader client.Reader
	// CacheReader lists this controller's objects where only their names
	// are read (the collection of gone referrers' watches): a reader
	// lending them from the manager's cache without copying
	// (controllers.Reader); nil means the manager's cache.
	CacheReader client.Reader
	Applier     *ownershipcore.Applier
	Recorder    events.EventRecorder
	Cluster     bool
	// Plugins runs conflictPlugin and ignorePlugins; nil when the
	// ExternalPlugins gate is off.
	Plugins *host.Host
	// Tenants gives each patch the Applier of the account it acts as
	// (spec.serviceAccountName); nil: every patch uses Applier.
	Tenants *tenant.Appliers
	// Tenancy are the manager-wide tenant settings (default account, own
	// namespace).
	Tenancy tenant.Options
	// ContestBase is the unit of the contest backoff; 0 means
	// ownershipcore.ContestBase (tests scale it down).
	ContestBase time.Duration

	watches      *watch.Watches
	contests     *ownershipcore.Contests
	contestsOnce sync.Once
	// records, exec and run are the parts of a reconcile (records.go,
	// exec.go, run.go), built with the skeleton.
	records *records
	exec    *executor
	run     *runner
	sel     *selectorReconciler
	once    sync.Once
	skel    *skeleton.Reconciler[v1alpha1.Patcher, *pass]
	// timers wake the reconcile of an expiring patch (phaseExpiry)
	// through wake.
	timers expiryTimers
	wake   chan event.GenericEvent
	// selectors watch the targets of selector patches (selector.go).
	selectors *selectorWatches
}

func (r *Reconciler) newObject() v1alpha1.Patcher { return newPatch(r.Cluster) }

// newPatch is an empty ClusterFieldPatch (cluster) or FieldPatch.
func newPatch(cluster bool) v1alpha1.Patcher {
	if cluster {
		return &v1alpha1.ClusterFieldPatch{}
	}
	return &v1alpha1.FieldPatch{}
}

// SetupWithManager registers the controller and the on-demand target
// watches.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.contestsOnce.Do(func() { r.contests = ownershipcore.NewContestsBase(r.ContestBase) })
	r.skeleton()
	obj, list := client.Object(&v1alpha1.FieldPatch{}), client.ObjectList(&v1alpha1.FieldPatchList{})
	name := "fieldpatch"
	if r.Cluster {
		obj, list, name = &v1alpha1.ClusterFieldPatch{}, &v1alpha1.ClusterFieldPatchList{}, "clusterfieldpatch"
	}
	r.wake = make(chan event.GenericEvent)
	r.selectors = newSelectorWatches(mgr.GetConfig())
	r.sel.watches = r.selectors
	c, err := ctrl.NewControllerManagedBy(mgr).
		For(obj, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{})).
		Named(name).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.Concurrency)}).
		Build(r)
	if err != nil {
		return err
	}
	if err := c.Watch(source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		r.selectors.start(ctx, q)
		return nil
	})); err != nil {
		return err
	}
	// The record of a write of ours is dropped once the cache has seen
	// it, not at the next reconcile (which a status write does not queue):
	// otherwise every object would keep the record of its last write.
	if err := c.Watch(source.Kind(mgr.GetCache(), obj, handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.writes().Behind(e.ObjectNew)
		},
	})); err != nil {
		return err
	}
	r.watches, err = watch.New(mgr, c, list, r.CacheReader)
	r.exec.watches = r.watches
	return err
}

// Reconcile is the shared skeleton (controllers/internal/skeleton): get →
// wait for a cache behind our own write → finalizer → status written in
// the defer → reconcileDelete, or the phases: expiry → settings → target → intent
// → record → drift → apply → applied → report. The one status write
// before the defer is the record of previous owners, when the apply
// forces fields from another manager (recordTakes).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.contestsOnce.Do(func() { r.contests = ownershipcore.NewContestsBase(r.ContestBase) })
	return r.skeleton().Reconcile(ctx, req)
}

// skeleton is the reconcile's shape, built once.
func (r *Reconciler) skeleton() *skeleton.Reconciler[v1alpha1.Patcher, *pass] {
	r.once.Do(func() {
		r.contestsOnce.Do(func() { r.contests = ownershipcore.NewContestsBase(r.ContestBase) })
		r.skel = &skeleton.Reconciler[v1alpha1.Patcher, *pass]{}
		r.records = &records{Client: r.Client, APIReader: r.APIReader, Applier: r.Applier, Cluster: r.Cluster, Tenancy: r.Tenancy, Writes: &r.skel.Writes}
		r.exec = &executor{records: r.records, watches: r.watches, controller: r.controllerName()}
		r.run = &runner{Applier: r.Applier, Plugins: r.Plugins, contests: r.contests, records: r.records, exec: r.exec}
		r.sel = &selectorReconciler{watches: r.selectors, client: r.Client, cluster: r.Cluster, ownNamespace: r.Tenancy.OwnNamespace, contests: r.contests,
			records: r.records, exec: r.exec, run: r.run, applierFor: r.applierFor, patchUnit: r.patchUnit}
		*r.skel = skeleton.Reconciler[v1alpha1.Patcher, *pass]{
			Client:             r.Client,
			APIReader:          r.APIReader,
			New:                r.newObject,
			Finalizer:          Finalizer,
			Status:             func(obj v1alpha1.Patcher) any { return obj.PatchStatus() },
			Conditions:         func(obj v1alpha1.Patcher) *[]metav1.Condition { return &obj.PatchStatus().Conditions },
			ObservedGeneration: func(obj v1alpha1.Patcher) *int64 { return &obj.PatchStatus().ObservedGeneration },
			Scope:              func(obj v1alpha1.Patcher) *pass { return &pass{unit: r.patchUnit(obj)} },
			Phases: []skeleton.Phase[*pass]{
				{Name: "expiry", Run: r.phaseExpiry},
				{Name: "settings", Run: r.phaseSettings},
				{Name: "selector", Run: r.phaseSelector},
				{Name: "target", Run: r.phaseTarget},
				{Name: "intent", Run: r.run.phaseIntent},
				{Name: "drift", Run: r.run.phaseDrift},
				{Name: "plan", Run: r.run.phasePlan},
				{Name: "execute", Run: r.run.phaseExecute},
				{Name: "applied", Run: r.run.phaseApplied},
				{Name: "report", Run: r.run.phaseReport},
			},
			Delete: r.reconcileDelete,
			Forget: func(key client.ObjectKey) {
				r.exec.forgetOutcomes(key)
				r.timers.stop(key)
				metrics.SetContested(r.controllerName(), key.Namespace, key.Name, "")
				r.watches.Release(key) // its target is watched no more
				if r.selectors != nil {
					r.selectors.release(key)
				}
			},
			Written: func(obj v1alpha1.Patcher, gone bool) {
				contestedBy := obj.PatchStatus().ContestedBy
				if gone {
					contestedBy = ""
				}
				metrics.SetContested(r.controllerName(), obj.GetNamespace(), obj.GetName(), contestedBy)
			},
		}
	})
	return r.skel
}

// writes are this controller's own writes of its objects (the skeleton's
// cache guard).
func (r *Reconciler) writes() *skeleton.Writes { return &r.skeleton().Writes }

// controllerName is the controller label of the fieldops_ metrics.
func (r *Reconciler) controllerName() string {
	if r.Cluster {
		return metrics.ControllerClusterFieldPatch
	}
	return metrics.ControllerFieldPatch
}

// managerName is the field manager of obj.
func (r *Reconciler) managerName(obj v1alpha1.Patcher) string {
	return ManagerName(r.Cluster, obj.GetNamespace(), obj.GetName())
}

// ManagerName is the field manager a FieldPatch (cluster false) or a
// ClusterFieldPatch (cluster true, namespace ignored) applies with:
// "fieldops-fieldpatch/<namespace>/<name>" or
// "fieldops-clusterfieldpatch/<name>" (ownershipcore.ManagerName).
func ManagerName(cluster bool, namespace, name string) string {
	return names.FieldPatch(cluster, namespace, name)
}

// resolveTarget validates the target reference and returns an empty
// object naming it (patchtarget.Resolve: the rules plan applies too).
func (r *Reconciler) resolveTarget(obj v1alpha1.Patcher) (*unstructured.Unstructured, error) {
	u, err := patchtarget.Resolve(r.Client.RESTMapper(), obj, r.Cluster, r.Tenancy.OwnNamespace)
	return u, targetErr(err)
}

// targetErr turns a refusal of patchtarget into a ReasonError: terminal
// (the spec must change) unless the refusal may pass by itself (a kind
// not served yet, whose CRD may be installed).
func targetErr(err error) error {
	var te *patchtarget.Error
	if !errors.As(err, &te) {
		return err
	}
	if te.Retry {
		return &skeleton.ReasonError{Reason: te.Reason, Err: te.Err}
	}
	return skeleton.Terminal(te.Reason, "%w", te.Err)
}

// event records an event about obj; its note is cleaned and bounded
// (notes.Event), so that the apiserver accepts it.
func (r *Reconciler) event(obj v1alpha1.Patcher, typ, reason, format string, args ...interface{}) {
	r.patchUnit(obj).event(typ, reason, format, args...)
}

// fail records err in status and as an event, and ends the reconcile.
// What it reports (and returns, for the controller's log) is
// redact.Message(err): no Go internals, no values of the
// target. A spec error (skeleton.Terminal) is Stalled and returned as
// the terminal error it is; a skeleton.ReasonError that is not terminal
// is Stalled and retried slowly.
func fail(u *unit, err error) (skeleton.Step, error) {
	st, gen := u.st, u.gen()
	msg := redact.Message(err)
	if re, ok := skeleton.Reason(err); ok {
		msg = redact.Message(re)
		setStalled(st, gen, re.Reason, notes.Condition(msg))
		u.event(corev1.EventTypeWarning, re.Reason, "%s", msg)
		if skeleton.IsTerminal(err) {
			return skeleton.Stop(ctrl.Result{}), reconcile.TerminalError(errors.New(msg))
		}
		return skeleton.Stop(ctrl.Result{RequeueAfter: transientRetry}), nil
	}
	if apierrors.IsForbidden(err) {
		// The account may not do this: retried slowly (RBAC may change),
		// never in a hot loop.
		setWaiting(st, gen, ReasonForbidden, notes.Condition(msg))
		u.event(corev1.EventTypeWarning, ReasonForbidden, "%s", msg)
		return skeleton.Stop(ctrl.Result{RequeueAfter: transientRetry}), nil
	}
	setWaiting(st, gen, ReasonApplyFailed, notes.Condition(msg))
	u.event(corev1.EventTypeWarning, ReasonApplyFailed, "%s", msg)
	return skeleton.Stop(ctrl.Result{}), errors.New(msg)
}

// applierFor returns the Applier of the account obj acts as, and that
// account.
func (r *Reconciler) applierFor(obj v1alpha1.Patcher) (*ownershipcore.Applier, tenant.Account, error) {
	spec := obj.PatchSpec()
	account, err := tenant.Resolve(r.Tenancy, obj.GetNamespace(), spec.ServiceAccountName, spec.ServiceAccountNamespace)
	if err != nil {
		return nil, account, skeleton.Terminal(ReasonInvalidTarget, "%v", err)
	}
	if r.Tenants == nil || account.IsManager() {
		return r.Applier, account, nil
	}
	a, err := r.Tenants.For(account)
	return a, account, err
}
