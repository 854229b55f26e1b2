/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package podset_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/podset"
	"github.com/fieldops/fieldops/feature"
	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/test/testkit"
)

var (
	k8s      client.Client
	kit      testkit.Kit
	requests = &testkit.WriteCounter{} // the manager's requests
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// A small cluster: kube-scheduler places the pods on kwok's simulated
	// nodes, and kwok reports them Running and Ready as a kubelet would;
	// kube-controller-manager's garbage collector removes what a deleted
	// PodSet owned.
	return testkit.RunSuite(m, testkit.SuiteOptions{ControlPlane: localcp.Options{Cluster: &localcp.ClusterOptions{Nodes: 2}}, Writes: requests}, func(s *testkit.Suite) { k8s, kit = s.Client, s.Kit })
}

// newPodSet creates a PodSet of replicas pods labelled app=<name> plus
// labels, running image.
func newPodSet(t testing.TB, ns, name string, replicas int32, image string, labels map[string]string) *v1alpha1.PodSet {
	t.Helper()
	ps := &v1alpha1.PodSet{}
	ps.Name, ps.Namespace = name, ns
	ps.Spec.Replicas = &replicas
	ps.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	ps.Spec.Template.Metadata.Labels = map[string]string{"app": name}
	for k, v := range labels {
		ps.Spec.Template.Metadata.Labels[k] = v
	}
	ps.Spec.Template.Spec.Containers = []corev1.Container{{Name: "main", Image: image}}
	if err := k8s.Create(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
	return ps
}

// update changes ps's spec with fn, retrying on conflicts.
func update(t testing.TB, ps *v1alpha1.PodSet, fn func(*v1alpha1.PodSet)) {
	t.Helper()
	testkit.Eventually(t, "update of "+ps.Name, func() (bool, string) {
		kit.Get(t, ps)
		fn(ps)
		err := k8s.Update(context.Background(), ps)
		return err == nil, fmt.Sprint(err)
	})
}

// pods returns the pods ps controls, by name.
func pods(t testing.TB, ps *v1alpha1.PodSet) map[string]*corev1.Pod {
	t.Helper()
	var l corev1.PodList
	if err := k8s.List(context.Background(), &l, client.InNamespace(ps.Namespace)); err != nil {
		t.Fatal(err)
	}
	out := map[string]*corev1.Pod{}
	for i := range l.Items {
		if ref := metav1.GetControllerOf(&l.Items[i]); ref != nil && ref.Name == ps.Name && ref.Kind == "PodSet" {
			out[l.Items[i].Name] = &l.Items[i]
		}
	}
	return out
}

func names(m map[string]*corev1.Pod) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue && p.DeletionTimestamp.IsZero()
		}
	}
	return false
}

// waitReason waits until ps is reconciled at its generation with the Ready
// reason.
func waitReason(t testing.TB, ps *v1alpha1.PodSet, reason string) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("%s reason %s", ps.Name, reason), func() (bool, string) {
		kit.Get(t, ps)
		c := meta.FindStatusCondition(ps.Status.Conditions, "Ready")
		if c == nil {
			return false, "no Ready condition"
		}
		// The condition is stamped with the generation every reconcile
		// judged; status.observedGeneration moves only on success or a spec
		// error (an object that failed, a wait leave it behind).
		return c.Reason == reason && c.ObservedGeneration == ps.Generation && (ps.Status.ObservedGeneration == ps.Generation || !success(c)),
			fmt.Sprintf("gen %d/%d/%d Ready=%s %s: %s", c.ObservedGeneration, ps.Status.ObservedGeneration, ps.Generation, c.Status, c.Reason, c.Message)
	})
}

// setGate sets a feature gate for the rest of the test.
func setGate(t testing.TB, gate string, on bool) {
	t.Helper()
	if err := feature.Gates.SetFromMap(map[string]bool{gate: on}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = feature.Gates.SetFromMap(map[string]bool{gate: true}) })
}

func uids(m map[string]*corev1.Pod) map[string]string {
	out := map[string]string{}
	for n, p := range m {
		out[n] = string(p.UID)
	}
	return out
}

// success reports whether the reconcile that set c succeeded: only then
// does status.observedGeneration move.
func success(c *metav1.Condition) bool {
	switch c.Reason {
	case podset.ReasonInvalidSpec, podset.ReasonPodRejected, podset.ReasonPodFailed:
		return false
	}
	return true
}
