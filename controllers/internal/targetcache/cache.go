// Package targetcache keeps the objects fieldops applies to (FieldPatch
// targets, the objects of ManagedWorkloads) in memory, one watch per
// object: a reflector restricted with the field selector
// metadata.name=<name> in the object's namespace, started when the first
// referrer refers to the object and stopped when the last one lets go.
// Nothing else of a kind is listed, watched or held, so a patch on one
// Secret costs one Secret in memory, not every Secret of the cluster.
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
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

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
	mapper  meta.RESTMapper
	live    client.Reader
	// SyncTimeout bounds the wait of a read for a new watch's first sync.
	SyncTimeout time.Duration

	base   context.Context
	cancel context.CancelFunc
	// forget removes the cache from the registry of Shared once stopped.
	forget func()

	mu      sync.Mutex
	entries map[Target]*entry
}

// New returns a Cache whose watches use dyn and mapper, and whose misses
// read through live (an uncached reader, e.g. the manager's APIReader).
// Its watches stop when Start's context ends (or with Stop).
func New(dyn dynamic.Interface, mapper meta.RESTMapper, live client.Reader) *Cache {
	base, cancel := context.WithCancel(context.Background())
	return &Cache{dynamic: dyn, mapper: mapper, live: live, SyncTimeout: DefaultSyncTimeout, base: base, cancel: cancel, entries: map[Target]*entry{}}
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
	dyn, err := dynamic.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("target cache: %w", err)
	}
	c := New(dyn, mgr.GetRESTMapper(), mgr.GetAPIReader())
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
	c.entries = map[Target]*entry{}
}

// Acquire adds ref to t's references, starting t's watch if it is the
// first. liveReads says the referrer reads t elsewhere (through an
// account's client): if that read may come before the watch's first
// sync, the first sync is reported as a change, since it may be newer.
// It fails only when t's kind is unknown or t is malformed.
func (c *Cache) Acquire(ref Ref, t Target, liveReads bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[t]; e != nil {
		e.refs[ref] = struct{}{}
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
	e := c.start(t, mapping.Resource)
	e.refs[ref] = struct{}{}
	if liveReads {
		e.readLive()
	}
	c.entries[t] = e
	return nil
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
	delete(e.refs, ref)
	if len(e.refs) == 0 {
		delete(c.entries, t)
		e.stop()
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
}

// Stats returns what c holds now.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s Stats
	for _, e := range c.entries {
		s.Watches++
		s.Refs += len(e.refs)
		e.mu.Lock()
		if e.obj != nil {
			s.Objects++
		}
		e.mu.Unlock()
	}
	return s
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

// start starts t's watch (called with c.mu held).
func (c *Cache) start(t Target, gvr schema.GroupVersionResource) *entry {
	ctx, cancel := context.WithCancel(c.base)
	e := &entry{cache: c, target: t, refs: map[Ref]struct{}{}, cancel: cancel, settled: make(chan struct{})}
	var ri dynamic.ResourceInterface = c.dynamic.Resource(gvr)
	if t.Namespace != "" {
		ri = c.dynamic.Resource(gvr).Namespace(t.Namespace)
	}
	selector := fields.OneTermEqualSelector("metadata.name", t.Name).String()
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			l, err := ri.List(ctx, o)
			e.failed(err)
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			w, err := ri.Watch(ctx, o)
			e.failed(err)
			return w, err
		},
	}
	example := &unstructured.Unstructured{}
	example.SetGroupVersionKind(t.GVK)
	r := toolscache.NewReflectorWithOptions(lw, example, e, toolscache.ReflectorOptions{Name: "fieldops target " + t.String()})
	go r.RunWithContext(ctx)
	return e
}

// notify tells every sink holding a reference on t (once each) that t is
// now at resourceVersion rv.
func (c *Cache) notify(t Target, rv string) {
	c.mu.Lock()
	e := c.entries[t]
	var sinks []Sink
	if e != nil {
		seen := map[Sink]bool{}
		for ref := range e.refs {
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

// entry is one watched object: the reflector's store (a store of at most
// one object) and the references on it.
type entry struct {
	cache  *Cache
	target Target
	cancel context.CancelFunc
	refs   map[Ref]struct{} // guarded by cache.mu

	// settled is closed by the first sync or the first failed list or
	// watch, whichever comes first: what a read waits for.
	settled     chan struct{}
	settledOnce sync.Once

	mu     sync.Mutex
	obj    *unstructured.Unstructured
	synced bool // the first sync happened
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
	e.cancel()
	e.mu.Lock()
	e.stopped, e.obj = true, nil
	e.mu.Unlock()
}

// readLive notes a read made elsewhere: before the first sync, it makes
// the first sync a change.
func (e *entry) readLive() {
	e.mu.Lock()
	if !e.synced {
		e.missed = true
	}
	e.mu.Unlock()
}

// read returns a copy of the held object, waiting up to timeout for the
// first sync (or failure); nil when it is not synced or does not exist.
func (e *entry) read(ctx context.Context, timeout time.Duration) *unstructured.Unstructured {
	select {
	case <-e.settled:
	default:
		timer := time.NewTimer(timeout)
		select {
		case <-e.settled:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
	}
	e.mu.Lock()
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

// set stores obj (nil: absent) and tells the sinks when it is a change.
func (e *entry) set(obj *unstructured.Unstructured, replace bool) {
	e.mu.Lock()
	if e.stopped {
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
		e.cache.notify(e.target, rv)
	}
}

func sameVersion(a, b *unstructured.Unstructured) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.GetUID() == b.GetUID() && a.GetResourceVersion() == b.GetResourceVersion()
}

// own returns obj as the target, nil if it is something else.
func (e *entry) own(obj interface{}) *unstructured.Unstructured {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GetName() != e.target.Name || u.GetNamespace() != e.target.Namespace {
		return nil
	}
	return u
}

// The reflector's store (toolscache.ReflectorStore).

func (e *entry) Add(obj interface{}) error {
	if u := e.own(obj); u != nil {
		e.set(u, false)
	}
	return nil
}

func (e *entry) Update(obj interface{}) error { return e.Add(obj) }

func (e *entry) Delete(obj interface{}) error {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if u := e.own(obj); u != nil {
		e.set(nil, false)
	}
	return nil
}

func (e *entry) Replace(list []interface{}, _ string) error {
	var held *unstructured.Unstructured
	for _, it := range list {
		if u := e.own(it); u != nil {
			held = u
		}
	}
	e.set(held, true)
	return nil
}

func (e *entry) Resync() error { return nil }
