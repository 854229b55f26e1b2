/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package cluster_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/test/testkit"
)

// pods returns "name=uid image ready" of the pods labelled app=<app>, sorted.
func pods(t *testing.T, ns, app string) []string {
	t.Helper()
	var l corev1.PodList
	if err := k8s.List(context.Background(), &l, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range l.Items {
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		out = append(out, fmt.Sprintf("%s=%s %s ready=%v deleting=%v", p.Name, p.UID, p.Spec.Containers[0].Image, ready, p.DeletionTimestamp != nil))
	}
	sort.Strings(out)
	return out
}

// status returns the PodSet's readyReplicas and updatedReplicas, and
// whether it is Ready.
func podSetStatus(t *testing.T, ps *unstructured.Unstructured) (ready, updated int64, isReady bool) {
	t.Helper()
	l := kit.Live(t, ps)
	ready, _, _ = unstructured.NestedInt64(l.Object, "status", "readyReplicas")
	updated, _, _ = unstructured.NestedInt64(l.Object, "status", "updatedReplicas")
	conds, _, _ := unstructured.NestedSlice(l.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]interface{})
		isReady = isReady || (m["type"] == "Ready" && m["status"] == "True" && m["observedGeneration"] == l.GetGeneration())
	}
	return ready, updated, isReady
}

const podSet = `
apiVersion: fieldops.dev/v1alpha1
kind: PodSet
metadata: {name: kafka, namespace: %s}
spec:
  replicas: 3
  selector: {matchLabels: {app: kafka}}
  updateStrategy: {maxUnavailable: 1}
  template:
    metadata:
      labels: {app: kafka%s}
    spec:
      containers:
      - {name: kafka, image: "%s"}
`

// A PodSet on the cluster: its pods are scheduled and reported Ready by
// the simulated kubelet; a label change reaches them in place (same UIDs);
// an image change recreates them, the rollout waiting on real readiness;
// deleting the PodSet lets the garbage collector delete them.
func TestPodSetOnCluster(t *testing.T) {
	ns := kit.Namespace(t, "podset-cluster")
	ps := kit.ApplyAs(t, "user", fmt.Sprintf(podSet, ns, "", "apache/kafka:3.9.0"))
	testkit.Eventually(t, "3 ready pods", func() (bool, string) {
		ready, _, ok := podSetStatus(t, ps)
		return ready == 3 && ok, fmt.Sprintf("readyReplicas %d, Ready %v; pods %v", ready, ok, pods(t, ns, "kafka"))
	})
	before := pods(t, ns, "kafka")
	for _, p := range before {
		if !strings.Contains(p, "ready=true") {
			t.Fatalf("pod not ready: %v", before)
		}
	}

	kit.ApplyAs(t, "user", fmt.Sprintf(podSet, ns, ", cost-center: platform", "apache/kafka:3.9.0"))
	testkit.Eventually(t, "the label on every pod", func() (bool, string) {
		var l corev1.PodList
		if err := k8s.List(context.Background(), &l, client.InNamespace(ns), client.MatchingLabels{"app": "kafka", "cost-center": "platform"}); err != nil {
			return false, err.Error()
		}
		return len(l.Items) == 3, fmt.Sprintf("%d pods labelled", len(l.Items))
	})
	if after := pods(t, ns, "kafka"); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("a label change recreated pods:\nbefore %v\nafter  %v", before, after)
	}

	kit.ApplyAs(t, "user", fmt.Sprintf(podSet, ns, ", cost-center: platform", "apache/kafka:4.0.0"))
	testkit.Eventually(t, "the new image rolled out", func() (bool, string) {
		ready, updated, ok := podSetStatus(t, ps)
		now := pods(t, ns, "kafka")
		done := ready == 3 && updated == 3 && ok && len(now) == 3
		for _, p := range now {
			done = done && strings.Contains(p, "kafka:4.0.0 ready=true deleting=false")
		}
		return done, fmt.Sprintf("ready %d updated %d Ready %v; pods %v", ready, updated, ok, now)
	})
	for i, p := range pods(t, ns, "kafka") {
		if p == before[i] || strings.SplitN(p, " ", 2)[0] == strings.SplitN(before[i], " ", 2)[0] {
			t.Errorf("pod not recreated: %s (before: %s)", p, before[i])
		}
	}

	kit.DeleteAndWait(t, ps)
	testkit.Eventually(t, "the garbage collector deletes the pods", func() (bool, string) {
		left := pods(t, ns, "kafka")
		return len(left) == 0, fmt.Sprint(left)
	})
}

const workload = `
apiVersion: fieldops.dev/v1alpha1
kind: ManagedWorkload
metadata: {name: web, namespace: %s}
spec:
  prune: true
  resources:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: web-config}
    data: {a: b}
%s`

const webDeployment = `  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec:
      replicas: 2
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec:
          containers:
          - {name: web, image: "nginx:1.27"}
`

// A ManagedWorkload on the cluster: its Deployment rolls out; removed from
// the workload it is pruned and the garbage collector deletes its
// ReplicaSets and pods; deleting the namespace removes the workload
// (its finalizer runs) and the namespace goes away.
func TestManagedWorkloadOnCluster(t *testing.T) {
	ns := kit.Namespace(t, "workload-cluster")
	mw := kit.ApplyAs(t, "user", fmt.Sprintf(workload, ns, webDeployment))
	d := &appsv1.Deployment{}
	d.Name, d.Namespace = "web", ns
	testkit.Eventually(t, "the Deployment available", func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(d), d); err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas == 2, fmt.Sprintf("%+v; pods %v", d.Status, pods(t, ns, "web"))
	})

	kit.ApplyAs(t, "user", fmt.Sprintf(workload, ns, ""))
	testkit.Eventually(t, "the Deployment pruned, its ReplicaSets and pods collected", func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(d), &appsv1.Deployment{})
		var rs appsv1.ReplicaSetList
		if err := k8s.List(context.Background(), &rs, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		left := pods(t, ns, "web")
		return apierrors.IsNotFound(err) && len(rs.Items) == 0 && len(left) == 0, fmt.Sprintf("deployment: %v; %d ReplicaSets; pods %v", err, len(rs.Items), left)
	})

	nsObj := &corev1.Namespace{}
	nsObj.Name = ns
	if err := k8s.Delete(context.Background(), nsObj); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the namespace deleted", func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(nsObj), &corev1.Namespace{})
		return apierrors.IsNotFound(err), fmt.Sprintf("%v; workload exists: %v", err, kit.Exists(t, mw))
	})
}
