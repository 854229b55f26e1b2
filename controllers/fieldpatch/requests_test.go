/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"fmt"
	"strings"
	"testing"
)

// Issue 11: what a new FieldPatch costs the apiserver. One that adds a
// field (it takes nothing from another manager) converges with the
// finalizer, one apply and one status write (the record of previous owners
// goes with it), reads its target only through that target's own watch
// (one list, one watch), and never reads the FieldPatch itself from the
// apiserver. One that takes a field from another manager also writes the
// record before the apply (a crash between the two must not lose it): one
// fresh read and one status write more.
//
// Deletion: one write of the target, guarded, from the cached copy: the
// empty apply when only added fields go, one patch of its managed fields
// and values when fields go back too (GiveBackFrom); then the finalizer
// and one event: 3 requests.
func TestRequestsPerFieldPatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		patch         string
		statusWrites  int
		fieldPatchGET int
		// on deletion
		targetWrites, targetReads int
	}{
		{"adds a field", `{data: {added: "1"}}`, 1, 0, 1, 0},
		{"takes a field", `{data: {owned: mine}}`, 2, 1, 1, 0},
		{"takes one and adds one", `{data: {owned: mine, added: "1"}}`, 2, 1, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t, "requests-"+strings.ReplaceAll(tc.name, " ", "-"))
			applyAs(t, "helm", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: %s}, data: {owned: helm}}", ns))
			fpPath := "/namespaces/" + ns + "/fieldpatches/p"
			target := "/namespaces/" + ns + "/configmaps/cfg"
			fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: p, namespace: `+ns+`}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: cfg}
  patch: `+tc.patch+`
`)
			waitReason(t, fp, "Applied")
			// The second reconcile (our own write to the target, seen by its
			// watch) runs against the status just written: wait until the
			// status is the last write, then count.
			hasEvent(t, ns, "p", "Applied", "ConfigMap")
			if n := requests.Writes(fpPath); n != 1 {
				t.Errorf("%d writes of the FieldPatch (finalizer), want 1", n)
			}
			if n := requests.Writes(fpPath + "/status"); n != tc.statusWrites {
				t.Errorf("%d status writes, want %d", n, tc.statusWrites)
			}
			if n := requests.Writes(target); n != 1 {
				t.Errorf("%d writes of the target, want 1 apply", n)
			}
			if n := requests.Reads(fpPath) + requests.Reads(fpPath+"/status"); n != tc.fieldPatchGET {
				t.Errorf("%d reads of the FieldPatch from the apiserver, want %d", n, tc.fieldPatchGET)
			}
			if n := requests.Reads(target); n != 0 {
				t.Errorf("%d GETs of the target by name, want 0 (read from its watch)", n)
			}
			if n := requests.Reads("/namespaces/" + ns + "/configmaps"); n > 2 {
				t.Errorf("%d lists and watches of configmaps, want the target's own list and watch", n)
			}

			writes, reads, events := requests.Writes(target), requests.Reads(target), requests.Writes("/namespaces/"+ns+"/events")
			fpWrites := requests.Writes(fpPath) + requests.Writes(fpPath+"/status")
			deleteAndWait(t, fp)
			// Issue 11: 3 requests per FieldPatch to give back (its target
			// write, the finalizer, the event), also when fields go back and
			// added fields go (one guarded patch sets the handed-back
			// managed fields and removes the added values), and a read only
			// when the cache was behind.
			total := requests.Writes(target) - writes + requests.Reads(target) - reads +
				requests.Writes("/namespaces/"+ns+"/events") - events +
				requests.Writes(fpPath) + requests.Writes(fpPath+"/status") - fpWrites
			if want := 2 + tc.targetWrites; total > want {
				t.Errorf("deletion: %d requests in all, want at most %d", total, want)
			}
			if n := requests.Writes(target) - writes; n != tc.targetWrites {
				t.Errorf("deletion: %d writes of the target, want %d", n, tc.targetWrites)
			}
			// A fresh read only when the cache had not seen our apply yet;
			// never more than one.
			if n := requests.Reads(target) - reads; n > 1 || n < tc.targetReads {
				t.Errorf("deletion: %d reads of the target, want %d (at most 1)", n, tc.targetReads)
			}
			if n := requests.Writes("/namespaces/"+ns+"/events") - events; n > 1 {
				t.Errorf("deletion: %d events, want one", n)
			}
			if n := requests.Writes(fpPath); n != 2 {
				t.Errorf("%d writes of the FieldPatch in all, want 2 (the finalizer added, then removed)", n)
			}
			o := owners(t, live(t, obj(t, fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: %s}}", ns))))
			if fmt.Sprint(o) != "map[.data.owned:[helm/Apply]]" {
				t.Errorf("owners after deletion %v, want helm's field back with helm and nothing else", o)
			}
		})
	}
}

// What a repair costs: another manager forces a patched field back and
// the patch forces it again. Its record already holds that manager, so
// no record is written, but it is read fresh before the forced write (a
// forced apply is never gated by a cached record alone): one read of the
// FieldPatch, one apply, one status write (found by review: the plan's
// first version skipped the read).
func TestRequestsOfARepair(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "requests-repair")
	cm := fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: %s}, data: {owned: %s}}", ns, "%s")
	applyAs(t, "helm", fmt.Sprintf(cm, "helm"))
	fpPath, target := "/namespaces/"+ns+"/fieldpatches/p", "/namespaces/"+ns+"/configmaps/cfg"
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: p, namespace: `+ns+`}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: cfg}
  patch: {data: {owned: mine}}
`)
	waitReason(t, fp, "Applied")
	hasEvent(t, ns, "p", "Applied", "ConfigMap")
	reconciled(t, fp)
	reads, statusWrites, targetWrites := requests.Reads(fpPath)+requests.Reads(fpPath+"/status"), requests.Writes(fpPath+"/status"), requests.Writes(target)

	applyAs(t, "helm", fmt.Sprintf(cm, "helm2")) // with force: drift
	hasEvent(t, ns, "p", "DriftRepaired", "helm")
	reconciled(t, fp)
	if n := requests.Reads(fpPath) + requests.Reads(fpPath+"/status") - reads; n != 1 {
		t.Errorf("repair: %d reads of the FieldPatch, want 1 (the record, read fresh before the forced write)", n)
	}
	if n := requests.Writes(fpPath+"/status") - statusWrites; n != 1 {
		t.Errorf("repair: %d status writes, want 1 (the record is unchanged)", n)
	}
	if n := requests.Writes(target) - targetWrites; n != 1 {
		t.Errorf("repair: %d writes of the target, want 1 apply", n)
	}
}
