/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package release

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/internal/bundle"
	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/internal/served"
)

// What make install and make deploy do: apply the CRDs, then
// hack/wait-served (served.Wait). Once Wait returns, a FieldPatch is
// created at the first attempt: no "503 Resource kind ... not found".
// Before the CRDs exist, Wait fails when its context ends.
func TestWaitServedAfterApply(t *testing.T) {
	cp, err := localcp.Start(localcp.Options{NoFieldopsCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := client.New(cp.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Without the CRDs, Wait reports them missing when its context ends.
	done, stop := context.WithCancel(ctx)
	stop()
	if err := served.Wait(done, cp.Config, served.Group, 0); err == nil {
		t.Error("served.Wait returned nil without fieldops CRDs")
	}
	root := moduleRoot(t)
	crds, err := bundle.Render(filepath.Join(root, "config", "crd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(crd), client.FieldOwner("fieldops-test"), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
	}
	if err := served.Wait(ctx, cp.Config, served.Group, len(crds)); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "config", "samples", "fieldops_v1alpha1_fieldpatch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := bundle.DecodeObjects(raw)
	if err != nil || len(objs) != 1 {
		t.Fatalf("the sample: %d objects, %v", len(objs), err)
	}
	if err := c.Create(ctx, objs[0]); err != nil {
		t.Errorf("create a FieldPatch right after served.Wait: %v", err)
	}
}
