/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchintent_test

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/ownershipcore"
)

// A read error after a 403 keeps the 403's Unread: the caller reports
// every record it could not read, whatever failed after it.
func TestInheritedRecordsKeepsUnreadOnError(t *testing.T) {
	fields, err := ownershipcore.ParsePathSet([]string{".data.a", ".data.b"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := ownershipcore.ParsePathSet([]string{".data.a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ownershipcore.ParsePathSet([]string{".data.b"})
	if err != nil {
		t.Fatal(err)
	}
	owners := ownershipcore.ManagedFields{
		{ManagerKey: ownershipcore.ManagerKey{Manager: "fieldops-fieldpatch/ns/hidden", Operation: "Apply", APIVersion: "v1"}, Fields: a},
		{ManagerKey: ownershipcore.ManagerKey{Manager: "fieldops-fieldpatch/ns/flaky", Operation: "Apply", APIVersion: "v1"}, Fields: b},
	}
	gr := schema.GroupResource{Group: "fieldops.dev", Resource: "fieldpatches"}
	read := func(_ context.Context, ref *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		if ref.GetName() == "hidden" {
			return nil, apierrors.NewForbidden(gr, "hidden", errors.New("no"))
		}
		return nil, apierrors.NewInternalError(errors.New("etcd"))
	}
	out, unread, err := patchintent.InheritedRecords(context.Background(), read, owners, fields, "fieldops-fieldpatch/ns/me", "uid")
	if err == nil || !apierrors.IsInternalError(err) {
		t.Fatalf("err = %v, want the internal error", err)
	}
	if len(out) != 0 {
		t.Errorf("inherited %d records, want none", len(out))
	}
	if len(unread) != 1 || unread[0].Patch.Name != "hidden" {
		t.Fatalf("unread = %+v, want the 403 of hidden", unread)
	}
}
