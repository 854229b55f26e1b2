/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package packed

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Lender lends the objects of one kind from an informer's store (see
// Reader).
type Lender interface {
	holds(list client.ObjectList) bool
	lend(ctx context.Context, informers cache.Informers, list client.ObjectList, opts *client.ListOptions) (bool, error)
}

// Reader is a client.Reader over an informer cache whose kinds may hold
// packed objects. A List with client.UnsafeDisableDeepCopy of one of
// Kinds (what counts objects by state, or only reads their names) is
// answered from the informer's store without unpacking: each packed
// item lent (its metadata shared with the cache, its Ready and Stalled
// conditions rebuilt from their summary, nothing else), an item held
// whole as it is. Where the store cannot be read so (a cache of several
// namespaces, cache.Options.DefaultNamespaces, whose informers hide
// their stores, or a list that selects by label or field), the List
// copies, so that the packed items are unpacked. Any other read is the
// cache's own, whose copies unpack.
type Reader struct {
	Cache cache.Cache
	Kinds []Lender
}

var _ client.Reader = Reader{}

// Get reads from the cache (a copy: unpacked).
func (r Reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return r.Cache.Get(ctx, key, obj, opts...)
}

// List lends the items of a packed kind when opts ask for no copy and
// select by namespace at most; otherwise it is the cache's List.
func (r Reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	if o.UnsafeDisableDeepCopy != nil && *o.UnsafeDisableDeepCopy {
		for _, k := range r.Kinds {
			if !k.holds(list) {
				continue
			}
			if done, err := k.lend(ctx, r.Cache, list, o); done {
				return err
			}
			// A packed object is no item of list: copy, which unpacks.
			return r.Cache.List(ctx, list, append(opts, client.UnsafeDisableDeepCopyOption(false))...)
		}
	}
	return r.Cache.List(ctx, list, opts...)
}

// holds reports whether list is a list of the kind.
func (k *Kind[T, P]) holds(list client.ObjectList) bool {
	return reflect.TypeOf(list) == reflect.TypeOf(k.NewList())
}

// lend fills list, a list of the kind, from the informer's store, if o
// selects by namespace at most and the informer shows its store.
func (k *Kind[T, P]) lend(ctx context.Context, informers cache.Informers, list client.ObjectList, o *client.ListOptions) (bool, error) {
	if o.LabelSelector != nil || o.FieldSelector != nil || o.Limit > 0 {
		return false, nil
	}
	inf, err := informers.GetInformer(ctx, P(new(T)))
	if err != nil {
		return true, err
	}
	s, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		return false, nil
	}
	var items []runtime.Object
	for _, it := range s.GetStore().List() {
		obj, ok := it.(client.Object)
		if !ok || (o.Namespace != "" && obj.GetNamespace() != o.Namespace) {
			continue
		}
		if p, ok := it.(*Object[T, P]); ok {
			items = append(items, p.lent())
		} else if _, ok := it.(P); ok {
			items = append(items, obj)
		}
	}
	return true, meta.SetList(list, items)
}
