/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package watch

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/targetcache"
)

// TestWrite: a write's own watch event never queues its writer, whether
// it comes before the server's answer or after it; any other version
// does, once; other referrers of the target are queued at once. (The
// events are driven by hand: the order of an answer and its watch event is
// what a live apiserver does not let a test choose.)
func TestWrite(t *testing.T) {
	deploy := &unstructured.Unstructured{}
	deploy.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	deploy.SetNamespace("ns")
	deploy.SetName("web")
	target := targetcache.TargetOf(deploy)
	at := func(rv string) *unstructured.Unstructured {
		d := deploy.DeepCopy()
		d.SetResourceVersion(rv)
		return d
	}
	mine := &v1alpha1.FieldPatch{}
	mine.Namespace, mine.Name = "ns", "mine"
	other := mine.DeepCopy()
	other.Name = "other"

	type step struct {
		event   string // an event of the target at this resourceVersion
		open    bool   // mine starts writing
		answer  string // mine's write ends with this answer ("-": nothing written)
		queued  []string
		comment string
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"event after the answer", []step{
			{open: true}, {answer: "2"}, {event: "2", queued: []string{"other"}},
		}},
		{"event before the answer", []step{
			{open: true}, {event: "2", queued: []string{"other"}}, {answer: "2"},
			{event: "3", queued: []string{"mine", "other"}, comment: "the write's record is gone with its event"},
		}},
		{"another version while writing", []step{
			{open: true}, {event: "2", queued: []string{"other"}}, {event: "3", queued: []string{"other"}},
			{answer: "3", queued: []string{"mine"}},
		}},
		{"another version after the answer, before its event", []step{
			{open: true}, {answer: "2"}, {event: "3", queued: []string{"mine", "other"}},
		}},
		{"failed write, an event meanwhile", []step{
			{open: true}, {event: "2", queued: []string{"other"}}, {answer: "-", queued: []string{"mine"}},
		}},
		{"failed write, no event", []step{
			{open: true}, {answer: "-"}, {event: "2", queued: []string{"mine", "other"}},
		}},
		{"nobody writing", []step{
			{event: "2", queued: []string{"mine", "other"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, q := testWatches(target, mine, other)
			defer q.ShutDown()
			var done func(*unstructured.Unstructured)
			for i, s := range tc.steps {
				switch {
				case s.open:
					done = w.open(mine, at("1"))
				case s.answer == "-":
					done(nil)
				case s.answer != "":
					done(at(s.answer))
				default:
					w.TargetChanged(target, s.event)
				}
				var got []string
				for q.Len() > 0 {
					req, _ := q.Get()
					got = append(got, req.Name)
					q.Done(req)
					q.Forget(req)
				}
				if !sameSet(got, s.queued) {
					t.Fatalf("step %d (%+v): queued %v, want %v %s", i, s, got, s.queued, s.comment)
				}
			}
			if len(w.writing) != 0 {
				t.Fatalf("writes left open: %v", w.writing)
			}
		})
	}

	// A write that panics is closed as no write: the event it held back
	// is queued, and nothing is left open.
	w, q := testWatches(target, mine)
	defer q.ShutDown()
	func() {
		defer func() { _ = recover() }()
		w.Write(mine, at("1"), func() *unstructured.Unstructured {
			w.TargetChanged(target, "2")
			panic("boom")
		})
	}()
	if q.Len() != 1 || len(w.writing) != 0 {
		t.Fatalf("after a panicking write: %d queued, %d open; want 1, 0", q.Len(), len(w.writing))
	}
}

// testWatches are Watches of FieldPatches, each referring to target, with
// a queue of their own (no SSA involved).
func testWatches(target targetcache.Target, referrers ...*v1alpha1.FieldPatch) (*Watches, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	refs := map[types.NamespacedName]heldTargets{}
	for _, r := range referrers {
		refs[client.ObjectKeyFromObject(r)] = heldTargets{{t: target}}
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	w := &Watches{list: &v1alpha1.FieldPatchList{}, queue: q, refs: refs,
		wrote:   map[targetcache.Target]map[types.NamespacedName]string{},
		writing: map[targetcache.Target]map[types.NamespacedName]*[]string{},
	}
	w.referrers = func(t targetcache.Target) []types.NamespacedName {
		var out []types.NamespacedName
		for k, held := range w.refs {
			if held.index(t) >= 0 {
				out = append(out, k)
			}
		}
		return out
	}
	return w, q
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	in := map[string]int{}
	for _, s := range a {
		in[s]++
	}
	for _, s := range b {
		in[s]--
	}
	for _, n := range in {
		if n != 0 {
			return false
		}
	}
	return true
}
