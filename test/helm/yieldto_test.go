/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package helm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/fieldops/fieldops/test/testkit"
)

// An autoscaler writing replicas through the scale subresource (an
// Update entry) owns spec.replicas: helm upgrade conflicts with it
// unless the post-renderer yields to it (--yield-to). A post-renderer
// that cannot read the release's objects stops the upgrade before
// anything is applied.
func TestHelmYieldToAndUnreadable(t *testing.T) {
	ctx := context.Background()
	const ns = "helm-yield"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	chartDir := writeChart(t)
	upgrade := func(args ...string) (string, error) {
		return helm(append([]string{"upgrade", "--install", "web", chartDir, "-n", ns, "--post-renderer", "fieldops-postrender", "--post-renderer-args=--namespace=" + ns}, args...)...)
	}
	if out, err := upgrade(); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	if err := k8s.SubResource("scale").Patch(ctx, liveWeb(t, ns), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`)), client.FieldOwner("autoscaler")); err != nil {
		t.Fatal(err)
	}
	if out, err := upgrade("--set", "tag=1.28"); err == nil || !strings.Contains(out, "conflict") {
		t.Fatalf("helm upgrade over the autoscaler's replicas: %v, want a conflict\n%s", err, out)
	}
	if out, err := upgrade("--set", "tag=1.28", "--post-renderer-args=--yield-to=autoscaler"); err != nil {
		t.Fatalf("helm upgrade yielding to the autoscaler: %v\n%s", err, out)
	}
	if got, want := state(t, ns), "replicas 3, image nginx:1.28, memory 128Mi, note v1, 1 env"; got != want {
		t.Errorf("yielding to the autoscaler: %s, want %s", got, want)
	}

	logFile := filepath.Join(t.TempDir(), "postrender.log")
	out, err := upgrade("--set", "tag=1.29", "--post-renderer-args=--yield-to=autoscaler", "--post-renderer-args=--kubeconfig="+nobody(t), "--post-renderer-args=--log-file="+logFile)
	if err == nil || !strings.Contains(out, "fieldops-postrender") {
		t.Errorf("helm upgrade with a post-renderer that may not read: %v, want the plugin's failure\n%s", err, out)
	}
	if b, _ := os.ReadFile(logFile); !strings.Contains(string(b), "Deployment helm-yield/web") || !strings.Contains(string(b), "forbidden") {
		t.Errorf("--log-file holds %q, want the object and the error", b)
	}
	if got, want := state(t, ns), "replicas 3, image nginx:1.28, memory 128Mi, note v1, 1 env"; got != want {
		t.Errorf("the Deployment changed although the post-renderer failed: %s, want %s", got, want)
	}
}

// nobody is a kubeconfig of a user with no rights.
func nobody(t *testing.T) string {
	t.Helper()
	return testkit.Kubeconfig(t, cluster, envtest.User{Name: "helm-nobody"})
}
