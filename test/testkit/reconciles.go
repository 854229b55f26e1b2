/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package testkit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fieldops/fieldops/internal/logcap"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Reconciles counts, per controller and object, the reconciles the
// suite's manager started and finished, and how each ended. It is the
// positive signal a negative check waits for: "nothing was written" means
// something only once a reconcile that could have written has finished.
//
// It reads controller-runtime's own per-request log lines ("Reconciling",
// "Reconcile successful", "Reconcile done, requeueing…", "Reconciler
// error"), which carry the controller's name and the object's namespace
// and name; controller_runtime_reconcile_total counts the same reconciles
// but only per controller, so a requeue of another object of the suite
// would pass for the reconcile of the one under test. If controller-runtime
// renamed those lines, every wait here would time out: a loud failure,
// never a silent pass.
type Reconciles struct {
	mu   sync.Mutex
	objs map[reconcileKey]*ReconcileStats
	// watched counts, for each string WatchLog was given, the log lines
	// that contained it since.
	watched map[string]int
}

// WatchLog counts, from now on, the manager's log lines that contain s
// anywhere (message, values or error, at every level the manager can be
// set to log, up to logcap.MaxV, enabled or not): what a test checks a
// secret value never reaches. LogLines returns the
// count.
func (r *Reconciles) WatchLog(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watched == nil {
		r.watched = map[string]int{}
	}
	r.watched[s] = 0
}

// LogLines is how many log lines contained s since WatchLog(s).
func (r *Reconciles) LogLines(s string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.watched[s]
}

// scan counts the line (msg, its values kv and err) against the watched
// strings.
func (r *Reconciles) scan(values []any, msg string, err error, kv []any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.watched) == 0 {
		return
	}
	line := fmt.Sprint(msg, " ", values, " ", kv, " ", err)
	for s := range r.watched {
		if strings.Contains(line, s) {
			r.watched[s]++
		}
	}
}

type reconcileKey struct {
	controller string
	types.NamespacedName
}

// ReconcileStats are the reconciles of one object by one controller.
type ReconcileStats struct {
	// Started and Finished count the reconciles begun and ended. The
	// reconciles of one object never overlap (the controller's queue
	// hands a key to one worker at a time).
	Started, Finished int
	// Retries counts the reconciles that asked to run again: a requeue,
	// a requeue after a delay, or an error that is not terminal.
	Retries int
	// Last is how the last finished reconcile ended, as controller-runtime
	// logs it ("Reconcile successful", "Reconcile done, requeueing after
	// 5s", "Reconciler error: …").
	Last string
	// Nudge is the NudgeAnnotation the last finished reconcile read.
	Nudge string

	reading string // the nudge the running reconcile read
}

// Stats returns the reconciles of obj by controller so far.
func (r *Reconciles) Stats(controller string, obj client.Object) ReconcileStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.objs[keyOf(controller, obj)]; s != nil {
		return *s
	}
	return ReconcileStats{}
}

func keyOf(controller string, obj client.Object) reconcileKey {
	return reconcileKey{controller, types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
}

// Idle waits until no reconcile of obj by controller is running (one
// may still be queued), and returns the object's stats then.
func (r *Reconciles) Idle(t testing.TB, controller string, obj client.Object) ReconcileStats {
	t.Helper()
	var s ReconcileStats
	Eventually(t, fmt.Sprintf("no reconcile of %s by %s running", client.ObjectKeyFromObject(obj), controller), func() (bool, string) {
		s = r.Stats(controller, obj)
		return s.Started == s.Finished, fmt.Sprintf("%+v", s)
	})
	return s
}

// observe takes one log line of a reconcile of key.
func (r *Reconciles) observe(key reconcileKey, msg string, err error) {
	started := msg == "Reconciling"
	retry := false
	switch {
	case started:
	case msg == "Reconcile successful":
	case strings.HasPrefix(msg, "Reconcile done, requeueing"):
		retry = true
	case msg == "Reconciler error":
		retry = !errors.Is(err, reconcile.TerminalError(nil))
		msg += ": " + fmt.Sprint(err)
	default:
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.objs == nil {
		r.objs = map[reconcileKey]*ReconcileStats{}
	}
	s := r.objs[key]
	if s == nil {
		s = &ReconcileStats{}
		r.objs[key] = s
	}
	if started {
		s.Started++
		s.reading = ""
		return
	}
	s.Finished++
	s.Last = msg
	if s.reading != "" {
		s.Nudge = s.reading
	}
	if retry {
		s.Retries++
	}
}

// Logger returns a logger that sends what next enables to next and every
// reconcile's log lines, whatever their level, to r. Give it to the
// manager (ctrl.Options.Logger): controllers log through the manager's
// logger.
func (r *Reconciles) Logger(next logr.Logger) logr.Logger {
	return logr.New(reconcileSink{next: next.GetSink(), r: r})
}

// reconcileSink is a logr.LogSink that tees into Reconciles.
type reconcileSink struct {
	next logr.LogSink
	r    *Reconciles
	key  reconcileKey
	// values are those of WithValues, for WatchLog.
	values []any
}

func (s reconcileSink) Init(info logr.RuntimeInfo) { s.next.Init(info) }

// Enabled is true at every level: the lines counted are at V(5).
func (s reconcileSink) Enabled(int) bool { return true }

func (s reconcileSink) Info(level int, msg string, kv ...any) {
	if level <= logcap.MaxV {
		s.r.scan(s.values, msg, nil, kv)
	}
	if s.key.controller != "" && s.key.Name != "" {
		s.r.observe(s.key, msg, nil)
	}
	if s.next.Enabled(level) {
		s.next.Info(level, msg, kv...)
	}
}

func (s reconcileSink) Error(err error, msg string, kv ...any) {
	s.r.scan(s.values, msg, err, kv)
	if s.key.controller != "" && s.key.Name != "" {
		s.r.observe(s.key, msg, err)
	}
	s.next.Error(err, msg, kv...)
}

func (s reconcileSink) WithValues(kv ...any) logr.LogSink {
	key := s.key
	for i := 0; i+1 < len(kv); i += 2 {
		v, ok := kv[i+1].(string)
		if !ok {
			continue
		}
		switch kv[i] {
		case "controller":
			key.controller = v
		case "namespace":
			key.Namespace = v
		case "name":
			key.Name = v
		}
	}
	return reconcileSink{next: s.next.WithValues(kv...), r: s.r, key: key, values: append(append([]any{}, s.values...), kv...)}
}

func (s reconcileSink) WithName(name string) logr.LogSink {
	return reconcileSink{next: s.next.WithName(name), r: s.r, key: s.key, values: s.values}
}

// WithCallDepth keeps next's caller annotations right.
func (s reconcileSink) WithCallDepth(depth int) logr.LogSink {
	if d, ok := s.next.(logr.CallDepthLogSink); ok {
		return reconcileSink{next: d.WithCallDepth(depth), r: s.r, key: s.key, values: s.values}
	}
	return s
}

// nudges makes every nudge annotation value new.
var nudges atomic.Int64

// NudgeAnnotation is the annotation Reconciled changes to queue a
// reconcile (the controllers' predicates let annotation changes through).
const NudgeAnnotation = "testkit.fieldops.dev/nudge"

// saw records that the reconcile running in ctx read obj from the
// manager's cache: the nudge it saw counts when that reconcile finishes.
func (r *Reconciles) saw(ctx context.Context, obj client.Object) {
	v, ok := obj.GetAnnotations()[NudgeAnnotation]
	if !ok {
		return
	}
	s, ok := logr.FromContextOrDiscard(ctx).GetSink().(reconcileSink)
	if !ok || s.r != r || s.key.Name != obj.GetName() || s.key.Namespace != obj.GetNamespace() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.objs[s.key]; st != nil {
		st.reading = v
	}
}

// nudgeCache is the manager's cache, telling Reconciles what each
// reconcile read.
type nudgeCache struct {
	cache.Cache
	r *Reconciles
}

func (c nudgeCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Cache.Get(ctx, key, obj, opts...)
	if err == nil {
		c.r.saw(ctx, obj)
	}
	return err
}

// NewCache wraps the manager's cache (ctrl.Options.NewCache) so that
// Reconciled knows which nudge each reconcile read.
func (r *Reconciles) NewCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return nudgeCache{Cache: c, r: r}, nil
}

// Reconciled changes obj's NudgeAnnotation and waits until a reconcile of
// obj by controller that read the object with that change from the
// manager's cache has finished: a reconcile that saw the object as it is
// now, every write it decided on done. It returns the object's reconcile
// stats then; obj is left as the test's client read it after the change.
func (k Kit) Reconciled(t testing.TB, controller string, obj client.Object) ReconcileStats {
	t.Helper()
	if k.Reconciles == nil {
		t.Fatal("testkit: Reconciled needs the Kit of RunSuite")
	}
	v := strconv.FormatInt(nudges.Add(1), 10)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, NudgeAnnotation, v)
	if err := k.Client.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("nudge %s: %v", obj.GetName(), err)
	}
	var s ReconcileStats
	Eventually(t, fmt.Sprintf("a reconcile of %s by %s after nudge %s", client.ObjectKeyFromObject(obj), controller, v), func() (bool, string) {
		s = k.Reconciles.Stats(controller, obj)
		return s.Nudge == v, fmt.Sprintf("%+v", s)
	})
	return s
}

// ReconciledAfter runs change (a write of someone else that queues a
// reconcile of obj: a change of an object obj manages, say) and waits
// until a reconcile of obj by controller that started after it has
// finished. It returns the object's reconcile stats then.
func (k Kit) ReconciledAfter(t testing.TB, controller string, obj client.Object, change func()) ReconcileStats {
	t.Helper()
	if k.Reconciles == nil {
		t.Fatal("testkit: ReconciledAfter needs the Kit of RunSuite")
	}
	before := k.Reconciles.Stats(controller, obj)
	change()
	var s ReconcileStats
	Eventually(t, fmt.Sprintf("a reconcile of %s by %s after the change", client.ObjectKeyFromObject(obj), controller), func() (bool, string) {
		s = k.Reconciles.Stats(controller, obj)
		return s.Started > before.Started && s.Finished == s.Started, fmt.Sprintf("%+v", s)
	})
	return s
}
