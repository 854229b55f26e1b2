/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package podset

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

func TestValidate(t *testing.T) {
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kafka"}}
	for _, c := range []struct {
		name     string
		mutate   func(*v1alpha1.PodSet)
		err      string
		replicas int
		maxUnav  int
	}{
		{"defaults", func(ps *v1alpha1.PodSet) {}, "", 1, 1},
		{"five replicas, 40%", func(ps *v1alpha1.PodSet) {
			ps.Spec.Replicas = ptr.To[int32](5)
			ps.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("40%"))
		}, "", 5, 2},
		{"a tiny percentage is still 1", func(ps *v1alpha1.PodSet) {
			ps.Spec.Replicas = ptr.To[int32](3)
			ps.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("10%"))
		}, "", 3, 1},
		{"negative replicas", func(ps *v1alpha1.PodSet) { ps.Spec.Replicas = ptr.To[int32](-1) }, "spec.replicas is -1", 0, 0},
		{"no selector", func(ps *v1alpha1.PodSet) { ps.Spec.Selector = nil }, "spec.selector is required", 0, 0},
		{"selector does not match", func(ps *v1alpha1.PodSet) {
			ps.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "zookeeper"}}
		}, "does not match the template labels", 0, 0},
		{"bad selector operator", func(ps *v1alpha1.PodSet) {
			ps.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
		}, "spec.selector", 0, 0},
		{"bad maxUnavailable", func(ps *v1alpha1.PodSet) {
			ps.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("lots"))
		}, "maxUnavailable", 0, 0},
	} {
		ps := testPodSet(func(ps *v1alpha1.PodSet) { ps.Spec.Selector = selector })
		c.mutate(ps)
		_, replicas, maxUnav, err := validate(ps)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want %q", c.name, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err == "" && (replicas != c.replicas || maxUnav != c.maxUnav):
			t.Errorf("%s: replicas %d maxUnavailable %d, want %d %d", c.name, replicas, maxUnav, c.replicas, c.maxUnav)
		}
	}
}
