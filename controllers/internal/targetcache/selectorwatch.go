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

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

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
