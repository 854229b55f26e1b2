/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package localcp

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// eventually polls cond until it holds, for at most a minute.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// With Options.Cluster the control plane is a small cluster: pods are
// scheduled to kwok's nodes and go Running and Ready, Deployments roll
// out, the garbage collector deletes dependents, and a deleted namespace
// goes away with its contents.
func TestCluster(t *testing.T) {
	cp, err := Start(Options{Cluster: &ClusterOptions{Nodes: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	}()
	t.Run("the apiserver reports the pinned version", func(t *testing.T) { checkServerVersion(t, cp.Config) })
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cluster-test"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns.Name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}},
					// The namespace controller (5 s after the deletion)
					// deletes the pods and lists them again at once; kwok
					// deletes them a few ms later, so one is usually still
					// there. Within the pods' grace period that makes it
					// requeue the namespace by its graceful-termination
					// estimate, estimate/2+1 s (16 s for the default 30 s,
					// 5 s when its own status update requeues it first).
					// A grace period of 1 s has passed by then: the
					// estimate is 0 and it retries within milliseconds.
					// The pods still terminate gracefully, by kwok.
					TerminationGracePeriodSeconds: ptr.To[int64](1),
				},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns.Name).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Run("a Deployment rolls out on simulated nodes", func(t *testing.T) {
		eventually(t, "deployment available", func(ctx context.Context) (bool, error) {
			d, err := cs.AppsV1().Deployments(ns.Name).Get(ctx, "web", metav1.GetOptions{})
			return err == nil && d.Status.AvailableReplicas == 3, err
		})
		pods, err := cs.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == "" || p.Status.PodIP == "" {
				t.Errorf("pod %s: phase %s on node %q with IP %q", p.Name, p.Status.Phase, p.Spec.NodeName, p.Status.PodIP)
			}
		}
	})

	t.Run("the garbage collector deletes dependents", func(t *testing.T) {
		owner, err := cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}
		if _, err := cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().ConfigMaps(ns.Name).Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "dependent deleted", func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().ConfigMaps(ns.Name).Get(ctx, dep.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), ignoreNotFound(err)
		})
	})

	t.Run("a deleted namespace goes away with its pods", func(t *testing.T) {
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "namespace deleted", func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), ignoreNotFound(err)
		})
	})
}

// ignoreNotFound ignores NotFound.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
