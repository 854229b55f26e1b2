/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/fieldops/fieldops/metrics"
	"github.com/fieldops/fieldops/ownershipcore"
)

// g. Each kind of bad input gets its own reason in status and an event.
func TestBadInput(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "fp-g")
	applyAs(t, "helm", fmt.Sprintf(hpaDeployment, ns))
	applyAs(t, "helm", fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: %s, labels: {tier: web}}, data: {a: "1", b: "2"}}`, ns))
	for _, tc := range []struct {
		name, target, typ, patch, reason, note string
	}{
		{name: "unknown-kind", target: `{apiVersion: example.com/v1, kind: Widget, name: w}`, patch: `{spec: {}}`, reason: "UnknownKind", note: "not served"},
		{name: "bad-json-patch", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, typ: "JSON", patch: `[{op: frobnicate, path: /spec/replicas}]`, reason: "InvalidPatch", note: "JSON patch"},
		{name: "list-for-apply", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, patch: `[{op: add, path: /x, value: 1}]`, reason: "InvalidPatch", note: "must be an object"},
		{name: "not-in-schema", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, patch: `{spec: {replicaz: 3}}`, reason: "InvalidPatch", note: "replicaz"},
		{name: "cross-namespace", target: `{apiVersion: apps/v1, kind: Deployment, name: web, namespace: kube-system}`, patch: `{spec: {replicas: 2}}`, reason: "CrossNamespaceTarget", note: "own namespace"},
		{name: "targets-fieldpatch", target: `{apiVersion: fieldops.dev/v1alpha1, kind: FieldPatch, name: unknown-kind}`, patch: `{spec: {}}`, reason: "ForbiddenTarget", note: "fieldops"},
		{name: "cluster-scoped", target: `{apiVersion: v1, kind: Namespace, name: default}`, patch: `{metadata: {labels: {a: b}}}`, reason: "InvalidTarget", note: "ClusterFieldPatch"},
		{name: "bad-ignore-path", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, patch: `{spec: {replicas: 2}}`, reason: "InvalidIgnorePath", note: "ignorePaths"},
		{name: "removal", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, typ: "JSON", patch: `[{op: remove, path: /spec/template/metadata/labels/app}]`, reason: "InvalidPatch", note: "removes"},
		{name: "json-move", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, typ: "JSON", patch: `[{op: move, from: /metadata/labels/app, path: /metadata/labels/name}]`, reason: "InvalidPatch", note: "move removes its source /metadata/labels/app"},
		// Issue 15, defect 13: inputs that were silently ignored.
		{name: "apply-status", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, patch: `{status: {replicas: 3}}`, reason: "InvalidPatch", note: "patches of status are not supported"},
		{name: "merge-status", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, typ: "Merge", patch: `{status: {replicas: 3}}`, reason: "InvalidPatch", note: "patches of status are not supported"},
		{name: "smp-status", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, typ: "StrategicMerge", patch: `{status: {replicas: 3}}`, reason: "InvalidPatch", note: "patches of status are not supported"},
		{name: "json-status", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, typ: "JSON", patch: `[{op: replace, path: /status/replicas, value: 3}]`, reason: "InvalidPatch", note: "/status/replicas: patches of status"},
		{name: "json-managedfields", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, typ: "JSON", patch: `[{op: replace, path: /metadata/managedFields, value: []}]`, reason: "InvalidPatch", note: "/metadata/managedFields is the apiserver's record"},
		{name: "json-uid", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, typ: "JSON", patch: `[{op: replace, path: /metadata/uid, value: x}]`, reason: "InvalidPatch", note: "/metadata/uid is set by the apiserver"},
		{name: "json-resourceversion", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, typ: "JSON", patch: `[{op: replace, path: /metadata/resourceVersion, value: "1"}]`, reason: "InvalidPatch", note: "/metadata/resourceVersion is set by the apiserver"},
		{name: "json-creationtimestamp", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, typ: "JSON", patch: `[{op: replace, path: /metadata/creationTimestamp, value: "2020-01-01T00:00:00Z"}]`, reason: "InvalidPatch", note: "/metadata/creationTimestamp is set by the apiserver"},
		{name: "merge-managedfields-null", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, typ: "Merge", patch: `{metadata: {managedFields: null}}`, reason: "InvalidPatch", note: ".metadata.managedFields is the apiserver's record"},
		{name: "merge-metadata-dropped-null", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, typ: "Merge", patch: `{metadata: {}}`, reason: "InvalidPatch", note: ".metadata is an empty object"},
		{name: "empty-apply", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, patch: `{}`, reason: "InvalidPatch", note: "the patch is empty"},
		{name: "empty-merge", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, typ: "Merge", patch: `{}`, reason: "InvalidPatch", note: "the patch is empty"},
		{name: "empty-json", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, typ: "JSON", patch: `[]`, reason: "InvalidPatch", note: "the patch is empty"},
		{name: "identity-only", target: `{apiVersion: apps/v1, kind: Deployment, name: web}`, patch: `{metadata: {name: web}}`, reason: "InvalidPatch", note: "no field besides the target's identity"},
		{name: "merge-data-null", target: `{apiVersion: v1, kind: ConfigMap, name: settings}`, typ: "Merge", patch: `{data: {a: null}}`, reason: "InvalidPatch", note: ".data.a is null: a null asks for the field's removal"},
		// What kubectl apply sends for {data: {a: null}}: the null dropped.
		{name: "merge-data-dropped-null", target: `{apiVersion: v1, kind: ConfigMap, name: settings}`, typ: "Merge", patch: `{data: {}}`, reason: "InvalidPatch", note: ".data is an empty object: an empty object sets no field: a null asks for the field's removal"},
		{name: "apply-label-null", target: `{apiVersion: v1, kind: ConfigMap, name: settings}`, patch: `{metadata: {labels: {tier: null}}}`, reason: "InvalidPatch", note: ".metadata.labels.tier is null"},
		{name: "apply-label-dropped-null", target: `{apiVersion: v1, kind: ConfigMap, name: settings}`, patch: `{metadata: {labels: {}}}`, reason: "InvalidPatch", note: ".metadata.labels is an empty object"},
		{name: "json-null-value", target: `{apiVersion: v1, kind: ConfigMap, name: settings}`, typ: "JSON", patch: `[{op: replace, path: /data/a, value: null}]`, reason: "InvalidPatch", note: "/data/a is null"},
		{name: "json-dropped-null-value", target: `{apiVersion: v1, kind: ConfigMap, name: settings}`, typ: "JSON", patch: `[{op: replace, path: /data/a}]`, reason: "InvalidPatch", note: "the operation has no value"},
		{name: "all-ignored", target: `{apiVersion: v1, kind: ConfigMap, name: settings}`, patch: `{data: {a: "9"}}`, reason: "InvalidPatch", note: "besides its identity once ignorePaths"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			extra := ""
			if tc.typ != "" {
				extra += "\n  type: " + tc.typ
			}
			if tc.name == "bad-ignore-path" {
				extra += "\n  ignorePaths: [spec.replicas]"
			}
			if tc.name == "all-ignored" {
				extra += "\n  ignorePaths: [.data.a]"
			}
			fp := fieldPatch(t, fmt.Sprintf(`
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: %s, namespace: %s}
spec:
  target: %s%s
  patch: %s
`, tc.name, ns, tc.target, extra, tc.patch))
			waitReason(t, fp, tc.reason)
			if c := readyCondition(fp); c.Status != "False" || !strings.Contains(c.Message, tc.note) {
				t.Fatalf("Ready = %s %q, want False mentioning %q", c.Status, c.Message, tc.note)
			}
			hasEvent(t, ns, tc.name, tc.reason, tc.note)
		})
	}
}

// g. A missing target: Ready=False, applied when it appears.
func TestMissingTargetAppliedWhenItAppears(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "fp-g-missing")
	fp := fieldPatch(t, fmt.Sprintf(proxyPatch, "early", ns))
	waitReason(t, fp, "TargetNotFound")
	hasEvent(t, ns, "early", "TargetNotFound", "aws-node")
	applyAs(t, "eks", fmt.Sprintf(daemonSet, ns))
	waitReason(t, fp, "Applied")
}

// g. Names long enough to exceed 128 characters in a manager name.
func TestLongNames(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "fp-long-"+strings.Repeat("n", 55))
	name := strings.Repeat("p", 200)
	applyAs(t, "eks", fmt.Sprintf(daemonSet, ns))
	fp := fieldPatch(t, fmt.Sprintf(proxyPatch, name, ns))
	waitReason(t, fp, "Applied")
	if m := fp.Status.FieldManager; len(m) != ownershipcore.MaxManagerLength || m != ownershipcore.ManagerName("fieldops-fieldpatch", ns, name) {
		t.Fatalf("manager %q (%d characters)", m, len(m))
	}
	deleteAndWait(t, fp)
}

// The other patch types: their changed fields are applied and handed back.
func TestPatchTypes(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "fp-types")
	d := applyAs(t, "helm", fmt.Sprintf(hpaDeployment, ns))
	for _, tc := range []struct{ typ, patch, label string }{
		{"Merge", `{metadata: {labels: {merge: "yes"}}}`, "merge"},
		{"StrategicMerge", `{metadata: {labels: {smp: "yes"}}}`, "smp"},
		{"JSON", `[{op: add, path: /metadata/labels/json, value: "yes"}]`, "json"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			fp := fieldPatch(t, fmt.Sprintf(`
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: %s, namespace: %s}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  type: %s
  patch: %s
`, strings.ToLower(tc.typ), ns, tc.typ, tc.patch))
			waitReason(t, fp, "Applied")
			if got := fp.Status.ManagedFields; len(got) != 1 || got[0] != ".metadata.labels."+tc.label {
				t.Fatalf("managedFields = %v", got)
			}
			// Stable: a second look changes nothing.
			reconciled(t, fp)
			get(t, fp)
			if fp.Status.FieldCount != 1 {
				t.Fatalf("fieldCount = %d after settling", fp.Status.FieldCount)
			}
			deleteAndWait(t, fp)
			if _, ok := live(t, d).GetLabels()[tc.label]; ok {
				t.Fatal("the label the patch added stayed after delete")
			}
		})
	}
}

// e. A manager that retakes a field every second is reported, and our
// writes stay bounded. The suite's contest backoff unit is contestBase, a
// tenth of the production one: the manager retakes the field every fifth
// of a unit (every second in production terms) and the window is 12 units
// (60 s).
func TestContestedFieldBacksOff(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "fp-e")
	d := applyAs(t, "helm", fmt.Sprintf(hpaDeployment, ns))
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: pin, namespace: `+ns+`}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  patch: {spec: {replicas: 4}}
`)
	waitReason(t, fp, "Applied")
	path := "/namespaces/" + ns + "/deployments/web"
	every, window := contestBase/5, 12*contestBase
	// hpa retakes the field every `every` until the checks below are done
	// (a contest that ended before them would report nothing).
	stop, failed := make(chan struct{}), make(chan error, 1)
	defer func() { close(stop); close(failed) }()
	start := requests.Writes(path)
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := 0; ; i++ {
			if err := k8s.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, 10+i%2))), client.FieldOwner("hpa")); err != nil {
				select {
				case failed <- err:
				case <-stop:
				}
				return
			}
			select {
			case <-tick.C:
			case <-stop:
				return
			}
		}
	}()
	select {
	case <-time.After(window): // the window the bound is about
	case err := <-failed:
		t.Fatal(err)
	}
	writes := requests.Writes(path) - start
	if writes > 6 {
		t.Fatalf("%d writes in %v (12 backoff units) against a contesting manager, want at most 6", writes, window)
	}
	if writes < 2 {
		t.Fatalf("%d writes: drift was not repaired at all", writes)
	}
	get(t, fp)
	if c := readyCondition(fp); c.Reason != "Contested" || !strings.Contains(c.Message, `"hpa"`) || fp.Status.ContestedBy != "hpa" {
		t.Fatalf("Ready = %s %q, contestedBy %q; want Contested naming hpa", c.Reason, c.Message, fp.Status.ContestedBy)
	}
	hasEvent(t, ns, "pin", "Contested", "hpa")
	if v := testutil.ToFloat64(metrics.Contested.WithLabelValues(metrics.ControllerFieldPatch, ns, "pin", "hpa")); v != 1 {
		t.Errorf("fieldops_contested = %v, want 1", v)
	}
	// The series goes with the FieldPatch.
	deleteAndWait(t, fp)
	eventually(t, "fieldops_contested series removed", func() (bool, string) {
		for _, m := range gatherContested(t) {
			if m == ns+"/pin" {
				return false, "a series for " + m + " is left"
			}
		}
		return true, ""
	})
}

// gatherContested lists namespace/name of every fieldops_contested series.
func gatherContested(t *testing.T) []string {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		if f.GetName() != "fieldops_contested" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			out = append(out, l["namespace"]+"/"+l["name"])
		}
	}
	return out
}

// Issue 15, defect 15: a patch that can never be applied (duplicate
// list-map keys, a float where an int32 belongs) is InvalidPatch, Stalled,
// and not retried: no error and no requeue until the spec changes. A
// further reconcile (an annotation) costs one apply attempt and then
// nothing more. Defect 9: the message has the path and the types, no Go
// internals and no value.
func TestUnappliablePatchIsTerminal(t *testing.T) {
	ns := namespace(t, "fp-terminal")
	applyAs(t, "helm", fmt.Sprintf(hpaDeployment, ns))
	target := "/namespaces/" + ns + "/deployments/web"
	failed := metrics.ApplyTotal.WithLabelValues(metrics.ControllerFieldPatch, "Deployment", metrics.ActionFailed)
	for _, tc := range []struct {
		name, patch, note string
		// sends is how many requests each reconcile sends to the target:
		// none when the local field manager refuses the intent, one
		// (refused by the apiserver) when only the apiserver can tell.
		sends int
	}{
		{"duplicate-env", `{spec: {template: {spec: {containers: [{name: app, env: [{name: DUP, value: s3cr3t-one}, {name: DUP, value: s3cr3t-two}]}]}}}}`,
			`.spec.template.spec.containers[name="app"].env: duplicate entries for key [name="DUP"]`, 0},
		{"float-replicas", `{spec: {replicas: 1.5}}`, "expected int32, got number", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fp := fieldPatch(t, fmt.Sprintf(`
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: %s, namespace: %s}
spec:
  target: {apiVersion: apps/v1, kind: Deployment, name: web}
  patch: %s
`, tc.name, ns, tc.patch))
			waitReason(t, fp, "InvalidPatch")
			c := readyCondition(fp)
			if c.Status != "False" || !strings.Contains(c.Message, tc.note) {
				t.Fatalf("Ready = %s %q, want False saying %q", c.Status, c.Message, tc.note)
			}
			for _, leak := range []string{"s3cr3t", "1.5", "value.valueUnstructured", "&{", "float64"} {
				if strings.Contains(c.Message, leak) {
					t.Errorf("message %q leaks %q", c.Message, leak)
				}
			}
			if s := meta.FindStatusCondition(fp.Status.Conditions, "Stalled"); s == nil || s.Status != "True" {
				t.Errorf("Stalled = %+v, want True", s)
			}
			hasEvent(t, ns, tc.name, "InvalidPatch", tc.note)

			// Settled: no retry. (The first reconciles are more than one:
			// the target watch starts and lists.) A reconcile after a
			// nudge has finished and none is running: every attempt so
			// far is counted, and no reconcile asked to run again (no
			// error that is retried, no requeue), so nothing comes back
			// by itself.
			reconciled(t, fp)
			settled := kit.Reconciles.Idle(t, "fieldpatch", fp)
			if settled.Retries != 0 {
				t.Errorf("%d reconciles asked for a retry after InvalidPatch, want none (last: %s)", settled.Retries, settled.Last)
			}
			attempts, writes := testutil.ToFloat64(failed), requests.Writes(target)
			// One more reconcile, one more attempt, then quiet again:
			// exactly one attempt (tc.sends writes) per reconcile since
			// (the nudge's, and any the target watch queued late), and
			// still no retry.
			reconciled(t, fp)
			after := kit.Reconciles.Idle(t, "fieldpatch", fp)
			n := after.Finished - settled.Finished
			if got := testutil.ToFloat64(failed) - attempts; got != float64(n) {
				t.Errorf("%v failed applies in %d reconcile(s) after the annotation, want %d (one each, no retry)", got, n, n)
			}
			if got := requests.Writes(target) - writes; got != tc.sends*n {
				t.Errorf("%d writes to the target in %d reconcile(s) after the annotation, want %d", got, n, tc.sends*n)
			}
			if after.Retries != 0 {
				t.Errorf("%d reconciles asked for a retry, want none (last: %s)", after.Retries, after.Last)
			}
			deleteAndWait(t, fp)
		})
	}
}

// Issue 15, defect 15: a failure whose message is over the 1 kB an event
// note may have (300 conflicting fields) is still reported as an event,
// its note truncated; the condition keeps the whole message.
func TestHugeFailureStillProducesEvent(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "fp-huge")
	var theirs, ours strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&theirs, "  key-%03d: theirs\n", i)
		fmt.Fprintf(&ours, "key-%03d: ours, ", i)
	}
	applyAs(t, "other", fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: %s}\ndata:\n%s", ns, theirs.String()))
	fp := fieldPatch(t, fmt.Sprintf(`
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: huge, namespace: %s}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: big}
  conflictPolicy: Fail
  patch: {data: {%s}}
`, ns, strings.TrimSuffix(ours.String(), ", ")))
	waitReason(t, fp, "Conflict")
	if c := readyCondition(fp); !strings.Contains(c.Message, "300 conflict(s)") || !strings.Contains(c.Message, ".data.key-299") {
		t.Errorf("Ready message (%d bytes) does not list the 300 conflicts: %.200q", len(c.Message), c.Message)
	}
	hasEvent(t, ns, "huge", "Conflict", "300 conflict(s)")
	var l eventsv1.EventList
	if err := k8s.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Items {
		if e.Regarding.Name == "huge" && e.Reason == "Conflict" && (len(e.Note) > 1024 || !strings.HasSuffix(e.Note, "(truncated)")) {
			t.Errorf("note of %d bytes, want at most 1024 ending in the truncation marker: %q", len(e.Note), e.Note)
		}
	}
	deleteAndWait(t, fp)
}
