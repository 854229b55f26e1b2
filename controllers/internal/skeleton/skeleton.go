/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package skeleton

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fieldops/fieldops/controllers/internal/conditions"
)

// Reconciler runs one reconcile of a kind T whose phases share a scope S
// (one per reconcile, made by Scope). It is built once per controller
// and kept: Writes remembers our own writes across reconciles.
//
// Status is written once per reconcile, in a defer, as a merge patch from
// the object as read (or as the finalizer patch left it), and only when
// Status differs. One exception, owned by the FieldPatch controller: when
// an apply displaces another field manager, the record of previous owners
// is written before the apply (a crash between the two must not lose who
// to hand the fields back to); that early write goes through Writes too,
// so the cache guard knows about it.
type Reconciler[T client.Object, S any] struct {
	Client client.Client
	// APIReader, when not nil, reads the object without the cache after a
	// write of it failed (Writes.Unsure): one request, then the cache
	// guard waits for that version.
	APIReader client.Reader
	// New returns an empty T to read into.
	New func() T
	// Finalizer is added before the first phase and holds the object
	// until Delete has run; "" means none (the garbage collector deletes
	// what the object owns), and a deleted object is left alone.
	Finalizer string
	// Status returns obj's status, compared before and after.
	Status func(obj T) any
	// Conditions, when not nil, returns obj's status conditions: a
	// condition whose status did not change across the reconcile keeps
	// its LastTransitionTime (conditions.KeepTransitions), however the
	// phases set it.
	Conditions func(obj T) *[]metav1.Condition
	// ObservedGeneration returns where obj's status.observedGeneration
	// lives; it is set to obj's generation only when the generation is
	// judged: every phase ran without error, one ended the reconcile with
	// Finish, or one returned a terminal error (the spec itself is wrong:
	// Ready=False and Stalled=True at the current generation is what
	// kstatus reads as Failed, so `kubectl wait` and Flux's health checks
	// fail at once instead of waiting out their timeout). A transient
	// error or a Stop leaves it where it was.
	ObservedGeneration func(obj T) *int64
	// Scope makes the state the phases of one reconcile share.
	Scope func(obj T) S
	// Phases run in order until one returns an error, Stop or Finish.
	Phases []Phase[S]
	// Delete runs while a deleted object still holds Finalizer; it
	// removes the finalizer when done (nil: nothing to do).
	Delete func(ctx context.Context, obj T) (ctrl.Result, error)
	// Forget, when not nil, is called when the object is gone.
	Forget func(key client.ObjectKey)
	// Written, when not nil, is called before the status write with the
	// object as it is then; gone is true when it is deleted and let go.
	Written func(obj T, gone bool)
	// Writes are this controller's own writes of its objects.
	Writes Writes
}

// A reconcile that finds the cache behind our own write of its object
// reads the cache again every StalePoll, for up to StaleWait; if the cache
// is still behind then, it is requeued after StaleRecheck (the watch event
// of a status write may queue no reconcile: status changes do not pass
// the predicates). Waiting in place, rather than requeueing at once,
// spares a reconcile that would do nothing.
const (
	StalePoll    = 10 * time.Millisecond
	StaleWait    = 250 * time.Millisecond
	StaleRecheck = 100 * time.Millisecond
)

// Reconcile is get → cache guard → finalizer → deferred status write →
// Delete or the phases.
func (r *Reconciler[T, S]) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	obj, res, ok, err := r.get(ctx, req)
	if !ok {
		return res, err
	}
	if r.letGo(obj) {
		if r.Written != nil {
			r.Written(obj, true)
		}
		return ctrl.Result{}, nil
	}
	before := obj.DeepCopyObject().(T)
	defer func() {
		if err := r.patchStatus(ctx, before, obj); err != nil {
			// A status write that failed is retried with backoff, even
			// after a terminal error: the Stalled condition must reach the
			// apiserver.
			if IsTerminal(retErr) {
				retErr = errors.New(Message(retErr))
			}
			retErr = errors.Join(retErr, err)
		}
	}()
	if !obj.GetDeletionTimestamp().IsZero() {
		return r.Delete(ctx, obj)
	}
	if r.Finalizer != "" && controllerutil.AddFinalizer(obj, r.Finalizer) {
		rv := obj.GetResourceVersion()
		if err := r.Client.Patch(ctx, obj, client.MergeFrom(before)); err != nil {
			r.Writes.Unsure(obj, err)
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
		r.Writes.Wrote(obj, rv)
		before = obj.DeepCopyObject().(T)
	}
	res, ok, err = RunPhases(ctx, r.Scope(obj), r.Phases)
	if (ok && err == nil) || IsTerminal(err) {
		*r.ObservedGeneration(obj) = obj.GetGeneration()
	}
	return res, err
}

// get reads the object from the cache, once the cache has seen our own
// last write of it: a copy that predates that write is read again every
// StalePoll for up to StaleWait (no request: the watch event is on its
// way), then the reconcile is requeued after StaleRecheck. ok is false
// when the reconcile ends here (with res, err).
func (r *Reconciler[T, S]) get(ctx context.Context, req ctrl.Request) (obj T, res ctrl.Result, ok bool, err error) {
	read := func() (bool, error) {
		obj = r.New()
		if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
			return false, err
		}
		return !r.Writes.Behind(obj), nil
	}
	fresh, err := read()
	if err == nil && r.APIReader != nil && r.Writes.takeUnsure(req.NamespacedName) {
		// A write of ours failed: the apiserver may hold it anyway.
		live := r.New()
		if err := r.APIReader.Get(ctx, req.NamespacedName, live); err != nil && !apierrors.IsNotFound(err) {
			r.Writes.markUnsure(req.NamespacedName)
			return obj, ctrl.Result{}, false, fmt.Errorf("read after a failed write: %w", err)
		} else if err == nil {
			if c, cerr := resourceversion.CompareResourceVersion(obj.GetResourceVersion(), live.GetResourceVersion()); cerr == nil && c < 0 {
				r.Writes.WrittenAt(obj, obj.GetResourceVersion(), live.GetResourceVersion())
				fresh = false
			}
		}
	}
	if err == nil && !fresh {
		err = wait.PollUntilContextTimeout(ctx, StalePoll, StaleWait, false, func(context.Context) (bool, error) { return read() })
		if wait.Interrupted(err) {
			// Still behind: deciding on the older copy would redo the
			// write.
			return obj, ctrl.Result{RequeueAfter: StaleRecheck}, false, nil
		}
	}
	if apierrors.IsNotFound(err) {
		r.Writes.Forget(req.NamespacedName)
		if r.Forget != nil {
			r.Forget(req.NamespacedName)
		}
	}
	return obj, ctrl.Result{}, err == nil, client.IgnoreNotFound(err)
}

// letGo reports whether obj is deleted and nothing is left to do: no
// finalizer of ours holds it, or there is no Delete.
func (r *Reconciler[T, S]) letGo(obj T) bool {
	if obj.GetDeletionTimestamp().IsZero() {
		return false
	}
	return r.Finalizer == "" || r.Delete == nil || !controllerutil.ContainsFinalizer(obj, r.Finalizer)
}

// patchStatus writes obj's status when it changed since before, unless
// obj is deleted and let go; an object already gone is no error.
func (r *Reconciler[T, S]) patchStatus(ctx context.Context, before, obj T) error {
	gone := r.letGo(obj)
	if r.Conditions != nil {
		conditions.KeepTransitions(*r.Conditions(before), *r.Conditions(obj))
	}
	if r.Written != nil {
		r.Written(obj, gone)
	}
	if gone || equality.Semantic.DeepEqual(r.Status(before), r.Status(obj)) {
		return nil
	}
	rv := obj.GetResourceVersion()
	if err := r.Client.Status().Patch(ctx, obj, client.MergeFrom(before)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		r.Writes.Unsure(obj, err)
		return fmt.Errorf("patch status: %w", err)
	}
	r.Writes.Wrote(obj, rv)
	return nil
}

// Phase is one named step of the normal reconcile.
type Phase[S any] struct {
	Name string
	Run  func(ctx context.Context, s S) (Step, error)
}

// Step is what a phase decided: the result to merge (the soonest requeue
// wins), and whether the reconcile ends here.
type Step struct {
	Result ctrl.Result
	end    end
}

type end int

const (
	next   end = iota
	stop       // ends; the generation is not reconciled
	finish     // ends; the generation is reconciled
)

// Next goes on with the next phase.
func Next() Step { return Step{} }

// NextAfter goes on with the next phase, and requeues after d at the
// latest (0: no requeue).
func NextAfter(d time.Duration) Step { return Step{Result: ctrl.Result{RequeueAfter: d}} }

// Stop ends the reconcile with res before its generation is reconciled
// (a failure, a wait): observedGeneration stays.
func Stop(res ctrl.Result) Step { return Step{Result: res, end: stop} }

// Finish ends the reconcile with res, its generation reconciled (nothing
// more to do, e.g. suspended): observedGeneration moves.
func Finish(res ctrl.Result) Step { return Step{Result: res, end: finish} }

// RunPhases runs phases in order on s. It returns the merged result and
// whether the generation is reconciled (every phase ran, or one
// finished); an error ends the run and is wrapped with the phase's name
// (a terminal error stays terminal).
func RunPhases[S any](ctx context.Context, s S, phases []Phase[S]) (ctrl.Result, bool, error) {
	var res ctrl.Result
	for _, p := range phases {
		step, err := p.Run(ctx, s)
		res = lowest(res, step.Result)
		if err != nil {
			return res, false, fmt.Errorf("%s: %w", p.Name, err)
		}
		if step.end != next {
			return res, step.end == finish, nil
		}
	}
	return res, true, nil
}

// lowest merges two results: the soonest non-zero requeue.
func lowest(a, b ctrl.Result) ctrl.Result {
	if a.RequeueAfter == 0 || (b.RequeueAfter != 0 && b.RequeueAfter < a.RequeueAfter) {
		a.RequeueAfter = b.RequeueAfter
	}
	return a
}

// ReasonError is an error and the condition reason that reports it.
type ReasonError struct {
	Reason string
	Err    error
}

func (e *ReasonError) Error() string { return e.Err.Error() }
func (e *ReasonError) Unwrap() error { return e.Err }

// Terminal is a spec error no retry fixes until the spec changes:
// reconcile.TerminalError (logged, never requeued) around a ReasonError.
func Terminal(reason string, format string, args ...any) error {
	return reconcile.TerminalError(&ReasonError{Reason: reason, Err: fmt.Errorf(format, args...)})
}

// IsTerminal reports whether err is (or wraps) reconcile.TerminalError.
func IsTerminal(err error) bool {
	return errors.Is(err, reconcile.TerminalError(nil))
}

// Reason returns the ReasonError in err, if any.
func Reason(err error) (*ReasonError, bool) {
	var re *ReasonError
	ok := errors.As(err, &re)
	return re, ok
}

// Message is err's message without the reconcile.TerminalError prefix:
// the ReasonError's own message, or err's.
func Message(err error) string {
	if re, ok := Reason(err); ok {
		return re.Err.Error()
	}
	return err.Error()
}
