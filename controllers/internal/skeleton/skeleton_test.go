/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package skeleton

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestRunPhases(t *testing.T) {
	boom := errors.New("boom")
	step := func(s Step, err error) Phase[*[]string] {
		return Phase[*[]string]{Name: "p", Run: func(_ context.Context, ran *[]string) (Step, error) {
			*ran = append(*ran, "p")
			return s, err
		}}
	}
	for _, tc := range []struct {
		name       string
		phases     []Phase[*[]string]
		ran        int
		requeue    time.Duration
		reconciled bool
		err        bool
	}{
		{"every phase runs", []Phase[*[]string]{step(Next(), nil), step(Next(), nil)}, 2, 0, true, false},
		{"the soonest requeue wins", []Phase[*[]string]{step(NextAfter(time.Minute), nil), step(NextAfter(time.Second), nil), step(Next(), nil)}, 3, time.Second, true, false},
		{"stop ends, not reconciled", []Phase[*[]string]{step(Stop(ctrl.Result{RequeueAfter: time.Hour}), nil), step(Next(), nil)}, 1, time.Hour, false, false},
		{"finish ends, reconciled", []Phase[*[]string]{step(Finish(ctrl.Result{}), nil), step(Next(), nil)}, 1, 0, true, false},
		{"an error ends, not reconciled", []Phase[*[]string]{step(Next(), boom), step(Next(), nil)}, 1, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			res, ok, err := RunPhases(context.Background(), &ran, tc.phases)
			if len(ran) != tc.ran || res.RequeueAfter != tc.requeue || ok != tc.reconciled || (err != nil) != tc.err {
				t.Errorf("ran %d, requeue %s, reconciled %t, err %v; want %d, %s, %t, error %t", len(ran), res.RequeueAfter, ok, err, tc.ran, tc.requeue, tc.reconciled, tc.err)
			}
		})
	}
}

func TestTerminal(t *testing.T) {
	err := errors.Join(errors.New("context"), Terminal("InvalidSpec", "spec.replicas is %d", -1))
	re, ok := Reason(err)
	if !IsTerminal(err) || !ok || re.Reason != "InvalidSpec" || Message(Terminal("InvalidSpec", "spec.replicas is %d", -1)) != "spec.replicas is -1" {
		t.Fatalf("Terminal: terminal %t, reason %v", IsTerminal(err), re)
	}
	if !errors.Is(err, reconcile.TerminalError(nil)) {
		t.Fatal("not a reconcile.TerminalError")
	}
	if transient := (&ReasonError{Reason: "UnknownKind", Err: errors.New("x")}); IsTerminal(transient) {
		t.Fatal("a ReasonError alone is terminal")
	}
}

// The cache guard: a copy at a version we wrote over is behind; the
// record goes once the cache has caught up; a write that changed nothing
// leaves no record.
func TestWrites(t *testing.T) {
	var w Writes
	obj := func(rv string) *corev1.ConfigMap {
		o := &corev1.ConfigMap{}
		o.Name, o.Namespace, o.ResourceVersion = "a", "ns", rv
		return o
	}
	w.Wrote(obj("1"), "1")
	if w.Behind(obj("1")) {
		t.Fatal("a write that changed nothing made the cache behind")
	}
	w.Wrote(obj("2"), "1") // finalizer: 1 → 2
	w.Wrote(obj("3"), "2") // status: 2 → 3
	for _, rv := range []string{"1", "2"} {
		if !w.Behind(obj(rv)) {
			t.Errorf("a copy at %s (before our writes) is not behind", rv)
		}
	}
	if w.Behind(obj("3")) {
		t.Error("a copy at our last write is behind")
	}
	if w.Behind(obj("1")) {
		t.Error("the record outlived the cache catching up")
	}
	w.WrittenAt(obj("5"), "4", "5")
	w.Forget(client.ObjectKeyFromObject(obj("5")))
	if w.Behind(obj("4")) {
		t.Error("a forgotten object is behind")
	}
	// Read at 10, deleted by a user at 11, our status write at 12: the
	// copy at 11 predates our write although we never wrote over it.
	w.Wrote(obj("12"), "10")
	if !w.Behind(obj("11")) {
		t.Error("a copy another writer made before our write is not behind")
	}
	if w.Behind(obj("13")) {
		t.Error("a copy newer than our write is behind")
	}
	// Removing the last finalizer of a deleted object answers with the
	// version it had: that version is behind all the same.
	w.WrittenAt(obj("20"), "20", "20")
	if !w.Behind(obj("20")) {
		t.Error("the version a finalizer removal answered with is not behind")
	}
	w.Forget(client.ObjectKeyFromObject(obj("20")))
	// Versions that are no integers: only the exact versions we wrote
	// over are behind.
	w.Wrote(obj("b"), "a")
	if !w.Behind(obj("a")) {
		t.Error("the version we wrote over is not behind")
	}
	w.Wrote(obj("d"), "c")
	if w.Behind(obj("x")) {
		t.Error("an unknown version is behind")
	}
}

// A failed write marks its object for a fresh read only when the
// apiserver may have made it: not when it answered with a refusal.
func TestMayHaveWritten(t *testing.T) {
	gr := schema.GroupResource{Group: "fieldops.dev", Resource: "fieldpatches"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"connection lost", errors.New("http2: client connection lost"), true},
		{"wrapped transport error", fmt.Errorf("patch status: %w", errors.New("EOF")), true},
		{"conflict", apierrors.NewConflict(gr, "p", errors.New("the object has been modified")), false},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Group: "fieldops.dev", Kind: "FieldPatch"}, "p", nil), false},
		{"forbidden", apierrors.NewForbidden(gr, "p", errors.New("no")), false},
		{"not found", apierrors.NewNotFound(gr, "p"), false},
		{"timeout", apierrors.NewTimeoutError("the write may have happened", 1), true},
		{"internal error", apierrors.NewInternalError(errors.New("etcd")), true},
		{"wrapped conflict", fmt.Errorf("record previous owners: %w", apierrors.NewConflict(gr, "p", errors.New("x"))), false},
	} {
		if got := mayHaveWritten(tc.err); got != tc.want {
			t.Errorf("%s: mayHaveWritten = %v, want %v", tc.name, got, tc.want)
		}
	}
}
