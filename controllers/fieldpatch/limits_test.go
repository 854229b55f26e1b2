/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fieldops/fieldops/internal/inputlimits"
)

// cpuTime is the CPU time (user and system) this process, which runs the
// manager, has used so far. The apiserver and etcd are other processes.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A FieldPatch nesting 1,000 levels deep is refused before any work on
// field sets (InvalidPatch, with an event), writes nothing to its target,
// and is deleted at once; applying and deleting it costs the manager no
// more CPU than a flat patch of about the same size that is applied and
// handed back, measured in the same test (a 1,000-level patch once cost
// 7.4 CPU-seconds to delete, a flat one milliseconds). Not parallel, so
// that no other test's reconciles are counted.
func TestDeepPatchRefused(t *testing.T) {
	ns := namespace(t, "fp-deep")
	cm := applyAs(t, "helm", fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: %s}, data: {a: "1"}}`, ns))
	const depth = 1000
	deep := `{"metadata":{"annotations":{"a":` + strings.Repeat(`{"a":`, depth) + `"x"` + strings.Repeat(`}`, depth) + `}}}`
	labels := map[string]string{}
	for i := 0; len(labels)*len(`"l100":"x",`) < len(deep); i++ {
		labels[fmt.Sprintf("l%d", i)] = "x"
	}
	flatJSON, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	run := func(name, patch, reason string) time.Duration {
		before := cpuTime(t)
		fp := fieldPatch(t, fmt.Sprintf(`{apiVersion: fieldops.dev/v1alpha1, kind: FieldPatch, metadata: {name: %s, namespace: %s},
		  spec: {target: {apiVersion: v1, kind: ConfigMap, name: settings}, patch: %s}}`, name, ns, patch))
		waitReason(t, fp, reason)
		deleteAndWait(t, fp)
		return cpuTime(t) - before
	}
	flatCPU := run("flat", string(flatJSON), "Applied")
	deepCPU := run("deep", deep, "InvalidPatch")
	hasEvent(t, ns, "deep", "InvalidPatch", fmt.Sprintf("nests more than %d levels deep", inputlimits.MaxDepth))
	for m := range owners(t, cm) {
		if strings.Contains(m, "/deep") {
			t.Errorf("the refused patch's field manager %s holds fields of the target", m)
		}
	}
	t.Logf("CPU: flat patch (%d labels, %d bytes) %v; %d-level patch (%d bytes) %v", len(labels), len(flatJSON), flatCPU, depth, len(deep), deepCPU)
	// A small multiple, with 200ms for what a reconcile always costs.
	if deepCPU > 3*flatCPU+200*time.Millisecond {
		t.Errorf("the %d-level patch cost %v of CPU, the flat one %v", depth, deepCPU, flatCPU)
	}
}
