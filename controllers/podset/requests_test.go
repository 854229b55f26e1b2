package podset_test

import (
	"fmt"
	"testing"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/podset"
	"github.com/fieldops/fieldops/test/testkit"
)

// Issue 11, the same write discipline as FieldPatch: once a PodSet's pods
// are Ready, a reconcile with nothing to do sends no request; a label
// change in the template costs one patch per pod (in place) and nothing
// else of the pods; a drift of a label the PodSet owns on one pod is
// repaired with at most 3 requests (that pod's patch, a status write, an
// event), none for the other pods.
func TestRequestsPerPodSet(t *testing.T) {
	ns := kit.Namespace(t, "podset-requests")
	ps := newPodSet(t, ns, "web", 3, "nginx:1.27", map[string]string{"tier": "front"})
	waitPods(t, ps, ordinals("web", 3)...)
	waitReason(t, ps, podset.ReasonReady)
	reconciled(t, ps)
	podsPath := "/namespaces/" + ns + "/pods"
	psPath := "/namespaces/" + ns + "/podsets/web"
	snapshot := func() map[string]int {
		out := map[string]int{
			"pod creates":   requests.Writes(podsPath),
			"podset writes": requests.Writes(psPath),
			"status writes": requests.Writes(psPath + "/status"),
			"events":        requests.Writes("/namespaces/" + ns + "/events"),
		}
		for _, n := range ordinals("web", 3) {
			out[n+" writes"] = requests.Writes(podsPath + "/" + n)
			out[n+" reads"] = requests.Reads(podsPath + "/" + n)
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

	before := snapshot()
	st := reconciled(t, ps)
	if d, n := diff(before); n != 0 {
		t.Errorf("a reconcile of a converged PodSet sent %v (%s)", d, st.Last)
	}

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
	d, _ := diff(before)
	t.Logf("label change: %v", d)
	for _, n := range ordinals("web", 3) {
		if d[n+" writes"] != 1 || d[n+" reads"] != 0 {
			t.Errorf("label change: %v, want one patch of %s and no read", d, n)
		}
	}
	if d["pod creates"] != 0 {
		t.Errorf("label change: %v, want no pod created", d)
	}

	before = snapshot()
	kit.ApplyAs(t, "rival", fmt.Sprintf("{apiVersion: v1, kind: Pod, metadata: {name: web-1, namespace: %s, labels: {tier: other}}}", ns))
	testkit.Eventually(t, "label repaired", func() (bool, string) {
		l := pods(t, ps)["web-1"].Labels
		return l["tier"] == "edge", fmt.Sprint(l)
	})
	waitReason(t, ps, podset.ReasonReady)
	reconciled(t, ps)
	d, n := diff(before)
	t.Logf("drift: %v", d)
	if n > 3 || d["web-1 writes"] != 1 || d["web-0 writes"]+d["web-2 writes"] != 0 {
		t.Errorf("a drift on web-1 cost %v (%d requests), want its repair and at most 3 in all", d, n)
	}
}

func reconciled(t testing.TB, ps *v1alpha1.PodSet) testkit.ReconcileStats {
	t.Helper()
	return kit.Reconciled(t, "podset", ps)
}
