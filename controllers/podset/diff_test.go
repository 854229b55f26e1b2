/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package podset

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

const testManager = "fieldops-podset/ns/kafka"

func testPodSet(mutate func(*v1alpha1.PodSet)) *v1alpha1.PodSet {
	ps := &v1alpha1.PodSet{}
	ps.Name, ps.Namespace, ps.UID = "kafka", "ns", types.UID("uid-1")
	ps.Spec.Template.Metadata.Labels = map[string]string{"app": "kafka", "tier": "broker"}
	ps.Spec.Template.Metadata.Annotations = map[string]string{"prometheus.io/scrape": "true"}
	ps.Spec.Template.Spec.Containers = []corev1.Container{{Name: "kafka", Image: "kafka:3.7"}}
	if mutate != nil {
		mutate(ps)
	}
	return ps
}

func desiredOf(ps *v1alpha1.PodSet) *corev1.Pod {
	return desiredPod(ps, 0, Revision(&ps.Spec.Template.Spec))
}

// livePod is the pod as the apiserver and kubelet leave it after creating
// desiredOf(ps) with SSA: defaults, nodeName, status, uid, and managed
// fields where testManager owns the template's label and annotation keys.
func livePod(ps *v1alpha1.PodSet, mutate func(*corev1.Pod)) *corev1.Pod {
	p := desiredOf(ps).DeepCopy()
	p.UID = "pod-uid"
	p.Spec.RestartPolicy = corev1.RestartPolicyAlways
	p.Spec.DNSPolicy = corev1.DNSClusterFirst
	grace := int64(30)
	p.Spec.TerminationGracePeriodSeconds = &grace
	p.Spec.SchedulerName = "default-scheduler"
	p.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	p.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
	p.Spec.NodeName = "node-1"
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	fields := map[string]interface{}{}
	meta := map[string]interface{}{}
	for _, kind := range []string{"labels", "annotations"} {
		keys := map[string]interface{}{}
		m := p.Labels
		if kind == "annotations" {
			m = p.Annotations
		}
		for k := range m {
			keys["f:"+k] = map[string]interface{}{}
		}
		meta["f:"+kind] = keys
	}
	fields["f:metadata"] = meta
	raw, _ := json.Marshal(fields)
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: testManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(raw))}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func TestPodDiff(t *testing.T) {
	base := testPodSet(nil)
	for _, c := range []struct {
		name    string
		live    *corev1.Pod
		desired *corev1.Pod
		want    Diff
	}{
		{"identical", desiredOf(base), desiredOf(base), None},
		{"fields the apiserver and kubelet fill", livePod(base, nil), desiredOf(base), None},
		{"an extra ownerReference", livePod(base, func(p *corev1.Pod) {
			p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "y"})
		}), desiredOf(base), None},
		{"a label another manager added", livePod(base, func(p *corev1.Pod) { p.Labels["cost-center"] = "4711" }), desiredOf(base), None},
		{"label added", livePod(base, nil), desiredOf(testPodSet(func(ps *v1alpha1.PodSet) { ps.Spec.Template.Metadata.Labels["team"] = "data" })), MetadataOnly},
		{"label changed", livePod(base, nil), desiredOf(testPodSet(func(ps *v1alpha1.PodSet) { ps.Spec.Template.Metadata.Labels["tier"] = "controller" })), MetadataOnly},
		{"label removed", livePod(base, nil), desiredOf(testPodSet(func(ps *v1alpha1.PodSet) { delete(ps.Spec.Template.Metadata.Labels, "tier") })), MetadataOnly},
		{"annotations only", livePod(base, nil), desiredOf(testPodSet(func(ps *v1alpha1.PodSet) {
			ps.Spec.Template.Metadata.Annotations["cost.example.com/owner"] = "team-a"
		})), MetadataOnly},
		{"labels and annotations", livePod(base, nil), desiredOf(testPodSet(func(ps *v1alpha1.PodSet) {
			ps.Spec.Template.Metadata.Labels["team"] = "data"
			delete(ps.Spec.Template.Metadata.Annotations, "prometheus.io/scrape")
		})), MetadataOnly},
		{"container image", livePod(base, nil), desiredOf(testPodSet(func(ps *v1alpha1.PodSet) { ps.Spec.Template.Spec.Containers[0].Image = "kafka:3.8" })), RequiresRestart},
		{"volumes", livePod(base, nil), desiredOf(testPodSet(func(ps *v1alpha1.PodSet) {
			ps.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		})), RequiresRestart},
		{"metadata and spec", livePod(base, nil), desiredOf(testPodSet(func(ps *v1alpha1.PodSet) {
			ps.Spec.Template.Metadata.Labels["team"] = "data"
			ps.Spec.Template.Spec.Containers[0].Image = "kafka:3.8"
		})), RequiresRestart},
		{"no revision label, same spec: only the label is added", livePod(base, func(p *corev1.Pod) { delete(p.Labels, RevisionLabel) }), desiredOf(base), MetadataOnly},
		{"no revision label, other image", livePod(base, func(p *corev1.Pod) {
			delete(p.Labels, RevisionLabel)
			p.Spec.Containers[0].Image = "kafka:3.6"
		}), desiredOf(base), RequiresRestart},
	} {
		got, err := PodDiff(c.live, c.desired, testManager)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestRevisionCoversSpecOnly(t *testing.T) {
	a, b := testPodSet(nil), testPodSet(func(ps *v1alpha1.PodSet) { ps.Spec.Template.Metadata.Labels["x"] = "y" })
	if Revision(&a.Spec.Template.Spec) != Revision(&b.Spec.Template.Spec) {
		t.Fatal("a label changed the revision")
	}
	c := testPodSet(func(ps *v1alpha1.PodSet) { ps.Spec.Template.Spec.Containers[0].Image = "other" })
	if Revision(&a.Spec.Template.Spec) == Revision(&c.Spec.Template.Spec) {
		t.Fatal("an image change kept the revision")
	}
}

func TestOrdinal(t *testing.T) {
	ps := testPodSet(nil)
	for name, want := range map[string]int{"kafka-0": 0, "kafka-12": 12, "kafka-": -1, "kafka-01": -1, "kafka-x": -1, "other-1": -1, "kafka-1-2": -1} {
		if got := ordinal(ps, name); got != want {
			t.Errorf("ordinal(%q) = %d, want %d", name, got, want)
		}
	}
}
