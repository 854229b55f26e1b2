/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package accountuse protects the accounts fieldops objects act as while
// they are in use, as Kubernetes protects a PersistentVolumeClaim a Pod
// uses (the kubernetes.io/pvc-protection finalizer, KEP-498 "Storage
// Object in Use Protection"): the ServiceAccount, the RoleBindings that
// grant it rights where the fieldops object acts (its own namespace for a
// FieldPatch or ManagedWorkload; for a ClusterFieldPatch, its target's
// namespace, or every namespace for a selector patch, but one being
// deleted) and the Roles those RoleBindings refer to
// carry the finalizer fieldops.dev/in-use while a FieldPatch,
// ClusterFieldPatch or ManagedWorkload acting as that account exists.
// Deleting them first (kubectl delete -k, a GitOps prune, a namespace
// deletion, in any order) then waits until the fieldops objects have
// handed their fields back with the account's rights, instead of leaving
// those objects stuck on a hand-back they may no longer do.
// ClusterRoleBindings and ClusterRoles are a cluster administrator's
// grants, often shared: they are never held back, so that revoking a
// cluster-wide right takes effect at once.
package accountuse

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/tenancy"
)

// Finalizer marks an account object (ServiceAccount, RoleBinding, Role)
// that a fieldops object acting as the account needs: fieldops removes it
// once no such object exists. A manager that reconciles only some objects
// (--watch-label-selector: a shard) uses a finalizer of its own
// (FinalizerFor), so that each protects the accounts its own objects use
// and none removes another's.
const Finalizer = "fieldops.dev/in-use"

// FinalizerFor is the finalizer of a manager reconciling the objects
// watchSelector matches (--watch-label-selector): Finalizer for every
// object or for the objects that name no shard, else Finalizer with a
// hash of the selector ("fieldops.dev/in-use-<10 hex digits>").
func FinalizerFor(watchSelector string) string {
	if watchSelector == "" || watchSelector == v1alpha1.UnshardedSelector {
		return Finalizer
	}
	sum := sha256.Sum256([]byte(watchSelector))
	return Finalizer + "-" + hex.EncodeToString(sum[:5])
}

// errStale: an account object changed since the cache's copy (our own
// last patch, most often): the request is looked at again shortly, with
// the cache's next copy, rather than logged as an error.
var errStale = errors.New("an account object changed since it was read")

// staleRetry is how long a request waits after errStale.
const staleRetry = time.Second

// Reconciler keeps its finalizer on the account objects in use, and off
// the others, one namespace per request (its ServiceAccounts,
// RoleBindings and Roles). The apiserver admits a change of finalizers
// alone on a binding or a role without the escalation checks of RBAC
// (only the fields garbage collection reads change).
type Reconciler struct {
	// Client reads from the manager's cache and patches finalizers.
	Client client.Client
	// Tenancy are the manager's settings that say which account a
	// fieldops object acts as; accounts of its own namespace are never
	// protected (nothing of fieldops's installation is held back).
	Tenancy tenancy.Options
	// Finalizer is the finalizer this manager sets (FinalizerFor).
	Finalizer string
}

var _ reconcile.Reconciler = &Reconciler{}

// Reconcile sets or removes the finalizer on the account objects of the
// namespace req.Name.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	u, err := r.inUse(ctx, req.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	err = r.syncNamespace(ctx, req.Name, u)
	if errors.Is(err, errStale) {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	return ctrl.Result{}, err
}

// syncNamespace sets Finalizer on the ServiceAccounts of ns in u.own, the
// RoleBindings of ns granting an account of u.acting and the Roles those
// refer to, and removes it from the others.
func (r *Reconciler) syncNamespace(ctx context.Context, ns string, u use) error {
	var bindings rbacv1.RoleBindingList
	if err := r.Client.List(ctx, &bindings, client.InNamespace(ns)); err != nil {
		return err
	}
	sas := metadataList(corev1.SchemeGroupVersion.WithKind("ServiceAccountList"))
	if err := r.Client.List(ctx, sas, client.InNamespace(ns)); err != nil {
		return err
	}
	rs := metadataList(rbacv1.SchemeGroupVersion.WithKind("RoleList"))
	if err := r.Client.List(ctx, rs, client.InNamespace(ns)); err != nil {
		return err
	}
	// Every object is looked at, whatever failed before it: a finalizer
	// left on an object no longer in use would hold its deletion.
	var errs []error
	roles := map[string]bool{}
	for i := range bindings.Items {
		b := &bindings.Items[i]
		used := grants(b.Subjects, ns, u.acting)
		if used && b.RoleRef.Kind == "Role" {
			roles[b.RoleRef.Name] = true
		}
		errs = append(errs, r.protect(ctx, b, used))
	}
	for i := range sas.Items {
		errs = append(errs, r.protect(ctx, &sas.Items[i], u.own[tenancy.Account{Namespace: ns, Name: sas.Items[i].Name}]))
	}
	for i := range rs.Items {
		errs = append(errs, r.protect(ctx, &rs.Items[i], roles[rs.Items[i].Name]))
	}
	return errors.Join(errs...)
}

// grants reports whether subjects (of a binding in namespace ns) name a
// ServiceAccount in accounts.
func grants(subjects []rbacv1.Subject, ns string, accounts map[tenancy.Account]bool) bool {
	for _, a := range subjectAccounts(subjects, ns) {
		if accounts[a] {
			return true
		}
	}
	return false
}

// subjectAccounts are the ServiceAccounts subjects (of a binding in
// namespace ns) name; a ServiceAccount subject without a namespace is
// one of ns, as RBAC's authorizer reads it.
func subjectAccounts(subjects []rbacv1.Subject, ns string) []tenancy.Account {
	var out []tenancy.Account
	for _, s := range subjects {
		if s.Kind != rbacv1.ServiceAccountKind {
			continue
		}
		namespace := s.Namespace
		if namespace == "" {
			namespace = ns
		}
		out = append(out, tenancy.Account{Namespace: namespace, Name: s.Name})
	}
	return out
}

// subjectIndex indexes the manager's cache of RoleBindings by the
// ServiceAccounts they name ("<namespace>/<name>"): a ClusterFieldPatch
// maps to the namespaces whose RoleBindings grant its account.
const subjectIndex = "accountuse.serviceAccountSubjects"

func indexSubjects(o client.Object) []string {
	b, ok := o.(*rbacv1.RoleBinding)
	if !ok {
		return nil
	}
	var keys []string
	for _, a := range subjectAccounts(b.Subjects, b.Namespace) {
		keys = append(keys, a.Namespace+"/"+a.Name)
	}
	return keys
}

// protect adds the finalizer to obj when used, and removes it otherwise, in a
// merge patch of the finalizers guarded by obj's resourceVersion (a
// conflict is retried by the queue). No finalizer is added to an object
// being deleted: the apiserver refuses new finalizers then, and one that
// was in use carries it already.
func (r *Reconciler) protect(ctx context.Context, obj client.Object, used bool) error {
	has := controllerutil.ContainsFinalizer(obj, r.Finalizer)
	if used == has || (used && obj.GetDeletionTimestamp() != nil) {
		return nil
	}
	orig, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copy %T", obj)
	}
	if used {
		controllerutil.AddFinalizer(obj, r.Finalizer)
	} else {
		controllerutil.RemoveFinalizer(obj, r.Finalizer)
	}
	err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) {
		return errStale
	}
	if err != nil {
		return client.IgnoreNotFound(fmt.Errorf("%s finalizer %s on %T %s/%s: %w", map[bool]string{true: "add", false: "remove"}[used], r.Finalizer, obj, obj.GetNamespace(), obj.GetName(), err))
	}
	return nil
}

// metadataList is an empty list of kind gvk, read as metadata only (the
// names and finalizers are all that is read of ServiceAccounts and Roles).
func metadataList(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(gvk)
	return l
}

// SetupWithManager registers the controller: FieldPatches and
// ManagedWorkloads acting as an account map to their namespace (the
// account's); ClusterFieldPatches acting as one to the account's namespace
// and to every namespace whose RoleBindings name it; RoleBindings,
// ServiceAccounts and Roles (the last two as metadata only) to their own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Finalizer == "" {
		r.Finalizer = Finalizer
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &rbacv1.RoleBinding{}, subjectIndex, indexSubjects); err != nil {
		return err
	}
	ns := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetNamespace()}}}
	})
	account := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		a, ok := r.account(o)
		if !ok {
			return nil // acts with the manager's rights: no account to protect
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: a.Namespace}}}
	})
	clusterAccount := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		a, ok := r.account(o)
		if !ok {
			return nil
		}
		return r.grantingNamespaces(ctx, a)
	})
	// Which account an object acts as changes only with its spec (and its
	// existence): its status writes, most of its events, do not concern
	// the accounts.
	spec := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	return ctrl.NewControllerManagedBy(mgr).
		Named("accountuse").
		Watches(&v1alpha1.FieldPatch{}, account, spec).
		Watches(&v1alpha1.ClusterFieldPatch{}, clusterAccount, spec).
		Watches(&v1alpha1.ManagedWorkload{}, account, spec).
		Watches(&rbacv1.RoleBinding{}, ns).
		WatchesMetadata(&corev1.ServiceAccount{}, ns).
		WatchesMetadata(&rbacv1.Role{}, ns).
		Complete(r)
}

// grantingNamespaces are the requests of account a's namespace and of
// every namespace with a RoleBinding naming a (the manager's cache, by
// subjectIndex). Were the cache to fail, the account's namespace alone
// is looked at, and the error logged: the RoleBindings of the others are
// looked at again with their next event.
func (r *Reconciler) grantingNamespaces(ctx context.Context, a tenancy.Account) []reconcile.Request {
	out := []reconcile.Request{{NamespacedName: types.NamespacedName{Name: a.Namespace}}}
	var list rbacv1.RoleBindingList
	if err := r.Client.List(ctx, &list, client.MatchingFields{subjectIndex: a.Namespace + "/" + a.Name}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list the RoleBindings naming an account in use", "account", a.String())
		return out
	}
	seen := map[string]bool{a.Namespace: true}
	for _, b := range list.Items {
		if !seen[b.Namespace] {
			seen[b.Namespace] = true
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: b.Namespace}})
		}
	}
	return out
}
