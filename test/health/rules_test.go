/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package health_test

import (
	"strings"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/test/health"
)

// Each rule of the script, on objects the controllers cannot be held in
// long enough to read them (a spec not reconciled yet) or that only a
// sequence of edits makes; the kstatus column is Flux's reading of the
// same object. The states the controllers hold are read from the control
// plane in test/health/states.
func TestScriptRules(t *testing.T) {
	const (
		ready       = `{type: Ready, status: "True", reason: Applied, message: "3 fields applied", observedGeneration: 2}`
		waiting     = `{type: Ready, status: "False", reason: Contested, message: "field manager hpa keeps taking back patched fields", observedGeneration: 2}, {type: Reconciling, status: "True", reason: Contested, message: "m", observedGeneration: 2}`
		stalled     = `{type: Ready, status: "False", reason: InvalidPatch, message: "bad", observedGeneration: 2}, {type: Stalled, status: "True", reason: InvalidPatch, message: "the patch writes status", observedGeneration: 2}`
		staleStall  = `{type: Stalled, status: "True", reason: Conflict, message: "old", observedGeneration: 1}`
		suspended   = `{type: Ready, status: "False", reason: Suspended, message: "reconciliation is suspended", observedGeneration: 2}`
		deleteWaits = `{type: Ready, status: "False", reason: Forbidden, message: "deletion waits: may not patch", observedGeneration: 2}, {type: Reconciling, status: "True", reason: Forbidden, message: "m", observedGeneration: 2}`
	)
	for _, tc := range []struct {
		name     string
		metadata string // besides name and namespace
		status   string
		argo     string
		message  string // a part of hs.message
		kstatus  status.Status
	}{
		{"not reconciled yet", "generation: 1", "", "Progressing", "waiting for the fieldops manager", status.CurrentStatus},
		{"no conditions yet", "generation: 1", "{observedGeneration: 1}", "Progressing", "waiting for the fieldops manager", status.CurrentStatus},
		{"ready", "generation: 2", "{observedGeneration: 2, conditions: [" + ready + "]}", "Healthy", "Applied: 3 fields applied", status.CurrentStatus},
		{"edited, not reconciled yet", "generation: 3", "{observedGeneration: 2, conditions: [" + ready + "]}", "Progressing", "generation 3", status.InProgressStatus},
		{"ready condition without generation, status behind", "generation: 3", `{observedGeneration: 2, conditions: [{type: Ready, status: "True", reason: Applied}]}`, "Progressing", "generation 3", status.InProgressStatus},
		{"waiting", "generation: 2", "{observedGeneration: 2, conditions: [" + waiting + "]}", "Progressing", "Contested: field manager hpa", status.InProgressStatus},
		{"waiting after an edit", "generation: 2", "{observedGeneration: 1, conditions: [" + waiting + "]}", "Progressing", "Contested", status.InProgressStatus},
		{"stalled", "generation: 2", "{observedGeneration: 2, conditions: [" + stalled + "]}", "Degraded", "InvalidPatch: the patch writes status", status.FailedStatus},
		// A Stalled that is not a terminal error (Conflict, UnknownKind)
		// leaves status.observedGeneration behind: kstatus waits, the
		// script reads the conditions of the current generation.
		{"stalled after an edit", "generation: 2", "{observedGeneration: 1, conditions: [" + stalled + "]}", "Degraded", "InvalidPatch", status.InProgressStatus},
		{"stalled, edited, not reconciled yet", "generation: 3", "{observedGeneration: 2, conditions: [" + stalled + "]}", "Progressing", "generation 3", status.InProgressStatus},
		{"ready unknown", "generation: 2", `{observedGeneration: 2, conditions: [{type: Ready, status: Unknown, reason: Starting, observedGeneration: 2}]}`, "Progressing", "Starting", status.InProgressStatus},
		{"suspended", "generation: 2", "{observedGeneration: 2, conditions: [" + suspended + "]}", "Suspended", "Suspended: reconciliation is suspended", status.InProgressStatus},
		// Suspending sets Ready only: a Stalled of before stays.
		{"suspended while stalled", "generation: 2", "{observedGeneration: 2, conditions: [" + suspended + ", " + staleStall + "]}", "Suspended", "Suspended", status.FailedStatus},
		{"deleted", "{generation: 2, deletionTimestamp: '2026-11-28T10:00:00Z', finalizers: [fieldops.dev/hand-back]}", "{observedGeneration: 2, conditions: [" + ready + "]}", "Progressing", "being deleted", status.TerminatingStatus},
		{"deletion waits", "{generation: 2, deletionTimestamp: '2026-11-28T10:00:00Z', finalizers: [fieldops.dev/hand-back]}", "{observedGeneration: 2, conditions: [" + deleteWaits + "]}", "Progressing", "being deleted: Forbidden: deletion waits", status.TerminatingStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meta := tc.metadata
			if !strings.HasPrefix(meta, "{") {
				meta = "{" + meta + "}"
			}
			y := "apiVersion: fieldops.dev/v1alpha1\nkind: FieldPatch\nmetadata: " + meta[:len(meta)-1] + ", name: p, namespace: ns}\n"
			if tc.status != "" {
				y += "status: " + tc.status + "\n"
			}
			j, err := yaml.YAMLToJSON([]byte(y))
			if err != nil {
				t.Fatal(err)
			}
			// Decoded as a client decodes it (integers as int64).
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(j); err != nil {
				t.Fatal(err)
			}
			for _, kind := range health.Kinds {
				u.SetKind(kind)
				if h := run(t, kind, u.Object); h.Status != tc.argo || !strings.Contains(h.Message, tc.message) {
					t.Errorf("%s: Argo CD health %s %q, want %s with %q", kind, h.Status, h.Message, tc.argo, tc.message)
				}
			}
			res, err := status.Compute(u)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.kstatus {
				t.Errorf("kstatus %s, want %s", res.Status, tc.kstatus)
			}
		})
	}
}
