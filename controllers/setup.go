/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package controllers wires every fieldops controller into a
// controller-runtime manager.
package controllers

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/accountuse"
	"github.com/fieldops/fieldops/controllers/fieldpatch"
	"github.com/fieldops/fieldops/controllers/internal/targetcache"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/controllers/podset"
	"github.com/fieldops/fieldops/controllers/workload"
	"github.com/fieldops/fieldops/feature"
	"github.com/fieldops/fieldops/internal/scheme"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/plugins/host"
)

// Scheme returns a scheme with the built-in kinds, CustomResourceDefinitions
// and fieldops.dev (internal/scheme: the leaf a client needs).
func Scheme() *runtime.Scheme { return scheme.Scheme() }

// Options configure SetupWith.
type Options struct {
	// Plugins runs the plugins objects name (conflictPlugin,
	// ignorePlugins); nil when the ExternalPlugins gate is off.
	Plugins *host.Host
	// DefaultServiceAccount is the account, in their own namespace, that
	// FieldPatches and ManagedWorkloads without spec.serviceAccountName act
	// as (--default-service-account); empty: the manager's own rights.
	DefaultServiceAccount string
	// ManagerRightsNamespaces are the namespaces whose FieldPatches and
	// ManagedWorkloads without spec.serviceAccountName act with the
	// manager's own rights all the same (--manager-rights-namespaces);
	// "*" is every namespace.
	ManagerRightsNamespaces []string
	// NoCrossNamespaceRefs refuses ManagedWorkload objects outside the
	// workload's namespace (--no-cross-namespace-refs).
	NoCrossNamespaceRefs bool
	// OwnNamespace is the manager's namespace: nothing in it may be a
	// target.
	OwnNamespace string
	// WatchLabelSelector is the manager's --watch-label-selector (empty:
	// every object): a shard protects the accounts its own objects act as
	// with a finalizer of its own (accountuse.FinalizerFor).
	WatchLabelSelector string
	// Concurrency is how many objects each controller reconciles at once
	// (--concurrency); 0 means 1.
	Concurrency int
	// SharedWatchAt is the number of targets of one kind in one namespace
	// from which they share one watch (--shared-target-watch-at,
	// targetcache.Cache.ShareAt); 0 means targetcache.DefaultShareAt,
	// negative never.
	SharedWatchAt int
	// ContestBase is the unit of the contest backoff of FieldPatch and
	// ManagedWorkload; 0 means ownershipcore.ContestBase. Tests scale it
	// down.
	ContestBase time.Duration
}

// FieldManager is the field manager of fieldops's own writes to its own
// objects (status, finalizers), so that managedFields names fieldops rather
// than the client's generic default ("manager", from the binary's name).
// Writes to targets name the manager of their FieldPatch, workload or
// PodSet instead.
const FieldManager = "fieldops"

// fieldOwnerManager is a manager whose client names FieldManager on every
// write that does not name a field manager of its own.
type fieldOwnerManager struct {
	ctrl.Manager
	client client.Client
}

func (m fieldOwnerManager) GetClient() client.Client { return m.client }

// TargetReader is the reader through which the controllers SetupWith
// registered on mgr read the targets of objects acting as the manager (the
// shared targetcache.Cache): a test that waits until fieldops sees an
// object reads it there, not from mgr's cache.
func TargetReader(mgr ctrl.Manager) (client.Reader, error) { return targetcache.Shared(mgr) }

// Setup registers every fieldops controller with mgr, without plugins.
func Setup(mgr ctrl.Manager) error { return SetupWith(mgr, Options{}) }

// SetupWith registers every fieldops controller with mgr. FieldPatch and
// ManagedWorkload share one ownershipcore.Applier that reads their targets
// from the manager's shared targetcache.Cache (one watch per referred
// object, never a whole kind); PodSet reads its own pods from mgr's
// cache. All read the process-wide feature.Gates.
func SetupWith(mgr ctrl.Manager, opts Options) error {
	dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	mgr = fieldOwnerManager{Manager: mgr, client: client.WithFieldOwner(mgr.GetClient(), FieldManager)}
	schema := ownershipcore.NewSchema(dc)
	if err := setupSchemaInvalidator(mgr, schema); err != nil {
		return fmt.Errorf("set up schema invalidator: %w", err)
	}
	targets, err := targetcache.Shared(mgr)
	if err != nil {
		return err
	}
	if opts.SharedWatchAt != 0 {
		targets.ShareAt = max(0, opts.SharedWatchAt)
	}
	applier, err := ownershipcore.NewApplier(mgr.GetClient(), targets, mgr.GetAPIReader(), schema)
	if err != nil {
		return err
	}
	tenancy := tenant.Options{DefaultServiceAccount: opts.DefaultServiceAccount, ManagerRightsNamespaces: opts.ManagerRightsNamespaces, NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs, OwnNamespace: opts.OwnNamespace}
	tenants := &tenant.Appliers{Manager: applier, Config: mgr.GetConfig(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()}
	for _, cluster := range []bool{false, true} {
		r := &fieldpatch.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), CacheReader: mgr.GetCache(), Applier: applier, Recorder: mgr.GetEventRecorder("fieldops"), Cluster: cluster, Plugins: opts.Plugins, Tenants: tenants, Tenancy: tenancy, Concurrency: opts.Concurrency, ContestBase: opts.ContestBase}
		if err := r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up FieldPatch controller: %w", err)
		}
	}
	w := &workload.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Applier: applier, Recorder: mgr.GetEventRecorder("fieldops"), Gates: feature.Gates, Plugins: opts.Plugins, Tenants: tenants, Tenancy: tenancy, Concurrency: opts.Concurrency, ContestBase: opts.ContestBase}
	if err := w.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up ManagedWorkload controller: %w", err)
	}
	inUse := &accountuse.Reconciler{Client: mgr.GetClient(), Tenancy: tenancy, Finalizer: accountuse.FinalizerFor(opts.WatchLabelSelector)}
	if err := inUse.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the in-use protection of accounts: %w", err)
	}
	podApplier, err := ownershipcore.NewApplier(mgr.GetClient(), mgr.GetCache(), mgr.GetAPIReader(), schema)
	if err != nil {
		return err
	}
	ps := &podset.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Applier: podApplier, Recorder: mgr.GetEventRecorder("fieldops"), Gates: feature.Gates, Concurrency: opts.Concurrency}
	if err := ps.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up PodSet controller: %w", err)
	}
	// fieldops_objects reads the informer cache the controllers fill.
	metrics.Objects.SetReader(mgr.GetCache())
	return nil
}

// DefaultSharedWatchAt is the default of --shared-target-watch-at.
const DefaultSharedWatchAt = targetcache.DefaultShareAt

// CacheOptions returns base with what the controllers need of the
// manager's informer cache: the fieldops objects (FieldPatch,
// ClusterFieldPatch, ManagedWorkload, PodSet) and the CRDs' metadata are
// held without what nothing reads of them (TransformStripUnread), as
// controller-runtime's cache transforms let a manager hold less of each
// object. Pods keep their managed fields (PodSet reads them to find who
// owns a label). What a FieldPatch costs in memory:
// docs/operators-guide.md, "Memory".
func CacheOptions(base cache.Options) cache.Options {
	if base.ByObject == nil {
		base.ByObject = map[client.Object]cache.ByObject{}
	}
	crds := &metav1.PartialObjectMetadata{}
	crds.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	strip := TransformStripUnread()
	for _, obj := range []client.Object{&v1alpha1.FieldPatch{}, &v1alpha1.ClusterFieldPatch{}, &v1alpha1.ManagedWorkload{}, &v1alpha1.PodSet{}, crds} {
		by := base.ByObject[obj]
		by.Transform = strip
		base.ByObject[obj] = by
	}
	return base
}

// TransformStripUnread is the cache transform of fieldops's own objects
// and the CRDs' metadata: it drops metadata.managedFields
// (cache.TransformStripManagedFields) and the annotation
// kubectl.kubernetes.io/last-applied-configuration (a copy of the whole
// object as a client-side kubectl apply sent it: a CRD's whole schema),
// which no controller reads from the cache. Writes of status and
// finalizers are merge patches computed between two copies of the same
// cached object, so they never touch what both lack.
func TransformStripUnread() toolscache.TransformFunc {
	stripManagedFields := cache.TransformStripManagedFields()
	return func(in any) (any, error) {
		out, err := stripManagedFields(in)
		if err != nil {
			return out, err
		}
		if obj, err := meta.Accessor(out); err == nil {
			if a := obj.GetAnnotations(); a != nil {
				if _, ok := a[corev1.LastAppliedConfigAnnotation]; ok {
					delete(a, corev1.LastAppliedConfigAnnotation)
					if len(a) == 0 {
						obj.SetAnnotations(nil)
					}
				}
			}
		}
		return out, nil
	}
}
