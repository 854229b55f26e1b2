/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package podset_test

import (
	"fmt"
	"testing"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/podset"
	"github.com/fieldops/fieldops/test/testkit"
)

// Issue 11, the same write discipline as FieldPatch. A new PodSet of 3
// pods converges with one server-side dry run of its template, one apply
// per pod (no read of a pod by name), no write of the PodSet itself (no
// finalizer), one event (Created, naming the pods) and its status writes:
// one, plus one per change of the ready count that kwok reports. Once its
// pods are Ready, a reconcile with nothing to do sends no request, whether
// queued by an annotation of the PodSet or by a third party's annotation
// on a pod. A label change in the template costs one in-place patch per
// pod, one status write and one event (UpdatedInPlace, naming the pods).
// A drift of a label the PodSet owns on one pod is repaired with at most
// 3 requests (that pod's patch, its event, a status write if any), none
// for the other pods; no label or annotation of another manager is lost,
// and after that the counts stay flat.
//
// (It found: the drift never repaired, Apply deciding on a second,
// unstructured informer of pods that had not seen the change yet; one
// event per pod created or updated in place; and a dry run of the
// template on the first reconcile of each PodSet after a restart of the
// manager, with nothing to write.)
func TestRequestsPerPodSet(t *testing.T) {
	ns := kit.Namespace(t, "podset-requests")
	podNames := ordinals("web", 3)
	podsPath := "/namespaces/" + ns + "/pods"
	psPath := "/namespaces/" + ns + "/podsets/web"
	snapshot := func() map[string]int {
		out := map[string]int{
			"dry runs":      requests.Writes(podsPath), // POST …/pods?dryRun=All; pods are created by apply
			"podset writes": requests.Writes(psPath),
			"podset reads":  requests.Reads(psPath) + requests.Reads(psPath+"/status"),
			"status writes": requests.Writes(psPath + "/status"),
			"events":        requests.WritesUnder("/namespaces/" + ns + "/events"),
		}
		for _, n := range podNames {
			out[n+" writes"] = requests.Writes(podsPath + "/" + n)
			out[n+" reads"] = requests.Reads(podsPath + "/" + n)
		}
		for k, v := range out {
			if v == 0 {
				delete(out, k)
			}
		}
		return out
	}
	diff := func(before map[string]int) (map[string]int, int) {
		out, total := map[string]int{}, 0
		for k, v := range snapshot() {
			if d := v - before[k]; d != 0 {
				out[k] = d
				total += d
			}
		}
		return out, total
	}

	ps := newPodSet(t, ns, "web", 3, "nginx:1.27", map[string]string{"tier": "front"})
	waitPods(t, ps, podNames...)
	waitReason(t, ps, podset.ReasonReady)
	reconciled(t, ps)
	kit.HasEvent(t, ns, "web", podset.ReasonCreated, "created pods web-0, web-1, web-2 at revision")
	converge := snapshot()
	t.Logf("converge: %v", converge)
	for _, n := range podNames {
		if converge[n+" writes"] != 1 || converge[n+" reads"] != 0 {
			t.Errorf("converge: %v, want one apply of %s and no read", converge, n)
		}
	}
	if converge["dry runs"] != 1 || converge["podset writes"]+converge["podset reads"] != 0 || converge["events"] != 1 {
		t.Errorf("converge: %v, want one dry run, one event, and no write or read of the PodSet itself", converge)
	}
	// The ready count is reported as kwok makes each pod Ready: a status
	// write each time it changes, never more.
	if n := converge["status writes"]; n < 1 || n > 1+len(podNames) {
		t.Errorf("converge: %d status writes, want one, plus at most one per pod turning Ready", n)
	}

	// Steady state: nothing to do, nothing sent, whether the PodSet itself
	// changed (an annotation: same generation) ...
	before := snapshot()
	st := reconciled(t, ps)
	if d, n := diff(before); n != 0 {
		t.Errorf("a reconcile of a converged PodSet sent %v (%s)", d, st.Last)
	}
	// ... or a third party annotated one of its pods.
	st = kit.ReconciledAfter(t, "podset", ps, func() {
		kit.ApplyAs(t, "cost-tool", fmt.Sprintf("{apiVersion: v1, kind: Pod, metadata: {name: web-0, namespace: %s, annotations: {cost-center: \"4711\"}}}", ns))
	})
	if d, n := diff(before); n != 0 {
		t.Errorf("a reconcile after a third party's annotation sent %v (%s)", d, st.Last)
	}

	// A label change in the template: applied in place, one patch per pod.
	before = snapshot()
	update(t, ps, func(ps *v1alpha1.PodSet) { ps.Spec.Template.Metadata.Labels["tier"] = "edge" })
	testkit.Eventually(t, "label on every pod", func() (bool, string) {
		for _, p := range pods(t, ps) {
			if p.Labels["tier"] != "edge" {
				return false, p.Name
			}
		}
		return true, ""
	})
	waitReason(t, ps, podset.ReasonReady)
	reconciled(t, ps)
	kit.HasEvent(t, ns, "web", podset.ReasonUpdatedInPlace, "to pods web-0, web-1, web-2 in place")
	d, _ := diff(before)
	t.Logf("label change: %v", d)
	for _, n := range podNames {
		if d[n+" writes"] != 1 || d[n+" reads"] != 0 {
			t.Errorf("label change: %v, want one patch of %s and no read", d, n)
		}
	}
	if d["dry runs"] != 0 || d["status writes"] != 1 || d["events"] != 1 || d["podset writes"] != 0 {
		t.Errorf("label change: %v, want no pod created, one status write and one event", d)
	}

	// A drift of a label the PodSet owns on web-1 (the rival also adds a
	// label of its own).
	before = snapshot()
	kit.ApplyAs(t, "rival", fmt.Sprintf("{apiVersion: v1, kind: Pod, metadata: {name: web-1, namespace: %s, labels: {tier: other, rival: \"yes\"}}}", ns))
	testkit.Eventually(t, "label repaired", func() (bool, string) {
		l := pods(t, ps)["web-1"].Labels
		return l["tier"] == "edge", fmt.Sprint(l)
	})
	waitReason(t, ps, podset.ReasonReady)
	reconciled(t, ps)
	kit.HasEvent(t, ns, "web", podset.ReasonUpdatedInPlace, "to pod web-1 in place")
	d, n := diff(before)
	t.Logf("drift: %v", d)
	if n > 3 || d["web-1 writes"] != 1 || d["web-0 writes"]+d["web-2 writes"] != 0 || d["events"] != 1 {
		t.Errorf("a drift on web-1 cost %v (%d requests), want its repair, one event and at most 3 in all", d, n)
	}
	after := pods(t, ps)
	if after["web-1"].Labels["rival"] != "yes" || after["web-0"].Annotations["cost-center"] != "4711" {
		t.Errorf("a label or annotation of another manager was lost: web-0 %v, web-1 %v", after["web-0"].Annotations, after["web-1"].Labels)
	}

	// No write loop: after the repair, the counts stay flat.
	before = snapshot()
	st = reconciled(t, ps)
	if d, n := diff(before); n != 0 {
		t.Errorf("a reconcile after the repair sent %v (%s)", d, st.Last)
	}
	if n := snapshot()["events"]; n != 3 {
		t.Errorf("%d events in all, want 3 (Created, UpdatedInPlace twice)", n)
	}
}

func reconciled(t testing.TB, ps *v1alpha1.PodSet) testkit.ReconcileStats {
	t.Helper()
	return kit.Reconciled(t, "podset", ps)
}
