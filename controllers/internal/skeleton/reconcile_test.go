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
