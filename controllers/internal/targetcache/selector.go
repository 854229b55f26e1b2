/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package targetcache

import (
	"context"
	"fmt"
	"sort"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
)

// A selector watch holds the objects of one kind that match a label
// selector, for the patches that select their targets by label
// (spec.targetSelector). The selector is sent to the apiserver
// (ListOptions.LabelSelector on the list and the watch), so an object
// that does not match is never sent, decoded or held; each object that
// does is held as a shared watch holds it: its JSON (see
// rawObject), decoded into a new copy on each read (Held.Object).
//
// An object that stops matching (relabelled) leaves the watch as the
// apiserver tells it: a DELETED event carrying its last matching state
// (the watch cache's rule for a watch with a selector). A sink that keeps
// records of such objects reads them itself when they leave.
//
// Watches are shared by key: the patches with the same kind, namespace,
// account and label selector share one list, one watch and one copy of
// each object.

// SelectorKey names one selector watch: the objects of resource GVR (of
// kind GVK, decoded in that version) in Namespace ("" for every namespace,
// or a cluster-scoped kind) whose labels match LabelSelector (the
// apiserver's syntax, as labels.Selector's String), listed and watched
// as UserName: "" for the manager's own identity, otherwise impersonated
// (a tenant's service account, system:serviceaccount:<ns>:<name>), so a
// tenant's watch holds only what its account may list.
type SelectorKey struct {
	GVR           schema.GroupVersionResource
	GVK           schema.GroupVersionKind
	Namespace     string
	UserName      string
	LabelSelector string
}

func (k SelectorKey) String() string {
	s := k.GVR.String()
	if k.Namespace != "" {
		s += " in " + k.Namespace
	}
	s += " matching " + k.LabelSelector
	if k.UserName != "" {
		s += " as " + k.UserName
	}
	return s
}

// Held is one object of a selector watch: its metadata, and its JSON as
// the apiserver sent it (shared between readers: read only).
type Held struct {
	Namespace       string
	Name            string
	UID             types.UID
	ResourceVersion string

	gvk schema.GroupVersionKind
	raw []byte
}

// Object decodes a new copy of the object (the caller's to change): it
// inflates and decodes the whole JSON on every call, so a caller that
// needs only the name, UID or resourceVersion reads the fields of Held.
func (h Held) Object() (*unstructured.Unstructured, error) {
	u, err := decode(h.raw, h.gvk)
	if err != nil {
		return nil, fmt.Errorf("decode %s/%s: %w", h.Namespace, h.Name, err)
	}
	return u, nil
}

// Size is the size of the JSON held, in bytes.
func (h Held) Size() int { return len(h.raw) }

// SelectorSink is told about the objects of a selector watch. Its methods
// must not block. A sink is compared by identity (use a pointer).
type SelectorSink interface {
	// SelectorChanged tells that h entered the selected set, changed, or
	// left it (gone: deleted, or its labels no longer match; h is then its
	// last state seen). It is called only after the watch's first sync.
	SelectorChanged(h Held, gone bool)
	// SelectorSettled tells that the watch synced (err nil: its first list,
	// or a relist, is in) or that a list or watch failed (err: Forbidden
	// for an account that may not list the kind; the watch retries).
	SelectorSettled(err error)
}

// Selectors runs selector watches, one per SelectorKey, shared by the
// sinks that acquire it. It is safe for concurrent use.
type Selectors struct {
	cfg *rest.Config

	base   context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	watches map[SelectorKey]*SelectorWatch
}

// NewSelectors returns the selector watches of cfg (the manager's
// identity; keys with a UserName impersonate it). They stop with Stop.
func NewSelectors(cfg *rest.Config) *Selectors {
	base, cancel := context.WithCancel(context.Background())
	return &Selectors{cfg: cfg, base: base, cancel: cancel, watches: map[SelectorKey]*SelectorWatch{}}
}

// Acquire returns the watch of key with sink among its sinks, starting
// the watch (list, then watch, with key's label selector) on first use.
// Errors come from building the client of key.UserName.
func (s *Selectors) Acquire(key SelectorKey, sink SelectorSink) (*SelectorWatch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.watches[key]; ok {
		w.mu.Lock()
		w.sinks[sink] = true
		w.mu.Unlock()
		return w, nil
	}
	rc, err := s.client(key.UserName)
	if err != nil {
		return nil, fmt.Errorf("selector watch of %s: %w", key, err)
	}
	ctx, cancel := context.WithCancel(s.base)
	w := &SelectorWatch{key: key, cancel: cancel, sinks: map[SelectorSink]bool{sink: true}, objs: map[types.UID]*Held{}}
	raw := newRawClient(rc, key.GVR, key.Namespace)
	list := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		o.LabelSelector = key.LabelSelector
		return raw.list(ctx, o)
	}
	watchFn := func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = key.LabelSelector
		return raw.watch(ctx, o)
	}
	lw := toolscache.ToListWatcherWithWatchListSemantics(listWatch(list, watchFn, w.failed), raw)
	r := toolscache.NewReflectorWithOptions(lw, &rawObject{}, w, toolscache.ReflectorOptions{Name: "fieldops selector " + key.String()})
	go r.RunWithContext(ctx)
	s.watches[key] = w
	return w, nil
}

// client is the client of raw requests as user ("" for the manager).
func (s *Selectors) client(user string) (rest.Interface, error) {
	cfg := rest.CopyConfig(s.cfg)
	if user != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return newRESTClient(cfg, hc)
}

// Release removes sink from the watch of key; the watch stops with its
// last sink, and what it held is dropped.
func (s *Selectors) Release(key SelectorKey, sink SelectorSink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.watches[key]
	if !ok {
		return
	}
	w.mu.Lock()
	delete(w.sinks, sink)
	last := len(w.sinks) == 0
	w.mu.Unlock()
	if last {
		delete(s.watches, key)
		w.stop()
	}
}

// Stop stops every watch.
func (s *Selectors) Stop() {
	s.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, w := range s.watches {
		w.stop()
		delete(s.watches, k)
	}
}

// Len is the number of selector watches running.
func (s *Selectors) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watches)
}

// SelectorWatch is one selector watch: the matching objects by UID, and
// the sinks it tells of their changes.
type SelectorWatch struct {
	key    SelectorKey
	cancel context.CancelFunc

	mu      sync.Mutex
	sinks   map[SelectorSink]bool
	objs    map[types.UID]*Held
	synced  bool
	err     error
	stopped bool
}

func (w *SelectorWatch) stop() {
	w.cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped, w.objs, w.sinks = true, nil, nil
}

// Key is the watch's key.
func (w *SelectorWatch) Key() SelectorKey { return w.key }

// Synced reports whether the watch holds every matching object (its
// first list is in); before, the error of its last failed list or watch
// (nil while the first list runs).
func (w *SelectorWatch) Synced() (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.synced {
		return true, nil
	}
	return false, w.err
}

// Objects are the objects held, sorted by namespace and name.
func (w *SelectorWatch) Objects() []Held {
	w.mu.Lock()
	out := make([]Held, 0, len(w.objs))
	for _, h := range w.objs {
		out = append(out, *h)
	}
	w.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Get is the object held with uid, if any.
func (w *SelectorWatch) Get(uid types.UID) (Held, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h, ok := w.objs[uid]
	if !ok {
		return Held{}, false
	}
	return *h, true
}

// Len is the number of objects held.
func (w *SelectorWatch) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.objs)
}

// HeldBytes is the size of the JSON of the objects held.
func (w *SelectorWatch) HeldBytes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, h := range w.objs {
		n += len(h.raw)
	}
	return n
}

// failed notes a failed list or watch and tells the sinks (the reflector
// retries with its backoff).
func (w *SelectorWatch) failed(err error) {
	if err == nil {
		return
	}
	w.mu.Lock()
	w.err = err
	sinks := w.sinkList()
	w.mu.Unlock()
	for _, s := range sinks {
		s.SelectorSettled(err)
	}
}

// sinkList copies the sinks (w.mu held).
func (w *SelectorWatch) sinkList() []SelectorSink {
	out := make([]SelectorSink, 0, len(w.sinks))
	for s := range w.sinks {
		out = append(out, s)
	}
	return out
}

// held is the Held of a rawObject (nil for anything else).
func (w *SelectorWatch) held(obj interface{}) *Held {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, ok := obj.(*rawObject)
	if !ok {
		return nil
	}
	return &Held{Namespace: o.Namespace, Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion, gvk: w.key.GVK, raw: o.raw}
}

// tell tells every sink of a change of h (w.mu not held).
func (w *SelectorWatch) tell(sinks []SelectorSink, h *Held, gone bool) {
	for _, s := range sinks {
		s.SelectorChanged(*h, gone)
	}
}

// The reflector's store (toolscache.ReflectorStore).

// Add holds obj and tells the sinks.
func (w *SelectorWatch) Add(obj interface{}) error {
	h := w.held(obj)
	if h == nil {
		return fmt.Errorf("selector watch of %s: cannot hold %T", w.key, obj)
	}
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return nil
	}
	w.objs[h.UID] = h
	sinks := w.sinkList()
	w.mu.Unlock()
	w.tell(sinks, h, false)
	return nil
}

// Update is Add.
func (w *SelectorWatch) Update(obj interface{}) error { return w.Add(obj) }

// Delete drops obj (deleted, or no longer matching) and tells the sinks.
func (w *SelectorWatch) Delete(obj interface{}) error {
	h := w.held(obj)
	if h == nil {
		return nil
	}
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return nil
	}
	delete(w.objs, h.UID)
	sinks := w.sinkList()
	w.mu.Unlock()
	w.tell(sinks, h, true)
	return nil
}

// Replace holds the objects of a list; a relist tells what changed
// across it, and every list tells the sinks that the watch has synced.
func (w *SelectorWatch) Replace(list []interface{}, _ string) error {
	objs := make(map[types.UID]*Held, len(list))
	for _, it := range list {
		if h := w.held(it); h != nil {
			objs[h.UID] = h
		}
	}
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return nil
	}
	old, first := w.objs, !w.synced
	w.objs, w.synced, w.err = objs, true, nil
	sinks := w.sinkList()
	w.mu.Unlock()
	if !first {
		for uid, h := range objs {
			if o := old[uid]; o == nil || o.ResourceVersion != h.ResourceVersion {
				w.tell(sinks, h, false)
			}
		}
		for uid, o := range old {
			if objs[uid] == nil {
				w.tell(sinks, o, true)
			}
		}
	}
	for _, s := range sinks {
		s.SelectorSettled(nil)
	}
	return nil
}

// Resync does nothing: the watch has no resync period.
func (w *SelectorWatch) Resync() error { return nil }
