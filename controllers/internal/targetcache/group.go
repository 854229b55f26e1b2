/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package targetcache

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// scope is where objects may share one watch: one kind in one version
// (and its resource), in one namespace ("" for a cluster-scoped kind).
type scope struct {
	gvr       schema.GroupVersionResource
	gvk       schema.GroupVersionKind
	namespace string
}

func (sc scope) String() string {
	if sc.namespace == "" {
		return sc.gvr.String()
	}
	return sc.gvr.String() + " in " + sc.namespace
}

// record is one object held by a shared watch: its UID, its
// resourceVersion and its JSON as the apiserver sent it (see
// rawObject). A read decodes a new copy from the JSON.
type record struct {
	uid types.UID
	rv  string
	raw []byte
}

// same says whether r (nil: absent) is the version of u (nil: absent).
func (r *record) same(u *unstructured.Unstructured) bool {
	if r == nil || u == nil {
		return r == nil && u == nil
	}
	return r.uid == u.GetUID() && r.rv == u.GetResourceVersion()
}

func (r *record) sameAs(o *record) bool {
	if r == nil || o == nil {
		return r == nil && o == nil
	}
	return r.uid == o.uid && r.rv == o.rv
}

// version is r's resourceVersion, "" when absent.
func (r *record) version() string {
	if r == nil {
		return ""
	}
	return r.rv
}

// group is the shared watch of a scope: one reflector on the whole
// namespace (or the whole cluster-scoped kind), holding every object it
// sees as a record, and telling the entries in the group of their
// object's changes. Entries of the scope that had watches of their own
// move to the group at its first sync (their watches stop then); entries
// acquired later join it at once, and read their object without a
// request whenever they join.
//
// A shared watch the apiserver refuses (Forbidden: the manager may list
// only some names, with RBAC resourceNames) is given up for good: the
// scope's entries go back to watches of their own.
type group struct {
	cache  *Cache
	scope  scope
	cancel context.CancelFunc

	// settled is closed by the first sync or the first failed list or
	// watch: what a read waits for.
	settled     chan struct{}
	settledOnce sync.Once

	mu      sync.Mutex
	objs    map[string]*record
	synced  bool
	stopped bool
}

// startGroup starts sc's shared watch (called with c.mu held).
func (c *Cache) startGroup(sc scope) *group {
	ctx, cancel := context.WithCancel(c.base)
	g := &group{cache: c, scope: sc, cancel: cancel, settled: make(chan struct{}), objs: map[string]*record{}}
	c.groups[sc] = g
	raw := newRawClient(c.rest, sc.gvr, sc.namespace)
	lw := toolscache.ToListWatcherWithWatchListSemantics(listWatch(raw.list, raw.watch, g.failed), raw)
	r := toolscache.NewReflectorWithOptions(lw, &rawObject{}, g, toolscache.ReflectorOptions{Name: "fieldops targets " + sc.String()})
	go r.RunWithContext(ctx)
	return g
}

func (g *group) stop() {
	g.cancel()
	g.mu.Lock()
	g.stopped, g.objs = true, nil
	g.mu.Unlock()
	g.settledOnce.Do(func() { close(g.settled) })
}

// failed settles g on a failed list or watch (the reflector retries with
// its backoff; reads go live meanwhile), and gives g up when the
// apiserver forbids it.
func (g *group) failed(err error) {
	if err == nil {
		return
	}
	g.settledOnce.Do(func() { close(g.settled) })
	if apierrors.IsForbidden(err) {
		go g.cache.giveUp(g)
	}
}

// giveUp stops g and watches its entries one by one again, for good.
func (c *Cache) giveUp(g *group) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups[g.scope] != g {
		return
	}
	delete(c.groups, g.scope)
	c.perName[g.scope] = true
	g.stop()
	for t, e := range c.entries {
		if e.scope != g.scope || !e.in(g) {
			continue
		}
		// A new entry with the same references and a watch of its own;
		// its first sync is told (events may have been missed).
		ne := &entry{cache: c, target: t, scope: e.scope, refs: e.refs, settled: make(chan struct{}), missed: true}
		c.entries[t] = ne
		e.stop()
		ne.watchAlone(g.scope.gvr)
	}
}

// join adds e to g (called with c.mu held, after e's references are set).
// liveReads: e's referrers read the object elsewhere; before g's first
// sync, that sync is told to e (it may be newer than their read). Once g
// has synced, nothing is told: a referrer reads after Acquire (see
// there), so its read is at least as new as what g held when e joined,
// and every later change reaches e as an event of g.
func (g *group) join(e *entry, liveReads bool) {
	g.mu.Lock()
	synced := g.synced
	g.mu.Unlock()
	e.mu.Lock()
	e.group = g
	e.missed = !synced && liveReads
	e.mu.Unlock()
	e.settledOnce.Do(func() { close(e.settled) })
}

// in says whether e is in g.
func (e *entry) in(g *group) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.group == g
}

// has says whether g holds the object named name.
func (g *group) has(name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.objs[name] != nil
}

// len is the number of objects g holds.
func (g *group) len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.objs)
}

// bytes is the size of the JSON of the objects g holds.
func (g *group) bytes() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, r := range g.objs {
		n += len(r.raw)
	}
	return n
}

// read returns a new copy of e's object, waiting up to timeout for g's
// first sync (or failure); nil when g is not synced (the read goes live,
// and the sync will be told) or the object does not exist.
func (g *group) read(ctx context.Context, e *entry, timeout time.Duration) *unstructured.Unstructured {
	wait(ctx, g.settled, timeout)
	g.mu.Lock()
	synced, stopped, rec := g.synced, g.stopped, g.objs[e.target.Name]
	g.mu.Unlock()
	if !synced && !stopped {
		e.mu.Lock()
		e.missed = true
		e.mu.Unlock()
	}
	if !synced || stopped || rec == nil {
		return nil
	}
	u, err := decode(rec.raw, g.scope.gvk)
	if err != nil {
		return nil // cannot be: the apiserver sent it; read live
	}
	return u
}

// readLive notes a read made elsewhere: before g's first sync, it makes
// the sync a change for e.
func (g *group) readLive(e *entry) {
	g.mu.Lock()
	synced := g.synced
	g.mu.Unlock()
	if !synced {
		e.mu.Lock()
		e.missed = true
		e.mu.Unlock()
	}
}

// tell tells the sinks of name's entry, if it is in g, of a change.
func (g *group) tell(name, rv string) {
	t := Target{GVK: g.scope.gvk, Namespace: g.scope.namespace, Name: name}
	g.cache.notify(t, rv, func(e *entry) bool { return e.in(g) })
}

// toRecord is the name and record of a rawObject (nil for anything else).
func toRecord(obj interface{}) (string, *record) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, ok := obj.(*rawObject)
	if !ok {
		return "", nil
	}
	return o.Name, &record{uid: o.UID, rv: o.ResourceVersion, raw: o.raw}
}

// The reflector's store (toolscache.ReflectorStore).

func (g *group) Add(obj interface{}) error {
	name, rec := toRecord(obj)
	if rec == nil {
		return fmt.Errorf("shared watch of %s: cannot hold %T", g.scope, obj)
	}
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return nil
	}
	prev := g.objs[name]
	g.objs[name] = rec
	synced := g.synced
	g.mu.Unlock()
	if synced && !prev.sameAs(rec) {
		g.tell(name, rec.rv)
	}
	return nil
}

func (g *group) Update(obj interface{}) error { return g.Add(obj) }

func (g *group) Delete(obj interface{}) error {
	name, _ := toRecord(obj)
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return nil
	}
	prev := g.objs[name]
	delete(g.objs, name)
	synced := g.synced
	g.mu.Unlock()
	if synced && prev != nil {
		g.tell(name, "")
	}
	return nil
}

func (g *group) Replace(list []interface{}, _ string) error {
	objs := make(map[string]*record, len(list))
	for _, it := range list {
		if name, rec := toRecord(it); rec != nil {
			objs[name] = rec
		}
	}
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return nil
	}
	old, first := g.objs, !g.synced
	g.objs, g.synced = objs, true
	g.mu.Unlock()
	g.settledOnce.Do(func() { close(g.settled) })
	if first {
		g.cache.takeOver(g, objs)
		return nil
	}
	// A relist: tell what changed across it.
	for name, rec := range objs {
		if !old[name].sameAs(rec) {
			g.tell(name, rec.rv)
		}
	}
	for name := range old {
		if objs[name] == nil {
			g.tell(name, "")
		}
	}
	return nil
}

func (g *group) Resync() error { return nil }

// takeOver moves the entries of g's scope to g at its first sync, whose
// objects are objs (read-only here), and tells the sinks of those whose
// object differs from what they were told, or that read live meanwhile.
func (c *Cache) takeOver(g *group, objs map[string]*record) {
	type told struct {
		e  *entry
		rv string
	}
	var tell []told
	c.mu.Lock()
	if c.groups[g.scope] == g {
		for t, e := range c.entries {
			if e.scope != g.scope {
				continue
			}
			if ok, rv := e.moveTo(g, objs[t.Name]); ok {
				tell = append(tell, told{e, rv})
			}
		}
	}
	c.mu.Unlock()
	for _, x := range tell {
		e := x.e
		c.notify(e.target, x.rv, func(y *entry) bool { return y == e })
	}
}
