/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

// configMap is an empty ConfigMap naming ns/name, for live.
func configMap(t testing.TB, ns, name string) *unstructured.Unstructured {
	t.Helper()
	return obj(t, fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: %s}}", name, ns))
}

// helmConfigMaps applies ConfigMaps names as field manager helm, labelled
// proxy=<label>, with a field of helm's own, and returns their owners
// (path → managers) as helm left them.
func helmConfigMaps(t *testing.T, ns, label string, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Add(1)
		go func(n string) {
			defer wg.Done()
			u := applyAs(t, "helm", fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: %s, labels: {proxy: %q}}, data: {owned: helm}}", n, ns, label))
			o := fmt.Sprint(owners(t, live(t, u)))
			mu.Lock()
			out[n] = o
			mu.Unlock()
		}(n)
	}
	wg.Wait()
	return out
}

func names(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%02d", prefix, i))
	}
	return out
}

// waitTargets waits until the selector patch reports matched and applied.
func waitTargets(t *testing.T, fp v1alpha1.Patcher, matched, applied int32) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s: %d matched, %d applied", fp.GetName(), matched, applied), func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fp), fp); err != nil {
			return false, err.Error()
		}
		ts := fp.PatchStatus().Targets
		if ts == nil {
			return false, "no status.targets; Ready: " + readyCondition(fp).Message
		}
		return ts.Matched == matched && ts.Applied == applied && readyCondition(fp).Reason == "Applied",
			fmt.Sprintf("%d matched, %d applied, Ready %s: %s", ts.Matched, ts.Applied, readyCondition(fp).Reason, readyCondition(fp).Message)
	})
}

// Issue 31: one selector patch over 60 ConfigMaps labelled proxy=yes
// patches all of them, and the 10 created later; 5 relabelled get their
// fields back exactly; deleting the patch leaves every ConfigMap's
// managed fields as they were, with no entry of fieldops.
func TestSelectorPatchesEveryMatch(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "sel-proxy")
	before := helmConfigMaps(t, ns, "yes", names("cm", 0, 60)...)
	for k, v := range helmConfigMaps(t, ns, "no", "other") {
		before[k] = v
	}
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: proxy, namespace: `+ns+`}
spec:
  targetSelector:
    apiVersion: v1
    kind: ConfigMap
    labelSelector: {matchLabels: {proxy: "yes"}}
  patch: {data: {proxy: "http://proxy:3128", owned: fieldops}}
`)
	waitTargets(t, fp, 60, 60)
	manager := "fieldops-fieldpatch/" + ns + "/proxy"
	patched := func(name string) string {
		u := live(t, configMap(t, ns, name))
		p, _, _ := unstructured.NestedString(u.Object, "data", "proxy")
		o, _, _ := unstructured.NestedString(u.Object, "data", "owned")
		return fmt.Sprintf("%s %s %v", p, o, owners(t, u)[".data.proxy"])
	}
	want := fmt.Sprintf("http://proxy:3128 fieldops [%s/Apply]", manager)
	for _, n := range names("cm", 0, 60) {
		if got := patched(n); got != want {
			t.Fatalf("%s: %q, want %q", n, got, want)
		}
	}
	if got := patched("other"); got != " helm []" {
		t.Errorf("unlabelled ConfigMap: %q, want it untouched", got)
	}
	if fp.Status.Targets == nil || len(fp.Status.Targets.Records) != 60 || len(fp.Status.Targets.Ledgers) != 1 {
		t.Fatalf("records %+v, want 60 records sharing one record of previous owners", fp.Status.Targets)
	}
	if l := fp.Status.Targets.Ledgers[0]; len(l.PreviousOwners) != 1 || l.PreviousOwners[0].Manager != "helm" {
		t.Errorf("previous owners %+v, want helm's .data.owned", l.PreviousOwners)
	}
	hasEvent(t, ns, "proxy", "Applied", "60 targets")

	// Created later: patched from the watch.
	for k, v := range helmConfigMaps(t, ns, "yes", names("late", 0, 10)...) {
		before[k] = v
	}
	waitTargets(t, fp, 70, 70)
	for _, n := range names("late", 0, 10) {
		if got := patched(n); got != want {
			t.Fatalf("%s: %q, want %q", n, got, want)
		}
	}

	// Relabelled (as kubectl label does, by another field manager):
	// handed back exactly, the label aside.
	relabelled := names("cm", 0, 5)
	for _, n := range relabelled {
		if err := k8s.Patch(context.Background(), configMap(t, ns, n), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"proxy":"no"}}}`)), client.FieldOwner("kubectl-label")); err != nil {
			t.Fatal(err)
		}
		before[n] = strings.Replace(before[n], ".metadata.labels.proxy:[helm/Apply]", ".metadata.labels.proxy:[kubectl-label/Update]", 1)
	}
	waitTargets(t, fp, 65, 65)
	for _, n := range relabelled {
		u := live(t, configMap(t, ns, n))
		if got := fmt.Sprint(owners(t, u)); got != before[n] {
			t.Errorf("%s relabelled: owners %s, want %s", n, got, before[n])
		}
		if _, found, _ := unstructured.NestedString(u.Object, "data", "proxy"); found {
			t.Errorf("%s relabelled: the added field stays", n)
		}
	}
	hasEvent(t, ns, "proxy", "HandedBack", "back to their previous owners")

	// Deleted: every ConfigMap as before.
	deleteAndWait(t, fp)
	for n, o := range before {
		u := live(t, configMap(t, ns, n))
		if got := fmt.Sprint(owners(t, u)); got != o {
			t.Errorf("%s after deletion: owners %s, want %s", n, got, o)
		}
		if strings.Contains(fmt.Sprint(u.GetManagedFields()), "fieldops") {
			t.Errorf("%s after deletion: a fieldops entry is left", n)
		}
	}
}

// Issue 31: what a selector patch costs the apiserver, counted. Adding a
// field to N targets: one apply per target, the finalizer, at most three
// status writes (waiting for the watch, the records of new targets saved
// before their first write, the result), no read of the patch and no GET
// of a target (they come
// from the patch's watch: one list and one watch). Taking a field from
// another manager adds one fresh read of the patch and one status write
// (every target's record of previous owners, before the forced applies),
// never one per target. Quiet: no request at all.
func TestSelectorRequests(t *testing.T) {
	t.Parallel()
	const n = 20
	for _, tc := range []struct {
		name                     string
		patch                    string
		statusWrites, patchReads int
	}{
		{"adds a field", `{data: {added: "1"}}`, 2, 0},
		{"takes a field", `{data: {owned: mine}}`, 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t, "sel-requests-"+strings.ReplaceAll(tc.name, " ", "-"))
			helmConfigMaps(t, ns, "yes", names("cm", 0, n)...)
			fpPath := "/namespaces/" + ns + "/fieldpatches/p"
			fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: p, namespace: `+ns+`}
spec:
  targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {proxy: "yes"}}}
  patch: `+tc.patch+`
`)
			waitTargets(t, fp, n, n)
			hasEvent(t, ns, "p", "Applied", fmt.Sprintf("%d targets", n))
			for _, c := range names("cm", 0, n) {
				if w := requests.Writes("/namespaces/" + ns + "/configmaps/" + c); w != 1 {
					t.Errorf("%s: %d writes, want 1 apply", c, w)
				}
				if r := requests.Reads("/namespaces/" + ns + "/configmaps/" + c); r != 0 {
					t.Errorf("%s: %d GETs, want 0 (read from the watch)", c, r)
				}
			}
			if w := requests.Writes(fpPath); w != 1 {
				t.Errorf("%d writes of the FieldPatch, want 1 (the finalizer)", w)
			}
			if w := requests.Writes(fpPath + "/status"); w > tc.statusWrites+1 {
				t.Errorf("%d status writes, want at most %d", w, tc.statusWrites+1)
			}
			if r := requests.Reads(fpPath) + requests.Reads(fpPath+"/status"); r != tc.patchReads {
				t.Errorf("%d reads of the FieldPatch, want %d", r, tc.patchReads)
			}
			if r := requests.Reads("/namespaces/" + ns + "/configmaps"); r > 2 {
				t.Errorf("%d lists and watches of configmaps, want one list and one watch", r)
			}
			// Quiet: a reconcile costs nothing.
			writes := requests.WritesUnder("/namespaces/" + ns)
			reads := requests.Reads("/namespaces/"+ns+"/configmaps") + requests.Reads(fpPath)
			reconciled(t, fp)
			if w := requests.WritesUnder("/namespaces/"+ns) - writes; w != 0 {
				t.Errorf("a quiet reconcile wrote %d times, want 0", w)
			}
			if r := requests.Reads("/namespaces/"+ns+"/configmaps") + requests.Reads(fpPath) - reads; r != 0 {
				t.Errorf("a quiet reconcile read %d times, want 0", r)
			}
			// Deletion: one guarded write per target, read from the watch,
			// one event and the finalizer.
			cmWrites, cmReads := 0, 0
			for _, c := range names("cm", 0, n) {
				cmWrites += requests.Writes("/namespaces/" + ns + "/configmaps/" + c)
				cmReads += requests.Reads("/namespaces/" + ns + "/configmaps/" + c)
			}
			eventWrites := requests.WritesUnder("/namespaces/" + ns + "/events")
			deleteAndWait(t, fp)
			afterWrites, afterReads := 0, 0
			for _, c := range names("cm", 0, n) {
				afterWrites += requests.Writes("/namespaces/" + ns + "/configmaps/" + c)
				afterReads += requests.Reads("/namespaces/" + ns + "/configmaps/" + c)
			}
			if w := afterWrites - cmWrites; w != n {
				t.Errorf("deletion: %d writes of the %d targets, want one each", w, n)
			}
			if r := afterReads - cmReads; r != 0 {
				t.Errorf("deletion: %d reads of the targets, want 0 (read from the watch)", r)
			}
			if e := requests.WritesUnder("/namespaces/"+ns+"/events") - eventWrites; e > 1 {
				t.Errorf("deletion: %d events, want one", e)
			}
		})
	}
}

// Issue 31: a per-object FieldPatch and a selector patch on the same
// field of one object do not fight: the one that took the field last
// holds it, the other reports the contest naming it, and nothing is
// written again.
func TestSelectorAndPerObjectPatchDoNotFight(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "sel-contest")
	helmConfigMaps(t, ns, "yes", "a", "b")
	sel := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: sel, namespace: `+ns+`}
spec:
  targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {proxy: "yes"}}}
  patch: {data: {proxy: selector}}
`)
	waitTargets(t, sel, 2, 2)
	one := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: one, namespace: `+ns+`}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: a}
  patch: {data: {proxy: single}}
`)
	waitReason(t, one, "Applied")
	eventually(t, "the selector patch reports the contest on a", func() (bool, string) {
		get(t, sel)
		ts := sel.Status.Targets
		if ts == nil || ts.Contested != 1 || len(ts.NotApplied) != 1 {
			return false, fmt.Sprintf("%+v", ts)
		}
		p := ts.NotApplied[0]
		return p.Name == "a" && p.Reason == "Contested" && strings.Contains(p.Message, "FieldPatch "+ns+"/one"), fmt.Sprintf("%+v", p)
	})
	if c := readyCondition(sel); c.Reason != "Contested" || !strings.Contains(c.Message, "FieldPatch "+ns+"/one") {
		t.Errorf("selector Ready %s: %s; want Contested naming FieldPatch %s/one", c.Reason, c.Message, ns)
	}
	hasEvent(t, ns, "sel", "Contested", "FieldPatch "+ns+"/one")
	target := "/namespaces/" + ns + "/configmaps/a"
	writes := requests.Writes(target)
	reconciled(t, sel)
	reconciled(t, one)
	if w := requests.Writes(target) - writes; w != 0 {
		t.Errorf("%d writes of the contested ConfigMap after both reconciled again, want 0 (no fight)", w)
	}
	u := live(t, configMap(t, ns, "a"))
	if v, _, _ := unstructured.NestedString(u.Object, "data", "proxy"); v != "single" {
		t.Errorf("proxy %q, want the per-object patch's value", v)
	}
	// b stays the selector's.
	if v, _, _ := unstructured.NestedString(live(t, configMap(t, ns, "b")).Object, "data", "proxy"); v != "selector" {
		t.Errorf("b: proxy %q, want the selector's value", v)
	}
}

// Issue 31: a tenant's selector patch reads its targets through its
// ServiceAccount: in namespace a it never patches an object of namespace
// b, and an account that may not list the kind gets Forbidden, not the
// manager's view.
func TestSelectorTenant(t *testing.T) {
	t.Parallel()
	a := tenantNamespace(t, "sel-tenant-a")
	b := namespace(t, "sel-tenant-b")
	helmConfigMaps(t, a, "yes", "c1", "c2")
	helmConfigMaps(t, b, "yes", "c1", "c2")
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: sel, namespace: `+a+`}
spec:
  serviceAccountName: sa
  targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {proxy: "yes"}}}
  patch: {data: {proxy: tenant}}
`)
	waitTargets(t, fp, 2, 2)
	for _, ns := range []string{a, b} {
		for _, n := range []string{"c1", "c2"} {
			v, _, _ := unstructured.NestedString(live(t, configMap(t, ns, n)).Object, "data", "proxy")
			if want := map[string]string{a: "tenant", b: ""}[ns]; v != want {
				t.Errorf("%s/%s: proxy %q, want %q", ns, n, v, want)
			}
		}
	}
	denied := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: denied, namespace: `+a+`}
spec:
  serviceAccountName: ci
  targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {}}
  patch: {data: {proxy: ci}}
`)
	waitReason(t, denied, "Forbidden")
	if c := readyCondition(denied); !strings.Contains(c.Message, "ServiceAccount "+a+"/ci") {
		t.Errorf("Forbidden message %q does not name the account", c.Message)
	}
	deleteAndWait(t, denied)
	deleteAndWait(t, fp)
	for _, n := range []string{"c1", "c2"} {
		if _, found, _ := unstructured.NestedString(live(t, configMap(t, a, n)).Object, "data", "proxy"); found {
			t.Errorf("%s/%s: the added field stays after the deletion", a, n)
		}
	}
}

// Issue 31: a ClusterFieldPatch selects namespaces by label; a namespace
// that stops matching gets its objects' fields back.
func TestSelectorNamespaceSelector(t *testing.T) {
	t.Parallel()
	label := "sel-ns-team"
	one := namespace(t, "sel-ns-one")
	two := namespace(t, "sel-ns-two")
	other := namespace(t, "sel-ns-other")
	for _, ns := range []string{one, two} {
		if err := k8s.Patch(context.Background(), obj(t, "{apiVersion: v1, kind: Namespace, metadata: {name: "+ns+"}}"),
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"`+label+`"}}}`))); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{one, two, other} {
		helmConfigMaps(t, ns, "yes", "c")
	}
	cfp := &v1alpha1.ClusterFieldPatch{}
	if err := yamlCreate(`
apiVersion: fieldops.dev/v1alpha1
kind: ClusterFieldPatch
metadata: {name: sel-ns}
spec:
  targetSelector:
    apiVersion: v1
    kind: ConfigMap
    labelSelector: {matchLabels: {proxy: "yes"}}
    namespaceSelector: {matchLabels: {team: `+label+`}}
  patch: {data: {team: payments}}
`, cfp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteAndWait(t, cfp) })
	waitTargets(t, cfp, 2, 2)
	if _, found, _ := unstructured.NestedString(live(t, configMap(t, other, "c")).Object, "data", "team"); found {
		t.Errorf("%s/c patched; its namespace does not match", other)
	}
	if err := k8s.Patch(context.Background(), obj(t, "{apiVersion: v1, kind: Namespace, metadata: {name: "+two+"}}"),
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":null}}}`))); err != nil {
		t.Fatal(err)
	}
	waitTargets(t, cfp, 1, 1)
	if _, found, _ := unstructured.NestedString(live(t, configMap(t, two, "c")).Object, "data", "team"); found {
		t.Errorf("%s/c keeps the patch's field after its namespace stopped matching", two)
	}
	if _, found, _ := unstructured.NestedString(live(t, configMap(t, one, "c")).Object, "data", "team"); !found {
		t.Errorf("%s/c lost the patch's field", one)
	}
}

// yamlCreate creates the object y describes into o.
func yamlCreate(y string, o client.Object) error {
	if err := yaml.UnmarshalStrict([]byte(y), o); err != nil {
		return err
	}
	return k8s.Create(context.Background(), o)
}

// Issue 31: a patch cannot switch between target and targetSelector, nor
// change the selector's kind; its label selector can change.
func TestSelectorAdmissionTransitions(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "sel-transitions")
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: p, namespace: `+ns+`}
spec:
  targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {app: none}}}
  patch: {data: {a: "1"}}
`)
	t.Cleanup(func() { deleteAndWait(t, fp) })
	for _, tc := range []struct{ name, patch, refused string }{
		{"to-target", `{"spec":{"targetSelector":null,"target":{"apiVersion":"v1","kind":"ConfigMap","name":"c"}}}`, "cannot switch between target and targetSelector"},
		{"kind", `{"spec":{"targetSelector":{"kind":"Secret"}}}`, "targetSelector.apiVersion and targetSelector.kind are immutable"},
		{"labels", `{"spec":{"targetSelector":{"labelSelector":{"matchLabels":{"app":"other"}}}}}`, ""},
	} {
		err := k8s.Patch(context.Background(), fp.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(tc.patch)))
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s: %v; want a refusal mentioning %q", tc.name, err, tc.refused)
		}
	}
}

// Issue 31: records per target are exact as for a single target:
// deletionPolicy Restore gives each target its own previous value back,
// and a per-object patch that takes a field from a selector patch inherits
// that target's record, so the field goes back to its first owner when
// both patches are gone.
func TestSelectorRestoreAndChain(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "sel-restore")
	helmConfigMaps(t, ns, "yes", "a", "b")
	sel := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: sel, namespace: `+ns+`}
spec:
  targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {proxy: "yes"}}}
  deletionPolicy: Restore
  patch: {data: {owned: selector}}
`)
	waitTargets(t, sel, 2, 2)
	one := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: one, namespace: `+ns+`}
spec:
  target: {apiVersion: v1, kind: ConfigMap, name: a}
  patch: {data: {owned: single}}
`)
	waitReason(t, one, "Applied")
	if len(one.Status.PreviousOwners) == 0 || !strings.Contains(fmt.Sprint(one.Status.PreviousOwners), "helm") {
		t.Errorf("the per-object patch's previous owners %+v do not name helm, through the selector patch", one.Status.PreviousOwners)
	}
	deleteAndWait(t, sel)
	b := live(t, configMap(t, ns, "b"))
	if v, _, _ := unstructured.NestedString(b.Object, "data", "owned"); v != "helm" || fmt.Sprint(owners(t, b)[".data.owned"]) != "[helm/Apply]" {
		t.Errorf("b after the selector patch's deletion: owned=%q owners %v, want helm's value and owner back (Restore)", v, owners(t, b)[".data.owned"])
	}
	deleteAndWait(t, one)
	a := live(t, configMap(t, ns, "a"))
	if got := fmt.Sprint(owners(t, a)[".data.owned"]); got != "[helm/Apply]" {
		t.Errorf("a after both deletions: owners of .data.owned %s, want [helm/Apply] (the selector patch's record, inherited)", got)
	}
}

// Issue 31: an object fieldops manages (owned by a fieldops object) is
// skipped with a note, as it would be refused as a single target; names
// narrows the selector.
func TestSelectorSkipsFieldopsObjectsAndNames(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "sel-skip")
	owner := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: owner, namespace: `+ns+`}
spec:
  suspend: true
  target: {apiVersion: v1, kind: ConfigMap, name: nothing}
  patch: {data: {a: "1"}}
`)
	helmConfigMaps(t, ns, "yes", "plain", "unnamed")
	applyAs(t, "helm", fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: managed, namespace: %s, labels: {proxy: "yes"},
  ownerReferences: [{apiVersion: fieldops.dev/v1alpha1, kind: FieldPatch, name: owner, uid: %q}]}, data: {owned: helm}}`, ns, owner.UID))
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: sel, namespace: `+ns+`}
spec:
  targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {proxy: "yes"}}, names: [plain, managed]}
  patch: {data: {proxy: "on"}}
`)
	waitTargets(t, fp, 2, 1)
	ts := fp.Status.Targets
	if ts.Skipped != 1 || len(ts.NotApplied) != 1 || ts.NotApplied[0].Name != "managed" || ts.NotApplied[0].Reason != "ForbiddenTarget" || !strings.Contains(ts.NotApplied[0].Message, "managed by fieldops") {
		t.Errorf("targets %+v, want managed skipped with a note", ts)
	}
	for name, want := range map[string]string{"plain": "on", "managed": "", "unnamed": ""} {
		if v, _, _ := unstructured.NestedString(live(t, configMap(t, ns, name)).Object, "data", "proxy"); v != want {
			t.Errorf("%s: proxy %q, want %q", name, v, want)
		}
	}
}

// Issue 31: a ClusterFieldPatch selects objects of a cluster-scoped kind
// (no namespaceSelector); deleting it takes its annotation off each.
func TestSelectorClusterScoped(t *testing.T) {
	t.Parallel()
	one := kit.Namespace(t, "sel-cluster-one", "sel-cluster-scoped", "yes")
	two := kit.Namespace(t, "sel-cluster-two", "sel-cluster-scoped", "yes")
	no := kit.Namespace(t, "sel-cluster-no")
	cfp := &v1alpha1.ClusterFieldPatch{}
	if err := yamlCreate(`
apiVersion: fieldops.dev/v1alpha1
kind: ClusterFieldPatch
metadata: {name: sel-cluster-scoped}
spec:
  targetSelector:
    apiVersion: v1
    kind: Namespace
    labelSelector: {matchLabels: {sel-cluster-scoped: "yes"}}
  patch: {metadata: {annotations: {example.com/cost-center: platform}}}
`, cfp); err != nil {
		t.Fatal(err)
	}
	waitTargets(t, cfp, 2, 2)
	annotation := func(ns string) string {
		return live(t, obj(t, "{apiVersion: v1, kind: Namespace, metadata: {name: "+ns+"}}")).GetAnnotations()["example.com/cost-center"]
	}
	for ns, want := range map[string]string{one: "platform", two: "platform", no: ""} {
		if got := annotation(ns); got != want {
			t.Errorf("namespace %s: annotation %q, want %q", ns, got, want)
		}
	}
	deleteAndWait(t, cfp)
	for _, ns := range []string{one, two} {
		if got := annotation(ns); got != "" {
			t.Errorf("namespace %s keeps the annotation %q after the deletion", ns, got)
		}
	}
}

// The selector is the apiserver's to apply: a target relabelled out of it
// leaves the patch's watch (the watch holds only matching objects), and
// is still given its fields back exactly, read with one GET; a target
// relabelled out just before the patch is deleted is given back too,
// whichever reconcile sees it first.
func TestSelectorRelabelledOutLeavesTheWatch(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "sel-leave")
	before := helmConfigMaps(t, ns, "yes", names("cm", 0, 12)...)
	fp := fieldPatch(t, `
apiVersion: fieldops.dev/v1alpha1
kind: FieldPatch
metadata: {name: leave, namespace: `+ns+`}
spec:
  targetSelector: {apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {proxy: "yes"}}}
  patch: {data: {proxy: "http://proxy:3128", owned: fieldops}}
`)
	waitTargets(t, fp, 12, 12)
	relabel := func(n string) {
		t.Helper()
		if err := k8s.Patch(context.Background(), configMap(t, ns, n), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"proxy":"no"}}}`)), client.FieldOwner("kubectl-label")); err != nil {
			t.Fatal(err)
		}
		before[n] = strings.Replace(before[n], ".metadata.labels.proxy:[helm/Apply]", ".metadata.labels.proxy:[kubectl-label/Update]", 1)
	}
	gets := func(names []string) int {
		n := 0
		for _, c := range names {
			n += requests.Reads("/namespaces/" + ns + "/configmaps/" + c)
		}
		return n
	}
	out := names("cm", 0, 3)
	gets0 := gets(out)
	for _, n := range out {
		relabel(n)
	}
	waitTargets(t, fp, 9, 9)
	for _, n := range out {
		if got := fmt.Sprint(owners(t, live(t, configMap(t, ns, n)))); got != before[n] {
			t.Errorf("%s relabelled out: owners %s, want %s", n, got, before[n])
		}
	}
	if g := gets(out) - gets0; g < len(out) || g > 2*len(out) {
		t.Errorf("%d GETs of the %d targets relabelled out, want one each (at most two: a fresh read)", g, len(out))
	}
	if fp.Status.Targets == nil || len(fp.Status.Targets.Records) != 9 {
		t.Errorf("records %+v, want the 9 that match", fp.Status.Targets)
	}

	// Relabelled out, then the patch deleted at once.
	relabel("cm03")
	deleteAndWait(t, fp)
	for n, o := range before {
		u := live(t, configMap(t, ns, n))
		if got := fmt.Sprint(owners(t, u)); got != o {
			t.Errorf("%s after deletion: owners %s, want %s", n, got, o)
		}
		if _, found, _ := unstructured.NestedString(u.Object, "data", "proxy"); found {
			t.Errorf("%s after deletion: the added field stays", n)
		}
	}
}
