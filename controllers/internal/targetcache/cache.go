/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package targetcache keeps the objects fieldops applies to (FieldPatch
// targets, the objects of ManagedWorkloads) in memory. A few objects of a
// kind in a namespace are watched one by one: a reflector restricted
// with the field selector metadata.name=<name> in the object's
// namespace, started when the first referrer refers to the object and
// stopped when the last one lets go. Nothing else of the kind is listed,
// watched or held, so a patch on one Secret costs one Secret in memory,
// not every Secret of the cluster.
//
// From ShareAt watched objects of one kind (in one version) in one
// namespace (or of one cluster-scoped kind) on, they share one watch of
// the namespace instead (see group): one request in all instead of one
// per object, and no per-watch goroutines and buffers, which cost more
// than the object a single-object watch holds (docs/performance.md). That
// watch holds every object of the kind in the namespace, each as its JSON
// (see rawObject), so an object that joins later is read
// without a request. Secrets are never shared: a namespace's Secrets stay
// out of the manager's memory whatever the number of patched ones (issue
// 16).
//
// Watches run with the manager's rights: they serve the reads of objects
// acting as the manager, and tell every referrer of a change. Objects
// acting as an account (spec.serviceAccountName) read through that
// account's client, never from here (see Acquire's liveReads).
//
// Cache is a client.Reader of the watched objects with the contract of an
// informer cache for a steady-state read (no request), and an exact answer
// on a miss: an object not watched, not synced within SyncTimeout (or
// whose watch fails), or absent from its synced store is read with a live
// GET, never answered NotFound from the store.
package targetcache

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// DefaultShareAt is the default Cache.ShareAt.
const DefaultShareAt = 16

// DefaultSyncTimeout is how long a read of a watched object waits for its
// first sync (one LIST of one name, or the initial events of a watch-list)
// before it reads live instead.
const DefaultSyncTimeout = 2 * time.Second

// Target names one object: its group, version and kind, namespace (""
// for cluster-scoped) and name. Different versions of a kind are
// different targets (each is watched and read in its own version).
type Target struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
}

// TargetOf is the Target an object names.
func TargetOf(obj client.Object) Target {
	return Target{GVK: obj.GetObjectKind().GroupVersionKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

func (t Target) String() string {
	if t.Namespace == "" {
		return fmt.Sprintf("%s %s", t.GVK, t.Name)
	}
	return fmt.Sprintf("%s %s/%s", t.GVK, t.Namespace, t.Name)
}

// Sink is told about every change of a target it holds a reference on
// (added, updated, deleted, or changed across a relist), with the
// target's resourceVersion after the change ("" when it is gone). It must
// not block.
type Sink interface {
	TargetChanged(t Target, resourceVersion string)
}

// Ref is one reference on a target: a sink (one per controller) and the
// object that refers to the target.
type Ref struct {
	Sink     Sink
	Referrer types.NamespacedName
}

// Cache holds one watched object per Target with at least one Ref. It is
// safe for concurrent use.
type Cache struct {
	dynamic dynamic.Interface
	rest    rest.Interface // raw requests of shared watches
	mapper  meta.RESTMapper
	live    client.Reader
	// SyncTimeout bounds the wait of a read for a new watch's first sync.
	SyncTimeout time.Duration
	// ShareAt is the number of watched objects of one kind and version in
	// one namespace from which they share one watch of the namespace
	// (0: never). It is read when an object is first acquired.
	ShareAt int

	base   context.Context
	cancel context.CancelFunc
	// forget removes the cache from the registry of Shared once stopped.
	forget func()

	mu      sync.Mutex
	entries map[Target]*entry
	// counts are the entries per scope; groups the shared watches.
	counts map[scope]int
	groups map[scope]*group
	// perName are the scopes whose shared watch was refused: their
	// objects are watched one by one from then on.
	perName map[scope]bool
}

// New returns a Cache whose watches use cfg and hc (nil: a client of
// cfg's own) and mapper, and whose misses read through live (an uncached
// reader, e.g. the manager's APIReader). Its watches stop when Start's
// context ends (or with Stop).
func New(cfg *rest.Config, hc *http.Client, mapper meta.RESTMapper, live client.Reader) (*Cache, error) {
	if hc == nil {
		var err error
		if hc, err = rest.HTTPClientFor(cfg); err != nil {
			return nil, fmt.Errorf("target cache: %w", err)
		}
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("target cache: %w", err)
	}
	rc, err := newRESTClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("target cache: %w", err)
	}
	base, cancel := context.WithCancel(context.Background())
	return &Cache{dynamic: dyn, rest: rc, mapper: mapper, live: live, SyncTimeout: DefaultSyncTimeout, ShareAt: DefaultShareAt, base: base, cancel: cancel,
		entries: map[Target]*entry{}, counts: map[scope]int{}, groups: map[scope]*group{}, perName: map[scope]bool{}}, nil
}

// shared are the Caches of Shared, by the manager's informer cache: a
// manager wrapped to change its client (controllers.SetupWith does) is
// still the same manager.
var shared = struct {
	sync.Mutex
	m map[cache.Cache]*Cache
}{m: map[cache.Cache]*Cache{}}

// Shared returns the Cache of mgr, creating it (and adding it to mgr, so
// its watches stop with the manager) on first use: every controller of a
// manager shares one watch per object.
func Shared(mgr manager.Manager) (*Cache, error) {
	key := mgr.GetCache()
	shared.Lock()
	defer shared.Unlock()
	if c, ok := shared.m[key]; ok {
		return c, nil
	}
	c, err := New(mgr.GetConfig(), mgr.GetHTTPClient(), mgr.GetRESTMapper(), mgr.GetAPIReader())
	if err != nil {
		return nil, err
	}
	c.forget = func() {
		shared.Lock()
		defer shared.Unlock()
		delete(shared.m, key)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("target cache: %w", err)
	}
	shared.m[key] = c
	return c, nil
}

// Start implements manager.Runnable: it stops every watch when ctx ends.
func (c *Cache) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case <-c.base.Done():
	}
	c.Stop()
	if c.forget != nil {
		c.forget()
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: watches are
// started by reconcilers, which run only when elected.
func (c *Cache) NeedLeaderElection() bool { return false }

// Stop stops every watch and forgets every reference.
func (c *Cache) Stop() {
	c.cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		e.stop()
	}
	for _, g := range c.groups {
		g.stop()
	}
	c.entries, c.counts, c.groups = map[Target]*entry{}, map[scope]int{}, map[scope]*group{}
}

// Acquire adds ref to t's references, starting t's watch if it is the
// first. liveReads says the referrer reads t elsewhere (through an
// account's client), after Acquire: if that read may come before the
// watch's first sync, the first sync is reported as a change, since it
// may be newer; a watch that has synced already reports only later
// changes. It fails only when t's kind is unknown or t is malformed.
func (c *Cache) Acquire(ref Ref, t Target, liveReads bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[t]; e != nil {
		if !slices.Contains(e.refs, ref) {
			e.refs = append(e.refs, ref)
		}
		if liveReads {
			e.readLive()
		}
		return nil
	}
	if c.base.Err() != nil {
		return fmt.Errorf("watch %s: the target cache is stopped", t)
	}
	if t.Name == "" {
		return fmt.Errorf("watch %s: no name", t)
	}
	mapping, err := c.mapper.RESTMapping(t.GVK.GroupKind(), t.GVK.Version)
	if err != nil {
		return fmt.Errorf("watch %s: %w", t, err)
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	if namespaced != (t.Namespace != "") {
		return fmt.Errorf("watch %s: namespace %q does not fit the kind's scope", t, t.Namespace)
	}
	c.add(t, mapping.Resource, ref, liveReads)
	return nil
}

// add makes t's entry (called with c.mu held): it joins its scope's
// shared watch, starts one when t is the ShareAt-th object of the scope,
// or else gets a watch of its own.
func (c *Cache) add(t Target, gvr schema.GroupVersionResource, ref Ref, liveReads bool) {
	sc := scope{gvr: gvr, gvk: t.GVK, namespace: t.Namespace}
	e := &entry{cache: c, target: t, scope: sc, refs: []Ref{ref}, settled: make(chan struct{}), missed: liveReads}
	c.entries[t] = e
	c.counts[sc]++
	g := c.groups[sc]
	if g == nil && c.shareable(sc) && c.counts[sc] >= c.ShareAt {
		g = c.startGroup(sc)
	}
	if g != nil {
		g.join(e, liveReads)
		return
	}
	e.watchAlone(gvr)
}

// shareable says whether sc's objects may share one watch.
func (c *Cache) shareable(sc scope) bool {
	return c.ShareAt > 0 && !c.perName[sc] && (sc.gvk.Group != "" || sc.gvk.Kind != "Secret")
}

// Release removes ref from t's references, stopping t's watch and dropping
// its object when it was the last.
func (c *Cache) Release(ref Ref, t Target) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[t]
	if e == nil {
		return
	}
	e.refs = slices.DeleteFunc(e.refs, func(r Ref) bool { return r == ref })
	if len(e.refs) > 0 {
		return
	}
	delete(c.entries, t)
	e.stop()
	if c.counts[e.scope]--; c.counts[e.scope] > 0 {
		return
	}
	delete(c.counts, e.scope)
	if g := c.groups[e.scope]; g != nil {
		delete(c.groups, e.scope)
		g.stop()
	}
}

// listWatch lists and watches with list and watchFn, telling failed of
// every list's and watch's error.
func listWatch(list func(context.Context, metav1.ListOptions) (runtime.Object, error), watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), failed func(error)) *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			l, err := list(ctx, o)
			failed(err)
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := watchFn(ctx, o)
			failed(err)
			return w, err
		},
	}
}

// Referrers returns the referrers whose references on t were taken with
// sink, each once; none when t is not watched.
func (c *Cache) Referrers(t Target, sink Sink) []types.NamespacedName {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[t]
	if e == nil {
		return nil
	}
	out := make([]types.NamespacedName, 0, len(e.refs))
	for _, r := range e.refs {
		if r.Sink == sink {
			out = append(out, r.Referrer)
		}
	}
	return out
}

// notify tells every sink holding a reference on t (once each) that t is
// now at resourceVersion rv, if when (called with t's entry, under c.mu)
// says so.
func (c *Cache) notify(t Target, rv string, when func(*entry) bool) {
	c.mu.Lock()
	e := c.entries[t]
	var sinks []Sink
	if e != nil && (when == nil || when(e)) {
		seen := map[Sink]bool{}
		for _, ref := range e.refs {
			if !seen[ref.Sink] {
				seen[ref.Sink] = true
				sinks = append(sinks, ref.Sink)
			}
		}
	}
	c.mu.Unlock()
	for _, s := range sinks {
		s.TargetChanged(t, rv)
	}
}
