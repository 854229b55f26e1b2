/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package podset_test

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/podset"
)

// A selector that does not match the template: InvalidSpec, no pod.
func TestSelectorMismatch(t *testing.T) {
	ns := kit.Namespace(t, "bad-selector")
	ps := &v1alpha1.PodSet{}
	ps.Name, ps.Namespace = "mismatch", ns
	ps.Spec.Replicas = ptr.To[int32](2)
	ps.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	ps.Spec.Template.Metadata.Labels = map[string]string{"app": "mismatch"}
	ps.Spec.Template.Spec.Containers = []corev1.Container{{Name: "main", Image: "nginx:1.27"}}
	if err := k8s.Create(t.Context(), ps); err != nil {
		t.Fatal(err)
	}
	waitReason(t, ps, podset.ReasonInvalidSpec)
	if ps.Status.ObservedGeneration != ps.Generation {
		t.Errorf("observedGeneration %d, want %d: an invalid spec is judged (kstatus reads Stalled at the current generation as Failed)", ps.Status.ObservedGeneration, ps.Generation)
	}
	kit.HasEvent(t, ns, "mismatch", podset.ReasonInvalidSpec, "does not match the template labels")
	if n := len(pods(t, ps)); n != 0 {
		t.Fatalf("%d pods created for an invalid spec", n)
	}
}

// Negative replicas and a template the apiserver rejects, on a running
// PodSet: reason and event, and no pod is deleted.
func TestBadChangesDeleteNothing(t *testing.T) {
	ns := kit.Namespace(t, "bad-change")
	ps := newPodSet(t, ns, "db", 3, "postgres:17", nil)
	before := uids(waitPods(t, ps, ordinals("db", 3)...))

	// Negative replicas never get in: the scale subresource makes the
	// apiserver refuse them at admission (the controller would report
	// InvalidSpec, see TestValidate).
	// (Retried on a conflict: the controller writes status as the pods
	// come up.)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		kit.Get(t, ps)
		ps.Spec.Replicas = ptr.To[int32](-1)
		return k8s.Update(t.Context(), ps)
	})
	if err == nil || !strings.Contains(err.Error(), "should be a non-negative integer") {
		t.Fatalf("negative replicas: %v", err)
	}

	update(t, ps, func(ps *v1alpha1.PodSet) {
		ps.Spec.Replicas = ptr.To[int32](3)
		ps.Spec.Template.Spec.Containers[0].Image = "" // the apiserver requires an image
	})
	waitReason(t, ps, podset.ReasonPodRejected)
	kit.HasEvent(t, ns, "db", podset.ReasonPodRejected, "image")
	kit.Reconciled(t, "podset", ps) // a reconcile of the bad template has finished
	if after := uids(pods(t, ps)); !reflect.DeepEqual(after, before) {
		t.Fatalf("pods changed after bad input:\nbefore %v\nafter  %v", before, after)
	}

	// Fixing the template recovers.
	update(t, ps, func(ps *v1alpha1.PodSet) { ps.Spec.Template.Spec.Containers[0].Image = "postgres:17" })
	waitReason(t, ps, podset.ReasonReady)
}
