/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package targetcache

import (
	"context"
	"fmt"
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
// decodes the whole JSON on every call, so a caller that
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
