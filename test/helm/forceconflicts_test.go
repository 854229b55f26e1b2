/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package helm

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fieldops/fieldops/test/testkit"
)

// nsForce is TestHelmForceConflicts's namespace, one the manager watches.
const nsForce = "helm-force"

// The recipe of docs/gitops.md for a field the chart sets, without the
// post-renderer: Helm 4's apply (no force) conflicts with the patch's
// field manager; `helm upgrade --force-conflicts` takes the field, and
// fieldops writes it back once (the Deployment's generation moves once
// for Helm's upgrade and once for the repair); once the patch is
// deleted, the field is Helm's again and a plain upgrade works.
func TestHelmForceConflicts(t *testing.T) {
	ctx := context.Background()
	const ns = nsForce
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	chartDir := writeChart(t)
	plain := func(args ...string) (string, error) {
		return helm(append([]string{"upgrade", "--install", "web", chartDir, "-n", ns}, args...)...)
	}
	if out, err := plain(); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	fp := createReady(t, `apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: `+ns+`}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  patch: {spec: {replicas: 5}}
`)
	if out, err := plain("--set", "tag=1.28"); err == nil || !strings.Contains(out, "conflict") || !strings.Contains(out, "fieldops-fieldpatch/"+ns+"/pin") {
		t.Fatalf("helm upgrade: %v, want a conflict naming the patch's field manager\n%s", err, out)
	}
	gen := liveWeb(t, ns).GetGeneration()
	if out, err := plain("--set", "tag=1.28", "--force-conflicts"); err != nil {
		t.Fatalf("helm upgrade --force-conflicts: %v\n%s", err, out)
	}
	want := "replicas 5, image nginx:1.28, memory 128Mi, note v1, 1 env"
	testkit.Eventually(t, "the patch's replicas written back after the forced upgrade", func() (bool, string) {
		got := state(t, ns)
		return got == want, got
	})
	if g := liveWeb(t, ns).GetGeneration(); g != gen+2 {
		t.Errorf("generation %d after the forced upgrade and the repair, want %d (one change each)", g, gen+2)
	}

	testkit.Kit{Client: k8s}.DeleteAndWait(t, fp)
	if out, err := plain("--set", "tag=1.29"); err != nil {
		t.Fatalf("helm upgrade after the patch's deletion: %v\n%s", err, out)
	}
	if got, want := state(t, ns), fmt.Sprintf("replicas %d, image nginx:1.29, memory 128Mi, note v1, 1 env", 1); got != want {
		t.Errorf("after the patch's deletion and a plain upgrade: %s, want %s", got, want)
	}
}
