/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package skeleton

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/conditions"
	"github.com/fieldops/fieldops/internal/scheme"
)

// Reconcile's bookkeeping, over a client whose status writes may fail
// (no Server-Side Apply is involved: a fake client serves the object).
// observedGeneration moves on success and on a terminal (spec) error, not
// on a transient one; a status write that fails is retried even after a
// terminal error, so the Stalled condition reaches the apiserver.
func TestReconcileStatus(t *testing.T) {
	errSpec := Terminal("InvalidSpec", "spec.selector does not match")
	for _, tc := range []struct {
		name          string
		phase         error
		statusFails   bool
		wantObserved  bool
		wantTerminal  bool
		wantErr       bool
		wantStatusSet bool
	}{
		{name: "success", wantObserved: true, wantStatusSet: true},
		{name: "transient error", phase: errors.New("connection refused"), wantErr: true, wantStatusSet: true},
		{name: "terminal error", phase: errSpec, wantObserved: true, wantTerminal: true, wantErr: true, wantStatusSet: true},
		{name: "terminal error, status write fails", phase: errSpec, statusFails: true, wantErr: true},
		{name: "success, status write fails", statusFails: true, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := &v1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", Generation: 2}}
			c := fake.NewClientBuilder().WithScheme(scheme.Scheme()).WithObjects(ps).WithStatusSubresource(ps).
				WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
					if tc.statusFails {
						return errors.New("etcdserver: request timed out")
					}
					return c.SubResource(sub).Patch(ctx, obj, p, opts...)
				}}).Build()
			r := &Reconciler[*v1alpha1.PodSet, *v1alpha1.PodSet]{
				Client:             c,
				New:                func() *v1alpha1.PodSet { return &v1alpha1.PodSet{} },
				Status:             func(ps *v1alpha1.PodSet) any { return ps.Status },
				Conditions:         func(ps *v1alpha1.PodSet) *[]metav1.Condition { return &ps.Status.Conditions },
				ObservedGeneration: func(ps *v1alpha1.PodSet) *int64 { return &ps.Status.ObservedGeneration },
				Scope:              func(ps *v1alpha1.PodSet) *v1alpha1.PodSet { return ps },
				Phases: []Phase[*v1alpha1.PodSet]{{Name: "only", Run: func(_ context.Context, ps *v1alpha1.PodSet) (Step, error) {
					conditions.Set(&ps.Status.Conditions, ps.Generation, conditions.Ready, metav1.ConditionFalse, "Progressing", "working")
					if tc.phase != nil {
						return Stop(ctrl.Result{}), tc.phase
					}
					return Next(), nil
				}}},
			}
			_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "db"}})
			if (err != nil) != tc.wantErr || IsTerminal(err) != tc.wantTerminal {
				t.Fatalf("error %v (terminal %v), want error %v, terminal %v", err, IsTerminal(err), tc.wantErr, tc.wantTerminal)
			}
			got := &v1alpha1.PodSet{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(ps), got); err != nil {
				t.Fatal(err)
			}
			if set := len(got.Status.Conditions) > 0; set != tc.wantStatusSet {
				t.Errorf("status written %v, want %v", set, tc.wantStatusSet)
			}
			if observed := got.Status.ObservedGeneration == 2; tc.wantStatusSet && observed != tc.wantObserved {
				t.Errorf("observedGeneration %d, want moved %v", got.Status.ObservedGeneration, tc.wantObserved)
			}
		})
	}
}

// A status write whose answer is lost (the apiserver made it, the client
// saw an error) leaves the cache with nothing to say it is behind: the
// next reconcile reads the object once without the cache and waits for the
// cache to reach that version instead of deciding on the older copy
// (test/invariants under faults, seed 6100231). Without a failed write, no
// such read is made.
func TestReconcileAfterLostStatusWrite(t *testing.T) {
	ps := &v1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", Generation: 1}}
	lose := true
	var cached *v1alpha1.PodSet // what the "cache" serves; nil: the apiserver's copy
	api := fake.NewClientBuilder().WithScheme(scheme.Scheme()).WithObjects(ps).WithStatusSubresource(ps).Build()
	c := interceptor.NewClient(api, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if cached != nil {
				cached.DeepCopyInto(obj.(*v1alpha1.PodSet))
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			old := &v1alpha1.PodSet{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), old); err != nil {
				return err
			}
			if err := c.SubResource(sub).Patch(ctx, obj, p, opts...); err != nil {
				return err
			}
			if lose {
				cached = old // the watch event is late
				return errors.New("http2: client connection lost")
			}
			return nil
		},
	})
	freshReads := 0
	apiReader := interceptor.NewClient(api, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			freshReads++
			return c.Get(ctx, key, obj, opts...)
		},
	})
	runs := 0
	r := &Reconciler[*v1alpha1.PodSet, *v1alpha1.PodSet]{
		Client:             c,
		APIReader:          apiReader,
		New:                func() *v1alpha1.PodSet { return &v1alpha1.PodSet{} },
		Status:             func(ps *v1alpha1.PodSet) any { return ps.Status },
		ObservedGeneration: func(ps *v1alpha1.PodSet) *int64 { return &ps.Status.ObservedGeneration },
		Scope:              func(ps *v1alpha1.PodSet) *v1alpha1.PodSet { return ps },
		Phases: []Phase[*v1alpha1.PodSet]{{Name: "only", Run: func(_ context.Context, ps *v1alpha1.PodSet) (Step, error) {
			runs++
			ps.Status.Replicas = int32(runs)
			return Next(), nil
		}}},
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "db"}}
	if _, err := r.Reconcile(context.Background(), req); err == nil {
		t.Fatal("first reconcile: the status write's error is not returned")
	}
	lose = false
	res, err := r.Reconcile(context.Background(), req)
	if err != nil || res.RequeueAfter != StaleRecheck || runs != 1 || freshReads != 1 {
		t.Fatalf("after the lost write, with the cache behind: %v, %v, %d runs, %d fresh reads; want a requeue after %v, no phase run, 1 fresh read", res, err, runs, freshReads, StaleRecheck)
	}
	cached = nil // the cache catches up
	if _, err := r.Reconcile(context.Background(), req); err != nil || runs != 2 || freshReads != 1 {
		t.Fatalf("once the cache caught up: %v, %d runs, %d fresh reads; want the phase run, no other fresh read", err, runs, freshReads)
	}
}
