/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchintent

import (
	"encoding/json"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/ownershipcore"
)

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// typicalLedger is the record of a patch of a Deployment's container
// container (resources, an env variable, replicas, annotations, the
// rollout strategy) with 3 previous owners of 10 fields: helm (the
// container, shared, and its image and limits), hpa (replicas) and
// kubectl-edit (annotations and the strategy), and 3 fields added.
func typicalLedger(t testing.TB, container string) *ownershipcore.Ledger {
	c := fmt.Sprintf(`.spec.template.spec.containers[name=%q]`, container)
	env := c + `.env[name="HTTP_PROXY"]`
	key := func(m string, op metav1.ManagedFieldsOperationType) ownershipcore.ManagerKey {
		return ownershipcore.ManagerKey{Manager: m, Operation: op, APIVersion: "apps/v1"}
	}
	l := &ownershipcore.Ledger{Entries: []ownershipcore.LedgerEntry{
		{ManagerKey: key("helm", metav1.ManagedFieldsOperationApply),
			Fields: paths(t, c, c+".name", c+".image", c+".resources.limits.cpu", c+".resources.limits.memory"),
			Shared: paths(t, c, c+".name")},
		{ManagerKey: key("hpa", metav1.ManagedFieldsOperationUpdate), Fields: paths(t, ".spec.replicas"), Shared: paths(t)},
		{ManagerKey: key("kubectl-edit", metav1.ManagedFieldsOperationUpdate),
			Fields: paths(t, `.metadata.annotations["example.com/owner"]`, `.spec.template.metadata.annotations["prometheus.io/scrape"]`,
				".spec.strategy.rollingUpdate.maxSurge", ".spec.strategy.rollingUpdate.maxUnavailable"),
			Shared: paths(t)},
	}}
	l.Recorded = l.Taken().Union(paths(t, env, env+".name", env+".value"))
	return l
}

// targetsStatus is the status.targets of a selector patch with n targets
// whose records are the distinct ones of ledger(i) (i < n), in the earlier
// form or in WriteLedger's.
func targetsStatus(t testing.TB, n int, ledger func(i int) *ownershipcore.Ledger, legacy bool) *v1alpha1.TargetsStatus {
	ts := &v1alpha1.TargetsStatus{Matched: int32(n), Applied: int32(n)}
	index := map[string]int32{}
	for i := range n {
		var st *v1alpha1.FieldPatchStatus
		if legacy {
			st = legacyStatus(t, ledger(i), "")
		} else {
			st = &v1alpha1.FieldPatchStatus{}
			if err := WriteLedger(st, ledger(i), ""); err != nil {
				t.Fatal(err)
			}
		}
		rec := st.Record()
		key := string(mustJSON(t, &rec))
		at, ok := index[key]
		if !ok {
			at = int32(len(ts.Ledgers))
			index[key] = at
			ts.Ledgers = append(ts.Ledgers, rec)
		}
		ts.Records = append(ts.Records, v1alpha1.TargetRecord{Namespace: fmt.Sprintf("team-%02d", i/50), Name: fmt.Sprintf("web-%04d", i),
			UID: fmt.Sprintf("6f1c3c1e-0d4b-4f1a-9c1e-%012d", i), Fields: 10, Ledger: &at})
	}
	return ts
}

// The record of previous owners in path form, each field once, is
// smaller than the earlier form's (each field in fieldsV1, paths and
// recordedFields, shared ones in sharedFieldsV1 too), for one target and
// for a selector patch's targets. go test -v prints the sizes.
func TestRecordSize(t *testing.T) {
	single := func(legacy bool) int {
		l := typicalLedger(t, "app")
		if legacy {
			return recordBytes(t, legacyStatus(t, l, "uid-1"))
		}
		st := &v1alpha1.FieldPatchStatus{}
		if err := WriteLedger(st, l, "uid-1"); err != nil {
			t.Fatal(err)
		}
		return recordBytes(t, st)
	}
	shared := func(i int) *ownershipcore.Ledger { return typicalLedger(t, []string{"app", "proxy", "web"}[i%3]) }
	distinct := func(i int) *ownershipcore.Ledger { return typicalLedger(t, fmt.Sprintf("app-%04d", i)) }
	for _, tc := range []struct {
		name string
		size func(legacy bool) int
	}{
		{"one target, 3 previous owners of 10 fields", single},
		{"1000 targets, 3 distinct records", func(legacy bool) int { return len(mustJSON(t, targetsStatus(t, 1000, shared, legacy))) }},
		{"1000 targets, 1000 distinct records", func(legacy bool) int { return len(mustJSON(t, targetsStatus(t, 1000, distinct, legacy))) }},
	} {
		before, after := tc.size(true), tc.size(false)
		t.Logf("%s: %d bytes before, %d after (%.0f%%)", tc.name, before, after, 100*float64(after)/float64(before))
		if after >= before {
			t.Errorf("%s: %d bytes, the earlier form %d", tc.name, after, before)
		}
	}
}

// BenchmarkWriteLedger is the cost of encoding typicalLedger in the
// earlier form and in path form (each member's path checked to read
// back exactly).
func BenchmarkWriteLedger(b *testing.B) {
	l := typicalLedger(b, "app")
	b.Run("legacy", func(b *testing.B) {
		for b.Loop() {
			legacyStatus(b, l, "uid-1")
		}
	})
	b.Run("paths", func(b *testing.B) {
		st := &v1alpha1.FieldPatchStatus{}
		for b.Loop() {
			if err := WriteLedger(st, l, "uid-1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		st := &v1alpha1.FieldPatchStatus{}
		if err := WriteLedger(st, l, "uid-1"); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := ReadLedger(st, "uid-1"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
