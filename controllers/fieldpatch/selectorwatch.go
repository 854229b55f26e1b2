/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"context"
	"maps"
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

	"github.com/fieldops/fieldops/controllers/internal/targetcache"
)

// selectorWatches are the watches of the targets of selector patches
// (spec.targetSelector): for each patch, a selector watch of the shared
// targetcache.Selectors keyed by the selector's resource, the patch's
// scope (its own namespace for a FieldPatch, every namespace or the
// cluster-scoped kind for a ClusterFieldPatch), the account the patch acts
// as (impersonated, as its applies: a tenant's selector never sees an
// object its account may not list) and the label selector, which the
// apiserver applies: objects that do not match are never held, and those
// that do are held as the JSON the apiserver sent. Patches with the same
// key share one watch.
//
// An object relabelled out of the selector leaves the watch (a DELETED
// event); when the patch holds a record of it, the event queues the patch,
// whose reconcile reads the object (one GET, through the account) and
// gives its fields back. An event queues the patch when the object
// matches (names, namespace labels) or has a record of the patch, except
// the echo of the patch's own write (the resourceVersion its apply left),
// unless that write took the object out of the selected set. The
// reconcile remembers such a write (leftByOwnWrite), so that a give-back
// that puts the object in again does not start the apply over.
//
// Namespaces are watched once, with the manager's rights, for the
// namespaceSelector of ClusterFieldPatches: a change of a Namespace's
// labels queues every ClusterFieldPatch with a namespaceSelector.
type selectorWatches struct {
	cfg  *rest.Config
	held *targetcache.Selectors

	mu     sync.Mutex
	base   context.Context
	queue  workqueue.TypedRateLimitingInterface[reconcile.Request]
	m      map[types.NamespacedName]*selectorWatch
	nsInf  toolscache.SharedIndexInformer
	nsStop chan struct{}
}

// selectorWatch is one selector patch's sink on its selector watch, and
// what the patch's reconciles remember between them.
type selectorWatch struct {
	owner *selectorWatches
	key   types.NamespacedName
	scope targetcache.SelectorKey
	held  *targetcache.SelectorWatch

	mu sync.Mutex
	// err is the last error of the watch's list or watch (Forbidden for
	// an account that may not list the kind), nil once it synced.
	err error
	// relevant says whether an object's event concerns the patch (it
	// matches the selector's names and namespaces, or the patch has a
	// record of it).
	relevant func(h targetcache.Held) bool
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
	// leftByOwnWrite are the targets the patch's own write took out of
	// the selected set, with the patch's generation then.
	leftByOwnWrite map[types.UID]int64
}

var _ targetcache.SelectorSink = &selectorWatch{}

func newSelectorWatches(cfg *rest.Config) *selectorWatches {
	return &selectorWatches{cfg: cfg, held: targetcache.NewSelectors(cfg), m: map[types.NamespacedName]*selectorWatch{}, base: context.Background()}
}

// start receives the controller's queue; watches stop with ctx.
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
	for k := range s.m {
		delete(s.m, k)
	}
	s.held.Stop()
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

// ensure returns the watch of patch key over scope, acquiring it (and
// releasing one over another scope) when needed.
func (s *selectorWatches) ensure(key types.NamespacedName, scope targetcache.SelectorKey, nsSelector bool) (*selectorWatch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.m[key]; ok {
		if w.scope == scope {
			w.mu.Lock()
			w.nsSelector = nsSelector
			w.mu.Unlock()
			return w, nil
		}
		s.held.Release(w.scope, w)
		delete(s.m, key)
	}
	if nsSelector && s.nsInf == nil {
		if err := s.startNamespaces(); err != nil {
			return nil, err
		}
	}
	w := &selectorWatch{owner: s, key: key, scope: scope, wrote: map[types.UID]string{}, converged: map[types.UID]string{}, reasons: map[types.UID]string{}, nsSelector: nsSelector,
		relevant: func(targetcache.Held) bool { return true }}
	held, err := s.held.Acquire(scope, w)
	if err != nil {
		return nil, err
	}
	w.held = held
	s.m[key] = w
	return w, nil
}

// SelectorChanged queues the patch on an event that concerns it.
func (w *selectorWatch) SelectorChanged(h targetcache.Held, gone bool) {
	if w.concerns(h, gone) {
		w.owner.enqueue(w.key)
	}
}

// SelectorSettled notes the watch's sync or failure and queues the patch.
func (w *selectorWatch) SelectorSettled(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
	w.owner.enqueue(w.key)
}

// concerns reports whether an event of h concerns the patch: about an
// object that matches or holds a record of the patch, and not the echo of
// its own write, unless that write took the object out of the selected
// set (gone): its fields are then given back, and no other event may come
// to say so.
func (w *selectorWatch) concerns(h targetcache.Held, gone bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if rv, ok := w.wrote[h.UID]; ok && rv == h.ResourceVersion && !gone {
		return false
	}
	return w.relevant(h)
}

// release stops the watch of patch key (the shared watch stops with its
// last patch).
func (s *selectorWatches) release(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.m[key]; ok {
		s.held.Release(w.scope, w)
		delete(s.m, key)
	}
}

// get is the watch of patch key, nil when none runs.
func (s *selectorWatches) get(key types.NamespacedName) *selectorWatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

// synced reports whether the watch holds every matching object, and the
// last error of its list or watch otherwise.
func (w *selectorWatch) synced() (bool, error) {
	if ok, err := w.held.Synced(); ok || err != nil {
		return ok, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return false, w.err
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
			if a == nil || b == nil || !maps.Equal(a.GetLabels(), b.GetLabels()) {
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

func (w *selectorWatch) isConverged(uid types.UID, version string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.converged[uid] == version
}

func (w *selectorWatch) setConverged(uid types.UID, version string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	setOrDelete(w.converged, uid, version)
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
	setOrDelete(w.reasons, uid, reason)
}

// setOrDelete sets m[uid] to v, or deletes it when v is empty.
func setOrDelete(m map[types.UID]string, uid types.UID, v string) {
	if v == "" {
		delete(m, uid)
		return
	}
	m[uid] = v
}

// setLeftOwn notes that the patch's own write at generation gen took the
// target uid out of the selected set.
func (w *selectorWatch) setLeftOwn(uid types.UID, gen int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.leftByOwnWrite == nil {
		w.leftByOwnWrite = map[types.UID]int64{}
	}
	w.leftByOwnWrite[uid] = gen
}

// leftOwn reports whether the patch's own write at generation gen took
// the target uid out of the selected set.
func (w *selectorWatch) leftOwn(uid types.UID, gen int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.leftByOwnWrite[uid]
	return ok && at == gen
}

// forget forgets what the reconciles remembered of the target uid, but
// that the patch's own write took it out of the selected set.
func (w *selectorWatch) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.wrote, uid)
	delete(w.converged, uid)
	delete(w.reasons, uid)
}
