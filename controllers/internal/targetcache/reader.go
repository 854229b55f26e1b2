/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package targetcache

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
