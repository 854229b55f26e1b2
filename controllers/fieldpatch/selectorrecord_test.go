/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"encoding/json"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

// Issue 31: the records of 5,000 targets fit in status under etcd's
// default limit of 1.5 MiB per object (with room for the rest of the
// patch), when the targets share their previous owners as the objects of
// one chart do; and they read back as written.
func TestTargetRecordsFit5000(t *testing.T) {
	const env = `.spec.template.spec.containers[name="app"].env[name="HTTP_PROXY"]`
	owner := func(manager string) v1alpha1.PreviousOwner {
		return v1alpha1.PreviousOwner{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1",
			Fields: []string{env, env + ".name", env + ".value"}}
	}
	ledgers := []v1alpha1.TargetLedger{
		{AddedFields: []string{`.spec.template.spec.containers[name="app"].env[name="NO_PROXY"]`}, PreviousOwners: []v1alpha1.PreviousOwner{owner("helm")}},
		{PreviousOwners: []v1alpha1.PreviousOwner{owner("argocd-controller"), owner("kubectl-edit")}},
		{PreviousOwners: []v1alpha1.PreviousOwner{owner("flux-kustomize")}},
	}
	entries := map[types.UID]*targetEntry{}
	for i := range 5000 {
		uid := uuid.NewUUID()
		e := &targetEntry{rec: v1alpha1.TargetRecord{Namespace: fmt.Sprintf("team-%03d", i/50), Name: fmt.Sprintf("vendor-chart-deployment-%04d", i), UID: string(uid), Fields: 3}}
		if i%10 != 0 {
			e.ledger = ledgers[i%3]
		}
		entries[uid] = e
	}
	records, ls := writeTargets(entries)
	if len(records) != 5000 || len(ls) != 3 {
		t.Fatalf("%d records, %d ledgers; want 5000 sharing 3", len(records), len(ls))
	}
	ts := &v1alpha1.TargetsStatus{Matched: 5000, Applied: 4980, Failed: 20, Records: records, Ledgers: ls}
	for i := range v1alpha1.MaxNotApplied {
		ts.NotApplied = append(ts.NotApplied, v1alpha1.TargetProblem{Namespace: "team-000", Name: fmt.Sprintf("vendor-chart-deployment-%04d", i), Reason: "Conflict",
			Message: "1 conflict(s): .spec.template.spec.containers[name=\"app\"].env[name=\"HTTP_PROXY\"].value owned by \"helm\" (Apply)"})
	}
	raw, err := json.Marshal(ts)
	if err != nil {
		t.Fatal(err)
	}
	if limit := 1 << 20; len(raw) > limit {
		t.Errorf("status.targets of 5000 targets: %d bytes, want at most %d", len(raw), limit)
	}
	t.Logf("status.targets of 5000 targets: %d bytes (%d per target)", len(raw), len(raw)/5000)

	back := readTargets(ts)
	if len(back) != len(entries) {
		t.Fatalf("%d read back, want %d", len(back), len(entries))
	}
	for uid, e := range entries {
		b := back[uid]
		gotLedger, _ := json.Marshal(b.ledger)
		wantLedger, _ := json.Marshal(e.ledger)
		if fmt.Sprintf("%+v %s", b.rec, gotLedger) != fmt.Sprintf("%+v %s", e.rec, wantLedger) {
			t.Fatalf("%s read back as %+v, want %+v", uid, b, e)
		}
	}
}
