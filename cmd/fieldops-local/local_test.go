/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/internal/localcp"
)

// poll polls cond until it holds, for at most a minute.
func poll(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// httpGet returns the status code and body of a GET of url.
func httpGet(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// Local mode (issue 12, part 2): fieldops-local prints the upstream objects
// it created, metrics and probe URLs that answer, and every sample of
// config/samples goes Ready, the PodSet's pods Running on the kwok node.
// It is the default install (issue 39, item 2): config/default's
// admission and RBAC objects, namespace default onboarded.
func TestLocalMode(t *testing.T) {
	t.Parallel() // with TestNoOrphans' cases: each runs its own fieldops-local
	l := startLocal(t)
	stopped := false
	defer func() {
		if !stopped {
			_ = l.cmd.Process.Signal(syscall.SIGTERM)
			_ = l.cmd.Wait()
		}
	}()
	out := strings.Join(l.out, "\n")
	for _, want := range []string{"DaemonSet kube-system/aws-node (field manager eks", "Deployment kube-system/coredns (field manager kube-addon-manager", "StorageClass gp2 (field manager eks"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	probe := regexp.MustCompile(`http://127\.0\.0\.1:\d+/readyz`).FindString(out)
	metrics := regexp.MustCompile(`http://127\.0\.0\.1:\d+/metrics`).FindString(out)
	if probe == "" || metrics == "" {
		t.Fatalf("no probe or metrics URL on 127.0.0.1 in the output:\n%s", out)
	}
	poll(t, "GET "+probe, func(context.Context) (bool, error) {
		code, _, err := httpGet(probe)
		return err == nil && code == http.StatusOK, nil
	})

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(l.dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	root, err := localcp.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, c, root)
	checkOnboarding(t, c, cfg, out)
	deleteSamples(t, c, checkSamples(t, c, root))
	code, body, err := httpGet(metrics)
	if err != nil || code != http.StatusOK || !strings.Contains(body, "\nfieldops_") {
		t.Errorf("GET %s: %d %v; fieldops_ series: %v", metrics, code, err, strings.Contains(body, "\nfieldops_"))
	}

	// Stopped with Ctrl-C (SIGINT), as a user stops it: it exits cleanly
	// and leaves no process and no temporary file behind (TestNoOrphans
	// stops it with SIGTERM and kills it).
	stopped = true
	if err := l.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := l.cmd.Wait(); err != nil {
		t.Errorf("fieldops-local after SIGINT: %v", err)
	}
	l.checkClean(t, 0)
}

// checkSamples creates every sample of config/samples, the accounts they
// act as first (as kustomize orders them), and waits until each is Ready
// and the PodSet's pods are Running on the kwok node. It returns every
// object it created, in order.
func checkSamples(t *testing.T, c client.Client, root string) []*unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	samples, err := filepath.Glob(filepath.Join(root, "config", "samples", "fieldops_*.yaml"))
	if err != nil || len(samples) < 4 {
		t.Fatalf("samples %v: %v", samples, err)
	}
	// The accounts the samples act as first (as kustomize orders them).
	samples = append([]string{filepath.Join(root, "config", "samples", "accounts.yaml")}, samples...)
	var objs, created []*unstructured.Unstructured
	for _, p := range samples {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := localcp.DecodeAll(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range docs {
			if err := c.Create(ctx, o); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
		}
		created = append(created, docs...)
		if !strings.HasSuffix(p, "accounts.yaml") {
			objs = append(objs, docs...)
		}
	}
	for _, o := range objs {
		poll(t, o.GetKind()+" "+o.GetName()+" Ready", func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				return false, err
			}
			var st struct {
				Conditions []metav1.Condition `json:"conditions"`
			}
			b, _, _ := unstructured.NestedMap(o.Object, "status")
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(b, &st); err != nil {
				return false, err
			}
			return meta.IsStatusConditionTrue(st.Conditions, "Ready"), nil
		})
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace("default"), client.MatchingLabels{"app.kubernetes.io/name": "kafka"}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		t.Errorf("%d kafka pods, want 3", len(pods.Items))
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != localcp.NodeName(0) {
			t.Errorf("pod %s: %s on %q", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
	}
	return created
}

// deleteSamples deletes the samples in the order they were created, the
// accounts they act as first (as kubectl delete -k does, and the order a
// GitOps prune may take), and waits until every one is gone: the
// accounts stay, in use, until the fieldops objects acting as them have
// handed their fields back (fieldops.dev/in-use), and nothing is left
// stuck on a finalizer (issue 39).
func deleteSamples(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if err := c.Delete(context.Background(), o); client.IgnoreNotFound(err) != nil {
			t.Fatalf("delete %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	for _, o := range objs {
		poll(t, o.GetKind()+" "+o.GetName()+" gone", func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopy())
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
	}
}
