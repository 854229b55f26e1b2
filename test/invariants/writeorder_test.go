/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package invariants

import (
	"strings"
	"testing"

	"github.com/fieldops/fieldops/internal/patchplan"
	"github.com/fieldops/fieldops/test/testkit"
)

const (
	woTarget = "/apis/invariants.example.com/v1/namespaces/ns/widgets/target"
	woStatus = "/apis/fieldops.dev/v1alpha1/namespaces/ns/fieldpatches/fp-1/status"
	woPatch  = "/apis/fieldops.dev/v1alpha1/namespaces/ns/fieldpatches/fp-1"
	woSecret = "/api/v1/namespaces/ns/secrets/fieldops-previous-uid1"
	woMine   = "fieldops-fieldpatch/ns/fp-1"
	applyCT  = "application/apply-patch+yaml"
	jsonCT   = "application/json-patch+json"
	mergeCT  = "application/merge-patch+json"
	locked   = `{"metadata":{"resourceVersion":"7"},"status":{"previousOwners":[]}}`
	unlocked = `{"status":{"conditions":[]}}`
)

var woScope = writeScope{target: "/namespaces/ns/widgets/target", manager: woMine,
	status: "/namespaces/ns/fieldpatches/fp-1/status", secret: "fieldops-previous-uid1"}

// lw is a successful PATCH of path by the reconcile tag.
func lw(tag, path, ct, fm, body string) testkit.LoggedWrite {
	return testkit.LoggedWrite{Method: "PATCH", Path: path, ContentType: ct, FieldManager: fm, Body: []byte(body), Status: 200, Tag: tag}
}

func TestClassifyWrites(t *testing.T) {
	failed := lw("r1", woTarget, applyCT, woMine, "")
	failed.Status = 409
	dry := lw("r1", woTarget, applyCT, woMine, "")
	dry.DryRun = true
	deleted := lw("r1", woSecret, "", "", "")
	deleted.Method = "DELETE"
	for _, tc := range []struct {
		name string
		log  []testkit.LoggedWrite
		want string
	}{
		{"record, apply, final status", []testkit.LoggedWrite{
			lw("r1", woPatch, mergeCT, "", `{"metadata":{"finalizers":["x"]}}`),
			lw("r1", woStatus, mergeCT, "", locked),
			lw("r1", woTarget, applyCT, woMine, ""),
			lw("r1", woStatus, mergeCT, "", unlocked),
		}, "Record Apply"},
		{"a final status of an earlier reconcile is dropped", []testkit.LoggedWrite{
			lw("r1", woStatus, mergeCT, "", unlocked),
			lw("r2", woTarget, jsonCT, woMine, "[]"),
			lw("r2", woTarget, applyCT, woMine, ""),
		}, "GiveBack Apply"},
		{"an unguarded status write before a target write is kept", []testkit.LoggedWrite{
			lw("r1", woStatus, mergeCT, "", unlocked),
			lw("r1", woTarget, applyCT, woMine, ""),
		}, "Status Apply"},
		{"a record with no target write after it", []testkit.LoggedWrite{
			lw("r1", woStatus, mergeCT, "", locked),
		}, "Record"},
		{"previous values, a per-target secret too", []testkit.LoggedWrite{
			lw("r1", woSecret, applyCT, "fieldops-previous-values", "{}"),
			lw("r1", woSecret+"-target1", applyCT, "fieldops-previous-values", "{}"),
			lw("r1", woStatus, mergeCT, "", locked),
			lw("r1", woTarget, applyCT, woMine, ""),
			deleted,
		}, "PreviousValues PreviousValues Record Apply"},
		{"other managers, other secrets, refusals and dry runs are left out", []testkit.LoggedWrite{
			lw("r1", woTarget, applyCT, "fieldops-fieldpatch/ns/fp-2", ""),
			lw("r1", "/api/v1/namespaces/ns/secrets/fieldops-previous-uid2", applyCT, "", "{}"),
			lw("r1", "/apis/fieldops.dev/v1alpha1/namespaces/ns/fieldpatches/fp-10/status", mergeCT, "", locked),
			failed, dry,
			lw("r1", woTarget, applyCT, woMine, ""),
		}, "Apply"},
		{"another write of the patch to the target is named", []testkit.LoggedWrite{
			lw("r1", woTarget, mergeCT, woMine, "{}"),
		}, "PATCH(" + mergeCT + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, w := range classifyWrites(tc.log, woScope) {
				got = append(got, w.kind)
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("got [%s], want [%s]", g, tc.want)
			}
		})
	}
}

func TestWritesDiff(t *testing.T) {
	rec, app := patchplan.WriteRecord, patchplan.WriteApply
	sent := func(kinds ...string) []sentWrite {
		var out []sentWrite
		for i, k := range kinds {
			out = append(out, sentWrite{kind: k, reconcile: map[bool]string{true: "r1", false: "r2"}[i == 0]})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		planned []patchplan.Write
		sent    []sentWrite
		want    string
	}{
		{"same", []patchplan.Write{rec, app}, []sentWrite{{"Record", "r1"}, {"Apply", "r1"}}, ""},
		{"none", nil, nil, ""},
		{"extra first", []patchplan.Write{rec, app}, sent("Apply", "Record", "Apply"),
			"writes of fp1: planned [Record Apply], controller sent [Apply Record Apply]: first difference at write 1 (by reconcile: [Apply] [Record Apply])"},
		{"missing last", []patchplan.Write{rec, app}, []sentWrite{{"Record", "r1"}},
			"writes of fp1: planned [Record Apply], controller sent [Record]: first difference at write 2"},
		{"nothing sent", []patchplan.Write{app}, nil,
			"writes of fp1: planned [Apply], controller sent []: first difference at write 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := writesDiff("fp1", tc.planned, tc.sent); got != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestGuarded(t *testing.T) {
	for body, want := range map[string]bool{locked: true, unlocked: false, "": false, `{"metadata":{"finalizers":null}}`: false} {
		if got := guarded([]byte(body)); got != want {
			t.Errorf("guarded(%s) = %v, want %v", body, got, want)
		}
	}
}
