package fieldpatch_test

import (
	"fmt"
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
func TestRequestsPerFieldPatch(t *testing.T) {
	for _, tc := range []struct {
		name          string
		patch         string
		statusWrites  int
		fieldPatchGET int
	}{
		{"adds a field", `{data: {added: "1"}}`, 1, 0},
		{"takes a field", `{data: {owned: mine}}`, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t, fmt.Sprintf("requests-%d", len(tc.patch)))
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
		})
	}
}
