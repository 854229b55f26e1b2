/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/featuregate"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/notes"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/controllers/internal/watch"
	"github.com/fieldops/fieldops/internal/names"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/plugins/host"
)

// Finalizer holds a ManagedWorkload until its objects are pruned or
// relinquished.
const Finalizer = "fieldops.dev/prune"

// ManagerPrefix: a workload applies with
// ownershipcore.ManagerName("fieldops-workload", namespace, name).
const ManagerPrefix = names.WorkloadPrefix

// Reconciler reconciles ManagedWorkloads. Its fields are set before
// SetupWithManager, which hands them to the parts of a reconcile (see
// assemble).
type Reconciler struct {
	// Concurrency is how many objects are reconciled at once (the
	// manager's --concurrency); 0 means 1.
	Concurrency int
	Client      client.Client
	// APIReader, when not nil, reads an object without the cache after a
	// write of it failed (skeleton.Writes.Unsure).
	APIReader client.Reader
	Applier   *ownershipcore.Applier
	Recorder  events.EventRecorder
	// Gates are read on every reconcile: ServerSideApply picks the path.
	Gates featuregate.FeatureGate
	// Plugins runs ignorePlugins; nil when the ExternalPlugins gate is off.
	Plugins *host.Host
	// Tenants gives each workload the Applier of the account it acts as
	// (spec.serviceAccountName); nil: every workload uses Applier.
	Tenants *tenant.Appliers
	// Tenancy are the manager-wide tenant settings.
	Tenancy tenant.Options
	// ContestBase is the unit of the contest backoff; 0 means
	// ownershipcore.ContestBase (tests scale it down).
	ContestBase time.Duration

	watches  *watch.Watches
	contests *ownershipcore.Contests
	once     sync.Once
	skel     *skeleton.Reconciler[*v1alpha1.ManagedWorkload, *pass]

	// The parts of a reconcile, each with the dependencies it needs; set
	// by SetupWithManager (see assemble).
	events   recorder
	objects  *objectApplier
	pruner   pruner
	reporter reporter
}

// SetupWithManager registers the controller and the on-demand watches of
// the applied kinds.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.skeleton()
	c, err := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ManagedWorkload{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Named("managedworkload").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.Concurrency)}).
		Build(r)
	if err != nil {
		return err
	}
	r.contests = ownershipcore.NewContestsBase(r.ContestBase)
	if r.watches, err = watch.New(mgr, c, &v1alpha1.ManagedWorkloadList{}, nil); err != nil {
		return err
	}
	r.assemble()
	return nil
}

// assemble hands the Reconciler's fields to the parts of a reconcile:
// the object applier (the SSA and legacy paths), the pruner and the
// reporter, each holding only the dependencies it uses.
func (r *Reconciler) assemble() {
	r.events = recorder{rec: r.Recorder}
	r.objects = &objectApplier{
		differ: r.Applier, plugins: r.Plugins, tenancy: r.Tenancy,
		watches: r.watches, contests: r.contests,
		legacy: legacyPath{fields: r.Applier}, events: r.events,
	}
	r.pruner = pruner{events: r.events}
	r.reporter = reporter{events: r.events}
}

// checkPlugin resolves an ignorable-paths plugin name.
func (r *Reconciler) checkPlugin(name string) (ownershipcore.IgnorablePaths, error) {
	if r.Plugins == nil {
		return nil, host.ErrDisabled
	}
	return r.Plugins.IgnorablePaths(name)
}

// ManagerName is the field manager of the workload namespace/name.
func ManagerName(namespace, name string) string {
	return names.Workload(namespace, name)
}

// Reconcile is the shared skeleton (controllers/internal/skeleton): get →
// finalizer → status written once, in the defer → reconcileDelete, or the
// phases: settings → spec → apply every object → prune the ones that left
// → report.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.skeleton().Reconcile(ctx, req)
}

// skeleton is the reconcile's shape, built once.
func (r *Reconciler) skeleton() *skeleton.Reconciler[*v1alpha1.ManagedWorkload, *pass] {
	r.once.Do(func() {
		r.skel = &skeleton.Reconciler[*v1alpha1.ManagedWorkload, *pass]{
			Client:             r.Client,
			APIReader:          r.APIReader,
			New:                func() *v1alpha1.ManagedWorkload { return &v1alpha1.ManagedWorkload{} },
			Finalizer:          Finalizer,
			Status:             func(mw *v1alpha1.ManagedWorkload) any { return mw.Status },
			Conditions:         func(mw *v1alpha1.ManagedWorkload) *[]metav1.Condition { return &mw.Status.Conditions },
			ObservedGeneration: func(mw *v1alpha1.ManagedWorkload) *int64 { return &mw.Status.ObservedGeneration },
			Scope:              newPass,
			Phases: []skeleton.Phase[*pass]{
				{Name: "settings", Run: r.phaseSettings},
				{Name: "spec", Run: r.phaseSpec},
				{Name: "apply", Run: r.phaseApply},
				{Name: "prune", Run: r.phasePrune},
				{Name: "report", Run: r.phaseReport},
			},
			Delete: r.reconcileDelete,
			Forget: func(key client.ObjectKey) { r.watches.Release(key) }, // its objects are watched no more
		}
	})
	return r.skel
}

// recorder records the events of ManagedWorkloads (none without an
// EventRecorder).
type recorder struct{ rec events.EventRecorder }

// event records an event regarding mw; related, when not nil, is the
// object of spec.resources it is about (events.k8s.io keeps events of
// different related objects apart instead of folding them into a series).
// Its note is cleaned and bounded (notes.Event), so the apiserver accepts it.
func (ev recorder) event(mw *v1alpha1.ManagedWorkload, related *unstructured.Unstructured, typ, reason, format string, args ...interface{}) {
	if ev.rec == nil {
		return
	}
	var rel runtime.Object
	if related != nil && related.GetKind() != "" && related.GetName() != "" {
		rel = related
	}
	ev.rec.Eventf(mw, rel, typ, reason, "Reconcile", "%s", notes.Event(format, args...))
}

// applierFor returns the Applier of the account mw acts as, and that
// account.
func (r *Reconciler) applierFor(mw *v1alpha1.ManagedWorkload) (*ownershipcore.Applier, tenant.Account, error) {
	account, err := tenant.Resolve(r.Tenancy, mw.Namespace, mw.Spec.ServiceAccountName, "")
	if err != nil || r.Tenants == nil || account.IsManager() {
		return r.Applier, account, err
	}
	a, err := r.Tenants.For(account)
	return a, account, err
}
