/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package conditions_test

import (
	"fmt"
	"sort"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fieldops/fieldops/controllers/internal/conditions"
)

// summary prints the conditions as "Type=Status/Reason@gen", sorted.
func summary(conds []metav1.Condition) []string {
	var out []string
	for _, c := range conds {
		out = append(out, fmt.Sprintf("%s=%s/%s@%d", c.Type, c.Status, c.Reason, c.ObservedGeneration))
	}
	sort.Strings(out)
	return out
}

// kstatusOf computes what kstatus (Flux's health checks, kubectl wait-like
// tools) reads from an object with these conditions at generation gen.
func kstatusOf(t *testing.T, conds []metav1.Condition, gen int64) status.Status {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "fieldops.dev/v1alpha1", "kind": "FieldPatch",
		"metadata": map[string]interface{}{"name": "x", "namespace": "ns", "generation": gen},
	}}
	raw := make([]interface{}, 0, len(conds))
	for _, c := range conds {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, m)
	}
	u.Object["status"] = map[string]interface{}{"observedGeneration": gen, "conditions": raw}
	res, err := status.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

// Each setter, from each starting state: the conditions it leaves, and the
// kstatus they mean.
func TestSetters(t *testing.T) {
	start := map[string]func(*[]metav1.Condition){
		"empty":   func(*[]metav1.Condition) {},
		"ready":   func(c *[]metav1.Condition) { conditions.SetReady(c, 1, "Applied", "ok") },
		"stalled": func(c *[]metav1.Condition) { conditions.SetStalled(c, 1, "InvalidPatch", "bad") },
		"waiting": func(c *[]metav1.Condition) { conditions.SetWaiting(c, 1, "TargetNotFound", "later") },
	}
	for _, tc := range []struct {
		name    string
		set     func(*[]metav1.Condition)
		want    []string
		kstatus status.Status
	}{
		{"SetReady", func(c *[]metav1.Condition) { conditions.SetReady(c, 2, "Applied", "m") }, []string{"Ready=True/Applied@2"}, status.CurrentStatus},
		{"SetStalled", func(c *[]metav1.Condition) { conditions.SetStalled(c, 2, "Conflict", "m") }, []string{"Ready=False/Conflict@2", "Stalled=True/Conflict@2"}, status.FailedStatus},
		{"SetWaiting", func(c *[]metav1.Condition) { conditions.SetWaiting(c, 2, "Contested", "m") }, []string{"Ready=False/Contested@2", "Reconciling=True/Contested@2"}, status.InProgressStatus},
	} {
		for from, prepare := range start {
			t.Run(tc.name+" from "+from, func(t *testing.T) {
				var conds []metav1.Condition
				prepare(&conds)
				tc.set(&conds)
				if got := summary(conds); fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Errorf("conditions %v, want %v", got, tc.want)
				}
				if got := kstatusOf(t, conds, 2); got != tc.kstatus {
					t.Errorf("kstatus %s, want %s", got, tc.kstatus)
				}
			})
		}
	}
}

// PluginFailure is set and removed beside the kstatus conditions, never
// touching them.
func TestSetPluginFailure(t *testing.T) {
	var conds []metav1.Condition
	conditions.SetReady(&conds, 3, "Applied", "ok")
	conditions.SetPluginFailure(&conds, 3, "plugin x timed out")
	if got := fmt.Sprint(summary(conds)); got != "[PluginFailure=True/PluginFailed@3 Ready=True/Applied@3]" {
		t.Errorf("with a failure: %s", got)
	}
	conditions.SetPluginFailure(&conds, 3, "")
	if got := fmt.Sprint(summary(conds)); got != "[Ready=True/Applied@3]" {
		t.Errorf("after the failure: %s", got)
	}
}

// The last transition time moves only when a condition's status changes
// (metav1.Condition semantics): a new reason or message keeps it.
func TestTransitionTimeKeptOnSameStatus(t *testing.T) {
	var conds []metav1.Condition
	conditions.SetWaiting(&conds, 1, "TargetNotFound", "a")
	first := conds[0].LastTransitionTime
	conditions.SetWaiting(&conds, 1, "Contested", "b")
	for _, c := range conds {
		if c.Type == conditions.Ready && !c.LastTransitionTime.Equal(&first) {
			t.Errorf("Ready's transition time moved on a reason change: %v → %v", first, c.LastTransitionTime)
		}
	}
}

// A condition removed and set again within one reconcile, or set to the
// same status with another reason, keeps the time of its last transition;
// one whose status changed, or that is new, keeps its new time.
func TestKeepTransitions(t *testing.T) {
	old, now := metav1.Unix(1000, 0), metav1.Unix(2000, 0)
	cond := func(typ string, status metav1.ConditionStatus, reason string, at metav1.Time) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, LastTransitionTime: at}
	}
	for _, tc := range []struct {
		name          string
		before, after []metav1.Condition
		want          []metav1.Time
	}{
		{"removed and set again", []metav1.Condition{cond("PluginFailure", "True", "PluginFailed", old)}, []metav1.Condition{cond("PluginFailure", "True", "PluginFailed", now)}, []metav1.Time{old}},
		{"same status, new reason", []metav1.Condition{cond("Ready", "False", "Progressing", old)}, []metav1.Condition{cond("Ready", "False", "Contested", now)}, []metav1.Time{old}},
		{"status changed", []metav1.Condition{cond("Ready", "False", "Progressing", old)}, []metav1.Condition{cond("Ready", "True", "Applied", now)}, []metav1.Time{now}},
		{"new", nil, []metav1.Condition{cond("Stalled", "True", "InvalidPatch", now)}, []metav1.Time{now}},
		{"several", []metav1.Condition{cond("Ready", "True", "Applied", old), cond("PluginFailure", "True", "PluginFailed", old)},
			[]metav1.Condition{cond("PluginFailure", "True", "PluginFailed", now), cond("Ready", "False", "Conflict", now)}, []metav1.Time{old, now}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conditions.KeepTransitions(tc.before, tc.after)
			for i, c := range tc.after {
				if !c.LastTransitionTime.Equal(&tc.want[i]) {
					t.Errorf("%s: lastTransitionTime %v, want %v", c.Type, c.LastTransitionTime, tc.want[i])
				}
			}
		})
	}
}
