/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

const podSetReplicas = 50

// BenchmarkPodSetLabelChange changes a template label of a Ready 50-pod
// PodSet and reports the pods recreated (target 0: the change is applied
// in place) and the seconds until every pod carries the label.
func BenchmarkPodSetLabelChange(b *testing.B) {
	ctx := context.Background()
	c, _ := env(b)

	var recreated int
	var took time.Duration
	for i := 0; i < b.N; i++ {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("podset-bench-%d-%d", b.N, i)}}
		if err := c.Create(ctx, ns); err != nil {
			b.Fatal(err)
		}
		replicas := int32(podSetReplicas)
		ps := &v1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "kafka", Namespace: ns.Name}}
		ps.Spec.Replicas = &replicas
		ps.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kafka"}}
		ps.Spec.Template.Metadata.Labels = map[string]string{"app": "kafka"}
		ps.Spec.Template.Spec.Containers = []corev1.Container{{Name: "kafka", Image: "kafka:3.7"}}
		if err := c.Create(ctx, ps); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		before := waitPodSet(b, c, ns.Name, func(p *corev1.Pod) bool { return true })

		b.StartTimer()
		start := time.Now()
		if err := c.Get(ctx, client.ObjectKeyFromObject(ps), ps); err != nil {
			b.Fatal(err)
		}
		ps.Spec.Template.Metadata.Labels["cost-center"] = "4711"
		if err := c.Update(ctx, ps); err != nil {
			b.Fatal(err)
		}
		after := waitPodSet(b, c, ns.Name, func(p *corev1.Pod) bool { return p.Labels["cost-center"] == "4711" })
		took += time.Since(start)
		b.StopTimer()
		for name, uid := range before {
			if after[name] != uid {
				recreated++
			}
		}
	}
	b.ReportMetric(float64(recreated)/float64(b.N), "pods-recreated/op")
	b.ReportMetric(took.Seconds()/float64(b.N), "s-until-labelled/op")
}

// waitPodSet marks pods Ready (no kubelet runs) until all podSetReplicas
// pods exist and satisfy ok; it returns their UIDs by name.
func waitPodSet(b *testing.B, c client.Client, ns string, ok func(*corev1.Pod) bool) map[string]string {
	b.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var l corev1.PodList
		if err := c.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		uids, done := map[string]string{}, len(l.Items) == podSetReplicas
		for i := range l.Items {
			p := &l.Items[i]
			uids[p.Name] = string(p.UID)
			if len(p.Status.Conditions) == 0 {
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
				_ = c.Status().Update(context.Background(), p)
				done = false
			}
			if !ok(p) {
				done = false
			}
		}
		if done {
			return uids
		}
	}
	b.Fatal("timed out waiting for the PodSet's pods")
	return nil
}
