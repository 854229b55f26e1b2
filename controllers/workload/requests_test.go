package workload_test

import (
	"fmt"
	"testing"

	"github.com/fieldops/fieldops/controllers/workload"
	"github.com/fieldops/fieldops/test/testkit"
)

// Issue 11, the same write discipline as FieldPatch: a ManagedWorkload
// of two ConfigMaps converges with one apply per object and its finalizer
// and status writes; a reconcile with nothing to do sends no request; a
// drift on one object is repaired with at most 3 requests (the apply of
// that object, a status write, one event), none for the other object.
// (It found two writes too many: a reconcile that changed nothing flipped
// the entry's action back to Unchanged, and a contest's recheck of the
// repair set Ready to Migrated; and an Applied event next to
// DriftRepaired.)
func TestRequestsPerManagedWorkload(t *testing.T) {
	t.Parallel()
	ns := kit.Namespace(t, "mw-requests")
	cm := func(name string) string {
		return fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: %s}, data: {k: v}}", name)
	}
	mw := newWorkloadNoWait(t, ns, "pair", cm("cm-a"), cm("cm-b"))
	waitReason(t, mw, workload.ReasonApplied)
	reconciled(t, mw) // whatever was under way has finished
	mwPath := "/namespaces/" + ns + "/managedworkloads/pair"
	paths := map[string]string{
		"workload": mwPath, "status": mwPath + "/status",
		"cm-a": "/namespaces/" + ns + "/configmaps/cm-a", "cm-b": "/namespaces/" + ns + "/configmaps/cm-b",
		"events": "/namespaces/" + ns + "/events",
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
	if converge["cm-a writes"] != 1 || converge["cm-b writes"] != 1 {
		t.Errorf("converge: %v, want one apply of each object", converge)
	}
	// Reads by name: an object the workload creates is absent from its
	// watch until the watch sees it, and an absence is always confirmed
	// live (never a NotFound from a cache): at most 2 per created object.
	if converge["cm-a reads"] > 2 || converge["cm-b reads"] > 2 {
		t.Errorf("converge: %v, want at most 2 reads of a created object by name", converge)
	}
	if converge["workload writes"] > 1 || converge["workload reads"] > 0 {
		t.Errorf("converge: %v, want at most the finalizer written and no read of the workload", converge)
	}

	// Steady state: a reconcile with nothing to do sends nothing.
	before := counts()
	st := reconciled(t, mw)
	if d, n := diff(before); n != 0 {
		t.Errorf("a reconcile after convergence sent %v (%s)", d, st.Last)
	}

	// A drift on cm-a: at most 3 requests, nothing for cm-b.
	before = counts()
	kit.ApplyAs(t, "rival", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: cm-a, namespace: %s}, data: {k: rival}}", ns))
	testkit.Eventually(t, "drift repaired", func() (bool, string) {
		d := kit.Live(t, ref("v1", "ConfigMap", ns, "cm-a")).Object["data"]
		return fmt.Sprint(d) == "map[k:v]", fmt.Sprint(d)
	})
	waitReason(t, mw, workload.ReasonApplied)
	reconciled(t, mw)
	d, n := diff(before)
	t.Logf("drift: %v", d)
	if n > 3 || d["cm-a writes"] != 1 || d["cm-b writes"]+d["cm-b reads"] != 0 {
		t.Errorf("a drift on cm-a cost %v (%d requests), want the repair of cm-a and at most 3 in all", d, n)
	}
}
