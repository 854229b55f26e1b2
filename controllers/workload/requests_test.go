/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload_test

import (
	"fmt"
	"testing"

	"github.com/fieldops/fieldops/controllers/workload"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/test/testkit"
)

// Issue 11, the same write discipline as FieldPatch, per object of the
// inventory. A ManagedWorkload of two ConfigMaps converges with its
// finalizer, one apply per object, one status write and one event (the
// Applied event of the Ready reason it sets, naming the created
// objects); it reads neither itself from the apiserver nor an object by
// name once its watch holds it. A reconcile with nothing to do, whether
// queued by an annotation of the workload or by a third party's
// annotation on one of its objects, sends no request. A drift of a field
// it owns on one object is repaired with at most 3 requests (the apply of
// that object, a status write, the DriftRepaired event), none for the
// other object, and no field of another manager is lost. After that, the
// counts stay flat.
//
// (It found 2 requests too many per created object: its Created event, an
// Applied event naming them already, and a second read of the object,
// Apply reading again what the reconcile's own read had found absent.
// The one read by name left per created object is the target cache
// confirming an absence live, never answering NotFound from its store.)
func TestRequestsPerManagedWorkload(t *testing.T) {
	t.Parallel()
	ns := kit.Namespace(t, "mw-requests")
	cm := func(name string) string {
		return fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: %s}, data: {k: v}}", name)
	}
	objects := []string{"cm-a", "cm-b"}
	mw := newWorkloadNoWait(t, ns, "pair", cm(objects[0]), cm(objects[1]))
	waitReason(t, mw, workload.ReasonApplied)
	reconciled(t, mw) // whatever was under way has finished
	// Events are sent in the background: wait for the one expected.
	kit.HasEvent(t, ns, "pair", workload.ReasonApplied, "2 created (ConfigMap "+ns+"/cm-a, ConfigMap "+ns+"/cm-b)")

	mwPath := "/namespaces/" + ns + "/managedworkloads/pair"
	paths := map[string]string{"workload": mwPath, "status": mwPath + "/status", "configmaps": "/namespaces/" + ns + "/configmaps"}
	for _, o := range objects {
		paths[o] = "/namespaces/" + ns + "/configmaps/" + o
	}
	counts := func() map[string]int {
		out := map[string]int{}
		for k, p := range paths {
			if n := requests.Writes(p); n > 0 {
				out[k+" writes"] = n
			}
			if n := requests.Reads(p); n > 0 {
				out[k+" reads"] = n
			}
		}
		if n := requests.WritesUnder("/namespaces/" + ns + "/events"); n > 0 {
			out["events"] = n
		}
		return out
	}
	diff := func(before map[string]int) (map[string]int, int) {
		out, total := map[string]int{}, 0
		for k, v := range counts() {
			if d := v - before[k]; d != 0 {
				out[k] = d
				total += d
			}
		}
		return out, total
	}

	converge := counts()
	t.Logf("converge: %v", converge)
	for _, o := range objects {
		if converge[o+" writes"] != 1 {
			t.Errorf("converge: %v, want one apply of %s", converge, o)
		}
		// The object does not exist when the workload first reads it:
		// its watch has nothing, and the target cache confirms an absence
		// live. Once created, it is read from its watch only.
		if converge[o+" reads"] > 1 {
			t.Errorf("converge: %v, want at most one read of %s by name (its absence confirmed)", converge, o)
		}
	}
	// One watch per object (a list and a watch at most each).
	if n := converge["configmaps reads"]; n > 2*len(objects) {
		t.Errorf("converge: %d lists and watches of configmaps, want the objects' own watches", n)
	}
	if converge["workload writes"] != 1 || converge["workload reads"]+converge["status reads"] != 0 {
		t.Errorf("converge: %v, want the finalizer written and no read of the workload", converge)
	}
	if converge["status writes"] != 1 || converge["events"] != 1 {
		t.Errorf("converge: %v, want one status write and one event (Applied)", converge)
	}

	// Steady state: a reconcile with nothing to do sends nothing, whether
	// the workload itself changed (an annotation: same generation) ...
	before := counts()
	st := reconciled(t, mw)
	if d, n := diff(before); n != 0 {
		t.Errorf("a reconcile after convergence sent %v (%s)", d, st.Last)
	}
	// ... or a third party annotated one of its objects (its watch queues
	// the workload).
	st = kit.ReconciledAfter(t, "managedworkload", mw, func() {
		kit.ApplyAs(t, "cost-tool", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cm-b, namespace: %s, annotations: {cost-center: \"4711\"}}}", ns))
	})
	if d, n := diff(before); n != 0 {
		t.Errorf("a reconcile after a third party's annotation sent %v (%s)", d, st.Last)
	}

	// A drift on cm-a (another manager changes a field the workload owns,
	// and adds one of its own): at most 3 requests, nothing for cm-b.
	before = counts()
	kit.ApplyAs(t, "rival", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cm-a, namespace: %s}, data: {k: rival, extra: rival}}", ns))
	testkit.Eventually(t, "drift repaired", func() (bool, string) {
		d := kit.Live(t, ref("v1", "ConfigMap", ns, "cm-a")).Object["data"]
		return fmt.Sprint(d) == "map[extra:rival k:v]", fmt.Sprint(d)
	})
	waitReason(t, mw, workload.ReasonApplied)
	reconciled(t, mw)
	kit.HasEvent(t, ns, "pair", workload.ReasonDriftRepaired, "ConfigMap "+ns+"/cm-a")
	d, n := diff(before)
	t.Logf("drift: %v", d)
	if n > 3 || d["cm-a writes"] != 1 || d["cm-a reads"] != 0 || d["cm-b writes"]+d["cm-b reads"] != 0 || d["events"] != 1 {
		t.Errorf("a drift on cm-a cost %v (%d requests), want the repair of cm-a, its event and at most 3 in all", d, n)
	}

	// Nothing of another manager was lost: the rival keeps its own field,
	// the cost tool its annotation.
	if got := kit.Live(t, ref("v1", "ConfigMap", ns, "cm-b")).GetAnnotations()["cost-center"]; got != "4711" {
		t.Errorf("cm-b lost the cost tool's annotation: %q", got)
	}
	mf, err := ownershipcore.Owners(kit.Live(t, ref("v1", "ConfigMap", ns, "cm-a")))
	if err != nil {
		t.Fatal(err)
	}
	if o := mf.ByPath(); fmt.Sprint(o[".data.extra"]) != "[rival/Apply]" || fmt.Sprint(o[".data.k"]) != fmt.Sprintf("[%s/Apply]", workload.ManagerName(ns, "pair")) {
		t.Errorf("owners of cm-a after the repair: %v", o)
	}

	// No write loop: after the repair, the counts stay flat.
	before = counts()
	st = reconciled(t, mw)
	if d, n := diff(before); n != 0 {
		t.Errorf("a reconcile after the repair sent %v (%s)", d, st.Last)
	}
	if n := requests.WritesUnder("/namespaces/" + ns + "/events"); n != 2 {
		t.Errorf("%d events in all, want 2 (Applied, DriftRepaired)", n)
	}
}
