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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
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

// Stats describe what a Cache holds.
type Stats struct {
	// Watches is the number of watched objects (one watch each).
	Watches int
	// Objects is the number of those that exist and are held.
	Objects int
	// Refs is the number of references over all watches.
	Refs int
	// Shared is the number of shared watches of a namespace (or of a
	// cluster-scoped kind), and Held the objects they hold (the watched
	// ones among them included).
	Shared, Held int
}

// Stats returns what c holds now.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s Stats
	for _, e := range c.entries {
		s.Watches++
		s.Refs += len(e.refs)
		if e.exists() {
			s.Objects++
		}
	}
	for _, g := range c.groups {
		s.Shared++
		s.Held += g.len()
	}
	return s
}

// HeldBytes is the size of what the shared watches hold of their objects:
// the sum of each one's JSON (see rawObject), in bytes.
func (c *Cache) HeldBytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, g := range c.groups {
		n += g.bytes()
	}
	return n
}

// Watched reports whether t is watched.
func (c *Cache) Watched(t Target) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[t] != nil
}

var _ client.Reader = &Cache{}

// Get reads a watched object from its store; anything else, and every
// miss, through the live reader. obj must carry its GroupVersionKind (an
// *unstructured.Unstructured, as ownershipcore.Applier reads).
func (c *Cache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if ok && len(opts) == 0 {
		t := Target{GVK: u.GroupVersionKind(), Namespace: key.Namespace, Name: key.Name}
		c.mu.Lock()
		e := c.entries[t]
		c.mu.Unlock()
		if e != nil {
			if held := e.read(ctx, c.SyncTimeout); held != nil {
				u.Object = held.Object
				return nil
			}
		}
	}
	return c.live.Get(ctx, key, obj, opts...)
}

// List reads through the live reader: the cache holds single objects.
func (c *Cache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.live.List(ctx, list, opts...)
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

// wait waits up to timeout for ch to close; it reports whether it did.
func wait(ctx context.Context, ch <-chan struct{}, timeout time.Duration) bool {
	select {
	case <-ch:
		return true
	default:
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-ch:
		return true
	case <-timer.C:
	case <-ctx.Done():
	}
	return false
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
