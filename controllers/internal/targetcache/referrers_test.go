/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package targetcache_test

import (
	"cmp"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/fieldops/fieldops/controllers/internal/targetcache"
)

// Referrers are the referrers of a target through one sink (one
// controller), each once, as long as they hold their reference: what
// maps a target's event back to the objects that refer to it.
func TestReferrers(t *testing.T) {
	ns := kit.Namespace(t, "referrers")
	c := newCache(t, restConfig, k8s)
	defer c.Stop()
	patches, workloads := &sink{}, &sink{}
	target := targetcache.Target{GVK: configMapGVK, Namespace: ns, Name: "cm"}
	name := func(n string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: n} }
	a, b := targetcache.Ref{Sink: patches, Referrer: name("a")}, targetcache.Ref{Sink: patches, Referrer: name("b")}
	w := targetcache.Ref{Sink: workloads, Referrer: name("a")}
	for _, ref := range []targetcache.Ref{a, b, w, a} { // a twice: one reference
		if err := c.Acquire(ref, target, false); err != nil {
			t.Fatal(err)
		}
	}
	sorted := func(s []types.NamespacedName) []types.NamespacedName {
		slices.SortFunc(s, func(x, y types.NamespacedName) int { return cmp.Compare(x.String(), y.String()) })
		return s
	}
	for _, tc := range []struct {
		step string
		sink targetcache.Sink
		want []types.NamespacedName
	}{
		{"patches", patches, []types.NamespacedName{name("a"), name("b")}},
		{"workloads", workloads, []types.NamespacedName{name("a")}},
	} {
		if got := sorted(c.Referrers(target, tc.sink)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.step, got, tc.want)
		}
	}
	c.Release(a, target)
	if got := c.Referrers(target, patches); !slices.Equal(got, []types.NamespacedName{name("b")}) {
		t.Errorf("after a's release: %v, want b", got)
	}
	c.Release(b, target)
	c.Release(w, target)
	if got := c.Referrers(target, workloads); len(got) != 0 {
		t.Errorf("after the last release: %v, want none", got)
	}
	if got := c.Referrers(targetcache.Target{GVK: configMapGVK, Namespace: ns, Name: "unwatched"}, patches); len(got) != 0 {
		t.Errorf("an unwatched target: %v, want none", got)
	}
}
