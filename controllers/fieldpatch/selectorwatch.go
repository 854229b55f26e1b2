/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fieldops/fieldops/controllers/internal/tenant"
)

// selectorWatches are the watches of the targets of selector patches
// (spec.targetSelector): one informer per patch, of every object of the
// selector's kind in the patch's scope (its own namespace for a
// FieldPatch, every namespace or the cluster-scoped kind for a
// ClusterFieldPatch), listed and watched with the rights of the account
// the patch acts as (impersonation, as its applies), so a tenant's
// selector never sees an object its account may not list. The label
// selector is applied here, not by the apiserver: an object relabelled
// out of the selector stays in the store, and its hand-back needs no read.
// An event queues the patch when the object matches, matched, or was
// written to by it, except the echo of the patch's own write (the
// resourceVersion its apply left).
//
// Namespaces are watched once, with the manager's rights, for the
// namespaceSelector of ClusterFieldPatches: a change of a Namespace's
// labels queues every ClusterFieldPatch with a namespaceSelector.
type selectorWatches struct {
	cfg *rest.Config

	mu     sync.Mutex
	base   context.Context
	queue  workqueue.TypedRateLimitingInterface[reconcile.Request]
	m      map[types.NamespacedName]*selectorWatch
	nsInf  toolscache.SharedIndexInformer
	nsStop chan struct{}
}

// selectorWatch is the informer of one selector patch and what the
// patch's reconciles remember between them.
type selectorWatch struct {
	scope    watchScope
	informer toolscache.SharedIndexInformer
	stop     chan struct{}

	mu sync.Mutex
	// err is the last error of the informer's list or watch (Forbidden
	// for an account that may not list the kind), nil once it synced.
	err error
	// relevant says whether an object's event concerns the patch (it
	// matches the selector, or the patch has a record of it).
	relevant func(u *unstructured.Unstructured) bool
	// wrote is, per target, the resourceVersion the patch's own last write
	// left it at: its echo queues nothing.
	wrote map[types.UID]string
	// converged is, per target, "<resourceVersion>/<generation>" of the
	// target and the patch when a reconcile found the target applied:
	// the next reconcile skips it while neither moved.
	converged map[types.UID]string
	// reasons are the reasons of the targets not applied at the last
	// reconcile (events are recorded when a target's reason changes).
	reasons map[types.UID]string
	// nsSelector is whether the patch selects namespaces by label.
	nsSelector bool
}

// watchScope is what an informer lists: a resource, in a namespace or
// all, as an account.
type watchScope struct {
	gvr       schema.GroupVersionResource
	namespace string
	account   tenant.Account
}

func newSelectorWatches(cfg *rest.Config) *selectorWatches {
	return &selectorWatches{cfg: cfg, m: map[types.NamespacedName]*selectorWatch{}, base: context.Background()}
}

// start receives the controller's queue; informers stop with ctx.
func (s *selectorWatches) start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	s.mu.Lock()
	s.queue, s.base = q, ctx
	s.mu.Unlock()
	go func() {
		<-ctx.Done()
		s.stopAll()
	}()
}

func (s *selectorWatches) stopAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, w := range s.m {
		close(w.stop)
		delete(s.m, k)
	}
	if s.nsStop != nil {
		close(s.nsStop)
		s.nsStop, s.nsInf = nil, nil
	}
}

func (s *selectorWatches) enqueue(key types.NamespacedName) {
	s.mu.Lock()
	q := s.queue
	s.mu.Unlock()
	if q != nil {
		q.Add(reconcile.Request{NamespacedName: key})
	}
}

// ensure returns the watch of patch key over scope, starting it (and
// stopping one over another scope) when needed.
func (s *selectorWatches) ensure(key types.NamespacedName, scope watchScope, nsSelector bool) (*selectorWatch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.m[key]; ok {
		if w.scope == scope {
			w.mu.Lock()
			w.nsSelector = nsSelector
			w.mu.Unlock()
			return w, nil
		}
		close(w.stop)
		delete(s.m, key)
	}
	if nsSelector && s.nsInf == nil {
		if err := s.startNamespaces(); err != nil {
			return nil, err
		}
	}
	cfg := rest.CopyConfig(s.cfg)
	if !scope.account.IsManager() {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: scope.account.UserName()}
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	w := &selectorWatch{scope: scope, stop: make(chan struct{}), wrote: map[types.UID]string{}, converged: map[types.UID]string{}, reasons: map[types.UID]string{}, nsSelector: nsSelector,
		relevant: func(*unstructured.Unstructured) bool { return true }}
	w.informer = dynamicinformer.NewFilteredDynamicInformer(dc, scope.gvr, scope.namespace, 0, toolscache.Indexers{}, nil).Informer()
	_ = w.informer.SetWatchErrorHandler(func(_ *toolscache.Reflector, err error) {
		w.mu.Lock()
		w.err = err
		w.mu.Unlock()
		s.enqueue(key)
	})
	if _, err := w.informer.AddEventHandler(s.handlers(key, w)); err != nil {
		return nil, err
	}
	stop := w.stop
	go w.informer.Run(stop)
	go func() {
		// The initial list's events may all come before the store reports
		// synced: one more reconcile once it does.
		if toolscache.WaitForCacheSync(stop, w.informer.HasSynced) {
			w.mu.Lock()
			w.err = nil
			w.mu.Unlock()
			s.enqueue(key)
		}
	}()
	s.m[key] = w
	return w, nil
}

// handlers queue patch key on the events of w's objects that concern it.
func (s *selectorWatches) handlers(key types.NamespacedName, w *selectorWatch) toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o interface{}) {
			if u, ok := o.(*unstructured.Unstructured); ok && w.concerns(u, nil) {
				s.enqueue(key)
			}
		},
		UpdateFunc: func(old, o interface{}) {
			u, ok := o.(*unstructured.Unstructured)
			if !ok {
				return
			}
			prev, _ := old.(*unstructured.Unstructured)
			if w.concerns(u, prev) {
				s.enqueue(key)
			}
		},
		DeleteFunc: func(o interface{}) {
			if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if u, ok := o.(*unstructured.Unstructured); ok && w.concerns(u, nil) {
				s.enqueue(key)
			}
		},
	}
}

// concerns reports whether an event of u (prev: the object before an
// update) concerns the patch: not the echo of its own write, and about an
// object that matches, matched, or holds a record of the patch.
func (w *selectorWatch) concerns(u, prev *unstructured.Unstructured) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if rv, ok := w.wrote[u.GetUID()]; ok && rv == u.GetResourceVersion() {
		return false
	}
	return w.relevant(u) || (prev != nil && w.relevant(prev))
}

// release stops the watch of patch key.
func (s *selectorWatches) release(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.m[key]; ok {
		close(w.stop)
		delete(s.m, key)
	}
}

// get is the watch of patch key, nil when none runs.
func (s *selectorWatches) get(key types.NamespacedName) *selectorWatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

// synced reports whether the watch holds every object of its scope, and
// the last error of its list or watch otherwise.
func (w *selectorWatch) synced() (bool, error) {
	if w.informer.HasSynced() {
		return true, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return false, w.err
}

// objects are the objects in the watch's store (shared: read only).
func (w *selectorWatch) objects() []*unstructured.Unstructured {
	items := w.informer.GetStore().List()
	out := make([]*unstructured.Unstructured, 0, len(items))
	for _, o := range items {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	return out
}

// startNamespaces starts the watch of Namespaces (s.mu held).
func (s *selectorWatches) startNamespaces() error {
	dc, err := dynamic.NewForConfig(s.cfg)
	if err != nil {
		return err
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(dc, schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", 0, toolscache.Indexers{}, nil).Informer()
	changed := func(o interface{}) {
		s.mu.Lock()
		var keys []types.NamespacedName
		for k, w := range s.m {
			w.mu.Lock()
			if w.nsSelector {
				keys = append(keys, k)
			}
			w.mu.Unlock()
		}
		s.mu.Unlock()
		for _, k := range keys {
			s.enqueue(k)
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: changed,
		UpdateFunc: func(old, o interface{}) {
			a, _ := old.(*unstructured.Unstructured)
			b, _ := o.(*unstructured.Unstructured)
			if a == nil || b == nil || !equalLabels(a.GetLabels(), b.GetLabels()) {
				changed(o)
			}
		},
		DeleteFunc: changed,
	}); err != nil {
		return err
	}
	s.nsInf, s.nsStop = inf, make(chan struct{})
	go inf.Run(s.nsStop)
	go func(stop chan struct{}) {
		if toolscache.WaitForCacheSync(stop, inf.HasSynced) {
			changed(nil)
		}
	}(s.nsStop)
	return nil
}

// namespaceLabels returns the labels of Namespace name, and whether the
// watch of Namespaces has synced and holds it.
func (s *selectorWatches) namespaceLabels(name string) (map[string]string, bool) {
	s.mu.Lock()
	inf := s.nsInf
	s.mu.Unlock()
	if inf == nil || !inf.HasSynced() {
		return nil, false
	}
	o, ok, err := inf.GetStore().GetByKey(name)
	if err != nil || !ok {
		return nil, false
	}
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return nil, false
	}
	return u.GetLabels(), true
}

// namespacesSynced reports whether the watch of Namespaces has synced.
func (s *selectorWatches) namespacesSynced() bool {
	s.mu.Lock()
	inf := s.nsInf
	s.mu.Unlock()
	return inf != nil && inf.HasSynced()
}

func equalLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}
