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
