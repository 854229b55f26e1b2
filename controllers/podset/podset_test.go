/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package podset_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/podset"
	"github.com/fieldops/fieldops/feature"
	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/test/testkit"
)

// waitPods waits until ps has exactly the named pods, all Ready, and
// returns them.
func waitPods(t testing.TB, ps *v1alpha1.PodSet, want ...string) map[string]*corev1.Pod {
	t.Helper()
	var got map[string]*corev1.Pod
	testkit.Eventually(t, fmt.Sprintf("pods %v ready", want), func() (bool, string) {
		got = pods(t, ps)
		for _, p := range got {
			if !isReady(p) {
				return false, p.Name + " not ready"
			}
		}
		return reflect.DeepEqual(names(got), want), fmt.Sprint(names(got))
	})
	return got
}

func ordinals(name string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", name, i)
	}
	return out
}

// Labels added, changed and removed in the template reach the running pods
// in place; a third party's label on a pod stays.
func TestLabelsInPlace(t *testing.T) {
	ns := kit.Namespace(t, "in-place")
	ps := newPodSet(t, ns, "kafka", 5, "kafka:3.7", nil)
	before := uids(waitPods(t, ps, ordinals("kafka", 5)...))
	waitReason(t, ps, podset.ReasonReady)
	kit.ApplyAs(t, "cost-tool", fmt.Sprintf(`{apiVersion: v1, kind: Pod, metadata: {name: kafka-2, namespace: %s, labels: {cost-center: "4711"}}}`, ns))
	inPlace := testutil.ToFloat64(metrics.PodUpdatesTotal.WithLabelValues(metrics.ModeInPlace))
	recreate := testutil.ToFloat64(metrics.PodUpdatesTotal.WithLabelValues(metrics.ModeRecreate))

	for _, step := range []struct {
		what string
		set  func(map[string]string)
		want func(map[string]string) bool
	}{
		{"added", func(l map[string]string) { l["team"] = "data" }, func(l map[string]string) bool { return l["team"] == "data" }},
		{"changed", func(l map[string]string) { l["team"] = "platform" }, func(l map[string]string) bool { return l["team"] == "platform" }},
		{"removed", func(l map[string]string) { delete(l, "team") }, func(l map[string]string) bool { _, ok := l["team"]; return !ok }},
	} {
		update(t, ps, func(ps *v1alpha1.PodSet) { step.set(ps.Spec.Template.Metadata.Labels) })
		testkit.Eventually(t, "label "+step.what+" on every pod", func() (bool, string) {
			for _, p := range pods(t, ps) {
				if !step.want(p.Labels) {
					return false, fmt.Sprintf("%s: %v", p.Name, p.Labels)
				}
			}
			return true, ""
		})
		waitReason(t, ps, podset.ReasonReady)
	}
	after := pods(t, ps)
	if !reflect.DeepEqual(uids(after), before) {
		t.Fatalf("pods were recreated for label changes:\nbefore %v\nafter  %v", before, uids(after))
	}
	if after["kafka-2"].Labels["cost-center"] != "4711" {
		t.Fatalf("the third party's label is gone: %v", after["kafka-2"].Labels)
	}
	// 5 pods × 3 changes; a reconcile on a stale cache may apply once more
	// (a no-op for the apiserver), never fewer.
	if got := testutil.ToFloat64(metrics.PodUpdatesTotal.WithLabelValues(metrics.ModeInPlace)) - inPlace; got < 15 {
		t.Errorf("fieldops_pod_updates_total{mode=in_place} grew by %v, want at least 15", got)
	}
	if got := testutil.ToFloat64(metrics.PodUpdatesTotal.WithLabelValues(metrics.ModeRecreate)) - recreate; got != 0 {
		t.Errorf("fieldops_pod_updates_total{mode=recreate} grew by %v for label changes, want 0", got)
	}
	kit.HasEvent(t, ns, "kafka", podset.ReasonUpdatedInPlace, "kafka-4")
	if ps.Status.UpdatedReplicas != 5 || ps.Status.ReadyReplicas != 5 || ps.Status.CurrentRevision != ps.Status.UpdateRevision {
		t.Errorf("status %+v", ps.Status)
	}
}

// An image change recreates pods one at a time, waiting for readiness.
func TestImageChangeRollsOneAtATime(t *testing.T) {
	ns := kit.Namespace(t, "rolling")
	ps := newPodSet(t, ns, "zk", 5, "zookeeper:3.8", nil)
	before := uids(waitPods(t, ps, ordinals("zk", 5)...))
	waitReason(t, ps, podset.ReasonReady)
	oldRevision := ps.Status.UpdateRevision

	update(t, ps, func(ps *v1alpha1.PodSet) { ps.Spec.Template.Spec.Containers[0].Image = "zookeeper:3.9" })
	worst := 0
	testkit.Eventually(t, "every pod recreated at the new revision", func() (bool, string) {
		kit.Get(t, ps)
		current := pods(t, ps)
		ready, updated := 0, 0
		for _, p := range current {
			if isReady(p) {
				ready++
			}
			if p.Spec.Containers[0].Image == "zookeeper:3.9" && isReady(p) {
				updated++
			}
		}
		if unavailable := 5 - ready; unavailable > worst {
			worst = unavailable
		}
		return updated == 5, fmt.Sprintf("%d/5 updated, %d ready", updated, ready)
	})
	t.Logf("at most %d pod(s) unavailable during the rollout", worst)
	if worst > 1 {
		t.Fatalf("%d pods were unavailable at once; maxUnavailable is 1", worst)
	}
	for n, p := range pods(t, ps) {
		if string(p.UID) == before[n] {
			t.Errorf("%s was not recreated", n)
		}
	}
	waitReason(t, ps, podset.ReasonReady)
	if ps.Status.CurrentRevision == oldRevision || ps.Status.CurrentRevision != ps.Status.UpdateRevision {
		t.Errorf("revisions: current %s update %s (old %s)", ps.Status.CurrentRevision, ps.Status.UpdateRevision, oldRevision)
	}
	kit.HasEvent(t, ns, "zk", podset.ReasonRestarted, "template.spec changed")
}

// Scale 5 → 3 → 6, and a pod deleted by someone else comes back.
func TestScaleAndRecreate(t *testing.T) {
	ns := kit.Namespace(t, "scale")
	ps := newPodSet(t, ns, "web", 5, "nginx:1.27", nil)
	waitPods(t, ps, ordinals("web", 5)...)
	update(t, ps, func(ps *v1alpha1.PodSet) { ps.Spec.Replicas = ptr.To[int32](3) })
	waitPods(t, ps, ordinals("web", 3)...)
	update(t, ps, func(ps *v1alpha1.PodSet) { ps.Spec.Replicas = ptr.To[int32](6) })
	current := waitPods(t, ps, ordinals("web", 6)...)
	waitReason(t, ps, podset.ReasonReady)
	if ps.Status.Replicas != 6 || ps.Status.ReadyReplicas != 6 {
		t.Fatalf("status %+v", ps.Status)
	}

	victim := current["web-1"]
	if err := k8s.Delete(context.Background(), victim); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "web-1 recreated", func() (bool, string) {
		p := pods(t, ps)["web-1"]
		return p != nil && p.UID != victim.UID, "not yet"
	})
}

// With InPlacePodMetadata off, a label change recreates pods.
func TestGateOffRecreatesForLabels(t *testing.T) {
	setGate(t, string(feature.InPlacePodMetadata), false)
	ns := kit.Namespace(t, "gate-off")
	ps := newPodSet(t, ns, "legacy", 2, "nginx:1.27", nil)
	before := uids(waitPods(t, ps, ordinals("legacy", 2)...))
	update(t, ps, func(ps *v1alpha1.PodSet) { ps.Spec.Template.Metadata.Labels["team"] = "data" })
	testkit.Eventually(t, "pods recreated with the label", func() (bool, string) {
		current := pods(t, ps)
		for n, p := range current {
			if p.Labels["team"] != "data" || string(p.UID) == before[n] || !isReady(p) {
				return false, n + " not recreated yet"
			}
		}
		return len(current) == 2, fmt.Sprint(names(current))
	})
	kit.HasEvent(t, ns, "legacy", podset.ReasonRestarted, "InPlacePodMetadata is off")
}

// The shipped sample is accepted and its pods come up.
func TestSample(t *testing.T) {
	ps := &v1alpha1.PodSet{}
	testkit.Sample(t, "fieldops_v1alpha1_podset.yaml", ps)
	ps.Namespace = kit.Namespace(t, "sample")
	if err := k8s.Create(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ps, ordinals("kafka", 3)...)
	waitReason(t, ps, podset.ReasonReady)
}
