/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package watch watches the objects a controller's objects refer to (a
// FieldPatch's target, a ManagedWorkload's objects), one object at a time,
// through the manager's shared targetcache.Cache, and maps their events
// back to the controller's objects that hold a reference on them
// (targetcache.Cache.Referrers).
//
// A controller object (the referrer) takes a reference on each object it
// refers to with Ensure or Track; the watch of an object starts with its
// first reference (from any controller) and stops with its last, when the
// referrer lets go of it (Sweep, Track), is deleted (Release), or is found
// gone by the periodic collection. Watches run with the manager's rights,
// whatever account a referrer acts as: an event only queues a reconcile,
// whose reads go through the referrer's account (tenant.Appliers).
package watch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/fieldops/fieldops/controllers/internal/targetcache"
	"github.com/fieldops/fieldops/controllers/internal/tenant"
	"github.com/fieldops/fieldops/internal/names"
)

// Key is the index key of an object: "<group>/<kind>/<namespace>/<name>".
// The version is left out, so every version of a kind maps the same.
func Key(gk schema.GroupKind, namespace, name string) string {
	return names.Key(gk, namespace, name)
}

// CollectInterval is how often Watches release the references of
// referrers that are gone without their deletion having been seen.
var CollectInterval = 5 * time.Minute

// Watches are one controller's references on the objects its objects
// refer to. Events on those objects are queued on the controller for
// every referrer holding a reference on the object (no index of the
// controller's objects: an informer index costs memory for every object,
// the references only for objects that have targets).
// A nil *Watches watches nothing (a reconciler driven directly, in tests).
type Watches struct {
	targets *targetcache.Cache
	// reader lists the controller's objects (collect): the manager's
	// cache, or a reader lending its objects without copying them.
	reader client.Reader
	list   client.ObjectList
	// referrers, when not nil, stands in for targets.Referrers (tests).
	referrers func(targetcache.Target) []types.NamespacedName

	mu    sync.Mutex
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
	// refs are each referrer's targets, with whether each was Ensured
	// since the referrer's last Sweep.
	refs map[types.NamespacedName]heldTargets
	// wrote are, per target, the resourceVersions referrers' own writes
	// left it at (see recordWrite).
	wrote map[targetcache.Target]map[types.NamespacedName]string
	// writing are, per target, the referrers writing it now, with the
	// resourceVersions of the events that came meanwhile (see Write).
	writing map[targetcache.Target]map[types.NamespacedName]*[]string
}

// New returns the Watches of controller c, whose objects are listed as
// list (e.g. &FooList{}) through reader (nil: mgr's cache), on mgr's
// shared target cache. It adds a source to c that receives the events.
func New(mgr manager.Manager, c controller.Controller, list client.ObjectList, reader client.Reader) (*Watches, error) {
	targets, err := targetcache.Shared(mgr)
	if err != nil {
		return nil, err
	}
	if reader == nil {
		reader = mgr.GetCache()
	}
	w := &Watches{targets: targets, reader: reader, list: list, refs: map[types.NamespacedName]heldTargets{}, wrote: map[targetcache.Target]map[types.NamespacedName]string{}, writing: map[targetcache.Target]map[types.NamespacedName]*[]string{}}
	if err := c.Watch(source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		w.mu.Lock()
		w.queue = q
		w.mu.Unlock()
		go w.collectEvery(ctx, CollectInterval)
		return nil
	})); err != nil {
		return nil, fmt.Errorf("watch targets: %w", err)
	}
	return w, nil
}

func (w *Watches) ref(referrer types.NamespacedName) targetcache.Ref {
	return targetcache.Ref{Sink: w, Referrer: referrer}
}

// Ensure makes referrer, acting as account, refer to target (apiVersion,
// kind, namespace and name), starting its watch if no one watches it yet,
// and marks it kept until referrer's next Sweep. A referrer acting as an
// account other than the manager reads target through that account, not
// from the watch.
func (w *Watches) Ensure(referrer client.Object, account tenant.Account, target *unstructured.Unstructured) error {
	if w == nil {
		return nil
	}
	key, t := client.ObjectKeyFromObject(referrer), targetcache.TargetOf(target)
	w.mu.Lock()
	defer w.mu.Unlock()
	held := w.refs[key]
	i := held.index(t)
	if i < 0 {
		if err := w.targets.Acquire(w.ref(key), t, !account.IsManager()); err != nil {
			return err
		}
		held = append(held, heldTarget{t: t})
		i = len(held) - 1
	}
	held[i].kept = true
	w.refs[key] = held
	return nil
}

// heldTarget is one target of a referrer; kept when Ensured since the
// referrer's last Sweep.
type heldTarget struct {
	t    targetcache.Target
	kept bool
}

// heldTargets are a referrer's targets: a slice, since one (a FieldPatch) or
// a few (a ManagedWorkload's objects) is the rule, and for so few a slice
// is smaller than a map and as fast to search.
type heldTargets []heldTarget

func (ts heldTargets) index(t targetcache.Target) int {
	for i := range ts {
		if ts[i].t == t {
			return i
		}
	}
	return -1
}

// Sweep lets go of every target of referrer not Ensured since its last
// Sweep: the objects a referrer no longer refers to after a spec change.
func (w *Watches) Sweep(referrer client.Object) {
	if w == nil {
		return
	}
	key := client.ObjectKeyFromObject(referrer)
	w.mu.Lock()
	defer w.mu.Unlock()
	held := w.refs[key]
	kept := held[:0] // filtered in place
	for _, h := range held {
		if h.kept {
			kept = append(kept, heldTarget{t: h.t})
			continue
		}
		w.targets.Release(w.ref(key), h.t)
		delete(w.wrote[h.t], key)
	}
	if len(kept) == 0 {
		delete(w.refs, key)
		return
	}
	w.refs[key] = kept
}

// Track makes referrer, acting as account, refer to exactly targets:
// Ensure each, then Sweep.
func (w *Watches) Track(referrer client.Object, account tenant.Account, targets ...*unstructured.Unstructured) error {
	if w == nil {
		return nil
	}
	var errs []error
	for _, t := range targets {
		errs = append(errs, w.Ensure(referrer, account, t))
	}
	w.Sweep(referrer)
	return errors.Join(errs...)
}

// Release lets go of every target of the referrer named (deleted).
func (w *Watches) Release(referrer types.NamespacedName) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.release(referrer)
}

func (w *Watches) release(referrer types.NamespacedName) {
	for _, h := range w.refs[referrer] {
		w.targets.Release(w.ref(referrer), h.t)
		delete(w.wrote[h.t], referrer)
	}
	delete(w.refs, referrer)
}

// recordWrite records that referrer's own write left target (the server's
// answer) at its resourceVersion: the watch event of that write is not
// queued for referrer (its reconcile would only see its own write, through
// a cache of referrer that may not hold the status just written yet: a
// second reconcile, a fresh read and a status write for nothing; issue
// 11). Other referrers of the target are queued as usual, and any other
// version of the target queues referrer too.
func (w *Watches) recordWrite(referrer client.Object, target *unstructured.Unstructured) {
	if w == nil || target == nil || target.GetResourceVersion() == "" {
		return
	}
	t := targetcache.TargetOf(target)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.refs[client.ObjectKeyFromObject(referrer)].index(t) < 0 {
		return // not watched: no event to expect
	}
	if w.wrote[t] == nil {
		w.wrote[t] = map[types.NamespacedName]string{}
	}
	w.wrote[t][client.ObjectKeyFromObject(referrer)] = target.GetResourceVersion()
}

// Write runs write, referrer's write of target, which returns the
// server's answer when it wrote (nil when nothing was written: an error,
// or an apply that changed nothing). The watch event of a write can come
// before the answer does (the apiserver sends both at once; on a busy
// manager the watch wins about as often as not): the events of
// target that come while write runs are held back for referrer, and are
// queued for it afterwards only if one of them was not its own write. The
// write is then recorded (recordWrite), unless its event came already.
// Other referrers of target are queued as usual. A write that panics
// counts as no write.
func (w *Watches) Write(referrer client.Object, target *unstructured.Unstructured, write func() *unstructured.Unstructured) {
	done := w.open(referrer, target)
	var written *unstructured.Unstructured
	defer func() { done(written) }()
	written = write()
}

// open opens referrer's write of target (see Write); the returned func
// closes it with the write's answer.
func (w *Watches) open(referrer client.Object, target *unstructured.Unstructured) (done func(written *unstructured.Unstructured)) {
	if w == nil || target == nil {
		return func(*unstructured.Unstructured) {}
	}
	key, t := client.ObjectKeyFromObject(referrer), targetcache.TargetOf(target)
	seen := &[]string{}
	w.mu.Lock()
	if w.writing[t] == nil {
		w.writing[t] = map[types.NamespacedName]*[]string{}
	}
	w.writing[t][key] = seen
	w.mu.Unlock()
	return func(written *unstructured.Unstructured) {
		rv := ""
		if written != nil {
			rv = written.GetResourceVersion()
		}
		w.mu.Lock()
		if w.writing[t][key] == seen {
			delete(w.writing[t], key)
			if len(w.writing[t]) == 0 {
				delete(w.writing, t)
			}
		}
		ours, other := false, false
		for _, s := range *seen {
			if rv != "" && s == rv {
				ours = true
			} else {
				other = true
			}
		}
		q := w.queue
		w.mu.Unlock()
		if rv != "" && !ours {
			w.recordWrite(referrer, written)
		}
		if other && q != nil {
			q.Add(reconcile.Request{NamespacedName: key})
		}
	}
}

// TargetChanged implements targetcache.Sink: it queues every referrer
// holding a reference on t through w, but not a referrer whose own write
// left t at rv (see recordWrite), nor one writing t now (see Write).
func (w *Watches) TargetChanged(t targetcache.Target, rv string) {
	w.mu.Lock()
	q := w.queue
	own := w.wrote[t]
	delete(w.wrote, t) // one event settles every recorded write: ours, or a later version
	var holding map[types.NamespacedName]bool
	if writers := w.writing[t]; len(writers) > 0 {
		holding = make(map[types.NamespacedName]bool, len(writers))
		for k, seen := range writers {
			*seen = append(*seen, rv)
			holding[k] = true
		}
	}
	w.mu.Unlock()
	if q == nil {
		return
	}
	var referrers []types.NamespacedName
	if w.referrers != nil {
		referrers = w.referrers(t)
	} else {
		referrers = w.targets.Referrers(t, w)
	}
	for _, referrer := range referrers {
		if holding[referrer] || (rv != "" && own[referrer] == rv) {
			continue
		}
		q.Add(reconcile.Request{NamespacedName: referrer})
	}
}

func (w *Watches) collectEvery(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.collect(ctx)
		}
	}
}

// collect releases the references of referrers that no longer exist (a
// deletion whose reconcile never came). The list is read under w.mu: a
// referrer Ensures only after reading itself from the same cache, so one
// that Ensures concurrently is in the list.
func (w *Watches) collect(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.refs) == 0 {
		return
	}
	l := w.list.DeepCopyObject().(client.ObjectList)
	if err := w.reader.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	exists := map[types.NamespacedName]bool{}
	_ = meta.EachListItem(l, func(o runtime.Object) error {
		co := o.(client.Object)
		exists[types.NamespacedName{Namespace: co.GetNamespace(), Name: co.GetName()}] = true
		return nil
	})
	for referrer := range w.refs {
		if !exists[referrer] {
			w.release(referrer)
		}
	}
}
