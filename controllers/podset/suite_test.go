package podset_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/feature"
	"github.com/fieldops/fieldops/test/testkit"
)

var (
	k8s client.Client
	kit testkit.Kit
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	return testkit.RunSuite(m, testkit.SuiteOptions{}, func(s *testkit.Suite) { k8s, kit = s.Client, s.Kit })
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

// markReady sets a pod Running and Ready through the status subresource,
// as a kubelet would (the local control plane runs no kubelet).
func markReady(t testing.TB, p *corev1.Pod) {
	t.Helper()
	p = p.DeepCopy()
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if err := k8s.Status().Update(context.Background(), p); err != nil {
		t.Logf("mark %s ready: %v", p.Name, err) // it may have just been deleted
	}
}

// kubelet marks every pod of ps Ready once it has existed for delay, until
// the test ends.
func kubelet(t testing.TB, ps *v1alpha1.PodSet, delay time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	t.Cleanup(func() { cancel(); <-stopped })
	go func() {
		defer close(stopped)
		for ctx.Err() == nil {
			for _, p := range pods(t, ps) {
				if !isReady(p) && p.DeletionTimestamp.IsZero() && time.Since(p.CreationTimestamp.Time) >= delay {
					markReady(t, p)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
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
		return c.Reason == reason && ps.Status.ObservedGeneration == ps.Generation,
			fmt.Sprintf("gen %d/%d Ready=%s %s: %s", ps.Status.ObservedGeneration, ps.Generation, c.Status, c.Reason, c.Message)
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
