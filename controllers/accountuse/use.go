/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package accountuse

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/tenancy"
)

// use is what fieldops objects use of one namespace (those being deleted
// too: they hand their fields back with the account's rights).
type use struct {
	// own are the accounts of the namespace that fieldops objects act as:
	// their ServiceAccounts are held.
	own map[tenancy.Account]bool
	// acting are the accounts, of any namespace, that fieldops objects act
	// as in the namespace: the RoleBindings of the namespace granting one
	// are held, and the Roles they refer to. A FieldPatch or
	// ManagedWorkload acts in its own namespace, a ClusterFieldPatch where
	// its targets may be (actsIn).
	acting map[tenancy.Account]bool
}

// inUse is what fieldops objects use of namespace ns. Nothing of the
// manager's own namespace is used, nor any account of it: nothing of
// fieldops's installation is held back.
func (r *Reconciler) inUse(ctx context.Context, ns string) (use, error) {
	u := use{own: map[tenancy.Account]bool{}, acting: map[tenancy.Account]bool{}}
	if ns == r.Tenancy.OwnNamespace {
		return u, nil
	}
	add := func(o client.Object) {
		a, ok := r.account(o)
		if !ok {
			return
		}
		if a.Namespace == ns {
			u.own[a] = true
		}
		u.acting[a] = true
	}
	var fps v1alpha1.FieldPatchList
	if err := r.Client.List(ctx, &fps, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		return u, err
	}
	for i := range fps.Items {
		add(&fps.Items[i])
	}
	var mws v1alpha1.ManagedWorkloadList
	if err := r.Client.List(ctx, &mws, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		return u, err
	}
	for i := range mws.Items {
		add(&mws.Items[i])
	}
	var cfps v1alpha1.ClusterFieldPatchList
	if err := r.Client.List(ctx, &cfps, client.UnsafeDisableDeepCopy); err != nil {
		return u, err
	}
	terminating, err := r.terminating(ctx, ns)
	if err != nil {
		return u, err
	}
	for i := range cfps.Items {
		cfp := &cfps.Items[i]
		a, ok := r.account(cfp)
		if !ok {
			continue
		}
		if a.Namespace == ns {
			u.own[a] = true
		}
		// Its targets in a namespace being deleted go with the namespace,
		// whose deletion must not wait for the patch's.
		if actsIn(cfp, ns) && !terminating {
			u.acting[a] = true
		}
	}
	return u, nil
}

// actsIn reports whether the ClusterFieldPatch cfp acts in namespace ns:
// the namespace of its one target, or, for a selector patch, every
// namespace (the targets a namespaceSelector matches change with the
// namespaces' labels).
func actsIn(cfp *v1alpha1.ClusterFieldPatch, ns string) bool {
	if cfp.Spec.TargetSelector != nil {
		return true
	}
	return cfp.Spec.Target.Namespace == ns
}

// terminating reports whether namespace ns is being deleted (read as
// metadata from the cache).
func (r *Reconciler) terminating(ctx context.Context, ns string) (bool, error) {
	n := &metav1.PartialObjectMetadata{}
	n.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Client.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return !n.GetDeletionTimestamp().IsZero(), nil
}

// account is the account fieldops object o acts as; ok is false when it
// acts with the manager's rights (or names an account it may not act
// as), and for an account of the manager's own namespace, which is never
// held back.
func (r *Reconciler) account(o client.Object) (tenancy.Account, bool) {
	var name, namespace string
	switch obj := o.(type) {
	case *v1alpha1.FieldPatch:
		name, namespace = obj.Spec.ServiceAccountName, obj.Spec.ServiceAccountNamespace
	case *v1alpha1.ClusterFieldPatch:
		name, namespace = obj.Spec.ServiceAccountName, obj.Spec.ServiceAccountNamespace
	case *v1alpha1.ManagedWorkload:
		name = obj.Spec.ServiceAccountName
	}
	a, err := tenancy.Resolve(r.Tenancy, o.GetNamespace(), name, namespace)
	if err != nil || a.IsManager() || a.Namespace == r.Tenancy.OwnNamespace {
		return tenancy.Account{}, false
	}
	return a, true
}
