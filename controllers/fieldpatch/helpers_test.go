/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"testing"

	"k8s.io/client-go/discovery"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/ownershipcore"
)

// testApplier is an Applier with the test's own client, to act as the
// controller would have before a crash.
func testApplier(t testing.TB) *ownershipcore.Applier {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	return &ownershipcore.Applier{Client: k8s, Reader: k8s, Schema: ownershipcore.NewSchema(dc)}
}

func decodeStatusOwners(fp *v1alpha1.FieldPatch) (ownershipcore.ManagedFields, error) {
	var out ownershipcore.ManagedFields
	for _, p := range fp.Status.PreviousOwners {
		set, _, err := patchintent.OwnerFields(p)
		if err != nil {
			return nil, err
		}
		out = append(out, ownershipcore.Entry{
			ManagerKey: ownershipcore.ManagerKey{Manager: p.Manager, Operation: p.Operation, APIVersion: p.APIVersion, Subresource: p.Subresource},
			Fields:     set,
		})
	}
	return out, nil
}
