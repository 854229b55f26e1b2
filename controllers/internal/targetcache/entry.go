/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package targetcache

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	toolscache "k8s.io/client-go/tools/cache"
)

// An object is watched alone while its scope has fewer than ShareAt
// watched objects, when it is a Secret, or when its scope's shared watch
// was refused: its entry runs a reflector restricted to its name, whose
// store (ownStore) holds at most that one object. When a group of its
// scope syncs, the group takes the entry over (moveTo) and its own watch
// stops.

// entry is one watched object and the references on it. Its object is
// held by its own watch (a store of at most one object), or, once it is
// in a group, by the group's shared watch.
type entry struct {
	cache  *Cache
	target Target
	scope  scope
	// refs are the references on it, each once (guarded by cache.mu): a
	// slice, since one or two is the rule, and for so few a slice is
	// smaller than a map and as fast to search.
	refs []Ref
	// cancel stops the entry's own watch (nil when it has none).
	cancel context.CancelFunc

	// settled is closed by the first sync of its own watch or the first
	// failed list or watch, whichever comes first: what a read waits for.
	settled     chan struct{}
	settledOnce sync.Once

	mu sync.Mutex
	// group holds the object once set: the entry's own watch, if it had
	// one, is stopped then and obj dropped.
	group  *group
	obj    *unstructured.Unstructured
	synced bool // the first sync of its own watch happened
	// missed says a read before the first sync went live: the first sync
	// is then reported as a change, since it may be newer than that read.
	missed  bool
	stopped bool
}

// watchAlone starts e's own watch: a reflector of the one object, by
// name (called with c.mu held).
func (e *entry) watchAlone(gvr schema.GroupVersionResource) {
	c, t := e.cache, e.target
	ctx, cancel := context.WithCancel(c.base)
	e.cancel = cancel
	selector := fields.OneTermEqualSelector("metadata.name", t.Name).String()
	ri := c.resource(gvr, t.Namespace)
	lw := listWatch(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		o.FieldSelector = selector
		return ri.List(ctx, o)
	}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = selector
		return ri.Watch(ctx, o)
	}, e.failed)
	example := &unstructured.Unstructured{}
	example.SetGroupVersionKind(t.GVK)
	r := toolscache.NewReflectorWithOptions(lw, example, &ownStore{e}, toolscache.ReflectorOptions{Name: "fieldops target " + t.String()})
	go r.RunWithContext(ctx)
}

func (c *Cache) resource(gvr schema.GroupVersionResource, namespace string) dynamic.ResourceInterface {
	if namespace != "" {
		return c.dynamic.Resource(gvr).Namespace(namespace)
	}
	return c.dynamic.Resource(gvr)
}

// failed settles e when err is a failure (the watch keeps retrying, with
// the reflector's backoff; until it syncs, reads go live at once).
func (e *entry) failed(err error) {
	if err != nil {
		e.settledOnce.Do(func() { close(e.settled) })
	}
}

func (e *entry) stop() {
	e.mu.Lock()
	e.stopped, e.obj = true, nil
	cancel := e.cancel
	e.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// exists says whether e's object exists and is held.
func (e *entry) exists() bool {
	e.mu.Lock()
	g, held := e.group, e.obj != nil
	e.mu.Unlock()
	if g != nil {
		return g.has(e.target.Name)
	}
	return held
}

// readLive notes a read made elsewhere: before the first sync, it makes
// the first sync a change.
func (e *entry) readLive() {
	e.mu.Lock()
	g := e.group
	if g == nil && !e.synced {
		e.missed = true
	}
	e.mu.Unlock()
	if g != nil {
		g.readLive(e)
	}
}

// read returns a copy of the held object, waiting up to timeout for the
// first sync (or failure); nil when it is not synced or does not exist.
func (e *entry) read(ctx context.Context, timeout time.Duration) *unstructured.Unstructured {
	e.mu.Lock()
	g := e.group
	e.mu.Unlock()
	if g == nil {
		wait(ctx, e.settled, timeout) // closed too when a group takes e over
		e.mu.Lock()
		if g = e.group; g == nil {
			defer e.mu.Unlock()
			if !e.synced {
				e.missed = true
				return nil
			}
			if e.obj == nil || e.stopped {
				return nil
			}
			return e.obj.DeepCopy()
		}
		e.mu.Unlock()
	}
	return g.read(ctx, e, timeout)
}

// set stores obj (nil: absent), from e's own watch, and tells the sinks
// when it is a change.
func (e *entry) set(obj *unstructured.Unstructured, replace bool) {
	e.mu.Lock()
	if e.stopped || e.group != nil {
		e.mu.Unlock()
		return
	}
	changed := true
	switch {
	case replace && e.synced: // a relist: a change only if the object differs
		changed = !sameVersion(e.obj, obj)
	case replace: // the first sync
		changed = e.missed
		e.synced = true
		e.settledOnce.Do(func() { close(e.settled) })
	}
	e.obj = obj
	e.mu.Unlock()
	if changed {
		rv := ""
		if obj != nil {
			rv = obj.GetResourceVersion()
		}
		e.cache.notify(e.target, rv, func(x *entry) bool { return x == e })
	}
}

// moveTo hands e over to g, whose watch has synced and holds held (nil:
// absent): e's own watch stops. It reports whether the sinks must be told
// (the object differs from what e held, or a read went live before any
// sync), and the resourceVersion to tell.
func (e *entry) moveTo(g *group, held *record) (bool, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped || e.group != nil && e.group != g {
		return false, ""
	}
	if e.group == g { // joined before the sync: told if it read live
		tell := e.missed
		e.missed = false
		return tell, held.version()
	}
	e.group = g
	// A read went live before any sync, or e's own watch had synced to
	// another version.
	tell := e.missed || e.synced && !held.same(e.obj)
	if e.cancel != nil {
		e.cancel()
		e.cancel = nil
	}
	e.obj, e.missed = nil, false
	e.settledOnce.Do(func() { close(e.settled) })
	return tell, held.version()
}

func sameVersion(a, b *unstructured.Unstructured) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.GetUID() == b.GetUID() && a.GetResourceVersion() == b.GetResourceVersion()
}

// ownStore is the reflector store of an entry's own watch.
type ownStore struct{ e *entry }

// own returns obj as the target, nil if it is something else.
func (s *ownStore) own(obj interface{}) *unstructured.Unstructured {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GetName() != s.e.target.Name || u.GetNamespace() != s.e.target.Namespace {
		return nil
	}
	return u
}

func (s *ownStore) Add(obj interface{}) error {
	if u := s.own(obj); u != nil {
		s.e.set(u, false)
	}
	return nil
}

func (s *ownStore) Update(obj interface{}) error { return s.Add(obj) }

func (s *ownStore) Delete(obj interface{}) error {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if u := s.own(obj); u != nil {
		s.e.set(nil, false)
	}
	return nil
}

func (s *ownStore) Replace(list []interface{}, _ string) error {
	var held *unstructured.Unstructured
	for _, it := range list {
		if u := s.own(it); u != nil {
			held = u
		}
	}
	s.e.set(held, true)
	return nil
}

func (s *ownStore) Resync() error { return nil }
