/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/ownershipcore"
)

const vendorDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: default, labels: {app: web}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        env: [{name: LOG_LEVEL, value: info}]
`

func deployment(name string) string { return sprintf(vendorDeployment, name) }

func TestApplyOwnsOnlyItsFieldsAndSkipsNoOps(t *testing.T) {
	ctx := context.Background()
	a, count := newApplier(t)
	applyAs(t, a.Client, "vendor", deployment("noop"))

	intent := obj(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: noop, namespace: default}
spec:
  template:
    spec:
      containers:
      - name: app
        env: [{name: HTTP_PROXY, value: "http://proxy:3128"}]
`)
	opts := ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionForce)}
	res, err := a.Apply(ctx, intent, opts)
	if err != nil || res.Action != ownershipcore.ActionConfigured {
		t.Fatalf("first apply: %v %v", res.Action, err)
	}
	live := get(t, a.Client, intent)
	own := owners(t, live)
	wantOurs := []string{
		`.spec.template.spec.containers[name="app"].env[name="HTTP_PROXY"].name`,
		`.spec.template.spec.containers[name="app"].env[name="HTTP_PROXY"].value`,
		`.spec.template.spec.containers[name="app"].name`,
	}
	for _, p := range wantOurs {
		if !slices.Contains(own[p], "fp/Apply") {
			t.Errorf("%s: owners %v, want fp/Apply among them", p, own[p])
		}
	}
	for p, ms := range own {
		if slices.Contains(ms, "fp/Apply") && !slices.Contains(wantOurs, p) {
			t.Errorf("fp owns %s, which it never set", p)
		}
	}
	if got := own[`.spec.template.spec.containers[name="app"].image`]; !reflect.DeepEqual(got, []string{"vendor/Apply"}) {
		t.Errorf("image owners = %v, want only vendor", got)
	}

	count.writes.Store(0)
	res, err = a.Apply(ctx, intent, opts)
	if err != nil || res.Action != ownershipcore.ActionUnchanged {
		t.Fatalf("second apply: %v %v", res.Action, err)
	}
	if n := count.writes.Load(); n != 0 {
		t.Fatalf("steady-state apply sent %d writes, want 0", n)
	}
}

func TestConflictStrategies(t *testing.T) {
	ctx := context.Background()
	a, count := newApplier(t)
	applyAs(t, a.Client, "vendor", deployment("conflicts"))
	intent := obj(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: conflicts, namespace: default}
spec:
  replicas: 4
  template:
    metadata: {annotations: {example.com/team: platform}}
`)
	count.writes.Store(0)
	res, err := a.Apply(ctx, intent, ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionFail)})
	var ce *ownershipcore.ConflictError
	if !errors.As(err, &ce) || res.Action != ownershipcore.ActionConflicted {
		t.Fatalf("Fail: got %v %v, want a ConflictError", res.Action, err)
	}
	if len(ce.Conflicts) != 1 || ce.Conflicts[0].Manager != "vendor" || ownershipcore.FormatPath(ce.Conflicts[0].Path) != ".spec.replicas" {
		t.Fatalf("conflicts = %v", ce.Conflicts)
	}
	if n := count.writes.Load(); n != 0 {
		t.Fatalf("Fail sent %d writes", n)
	}

	res, err = a.Apply(ctx, intent, ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionYield)})
	if err != nil || res.Action != ownershipcore.ActionConfigured || len(res.Yielded) != 1 {
		t.Fatalf("Yield: %v %v yielded=%v", res.Action, err, res.Yielded)
	}
	live := get(t, a.Client, intent)
	if r, _, _ := unstructured.NestedInt64(live.Object, "spec", "replicas"); r != 1 {
		t.Errorf("replicas = %d after yield, want 1", r)
	}
	if v, _, _ := unstructured.NestedString(live.Object, "spec", "template", "metadata", "annotations", "example.com/team"); v != "platform" {
		t.Errorf("annotation = %q, want the rest of the intent applied", v)
	}
}

func TestHandBackAndRelinquish(t *testing.T) {
	ctx := context.Background()
	a, _ := newApplier(t)
	applyAs(t, a.Client, "vendor", deployment("handback"))
	// An autoscaler sets replicas with a merge patch (operation Update).
	target := obj(t, deployment("handback"))
	if err := a.Client.Patch(ctx, target, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`)), client.FieldOwner("hpa")); err != nil {
		t.Fatal(err)
	}
	intent := obj(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: handback, namespace: default}
spec:
  replicas: 5
  template:
    spec:
      containers:
      - name: app
        image: nginx:1.28
        env: [{name: HTTP_PROXY, value: "http://proxy:3128"}]
`)
	set, err := a.FieldSet(intent)
	if err != nil {
		t.Fatal(err)
	}
	previous, err := ownershipcore.PreviousOwners(get(t, a.Client, intent), set, "fp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(ctx, intent, ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionForce)}); err != nil {
		t.Fatal(err)
	}
	own := owners(t, get(t, a.Client, intent))
	if got := own[".spec.replicas"]; !reflect.DeepEqual(got, []string{"fp/Apply"}) {
		t.Fatalf("replicas owners after force = %v", got)
	}

	moved, err := a.HandBack(ctx, intent, "fp", previous)
	if err != nil {
		t.Fatal(err)
	}
	if moved.Empty() {
		t.Fatal("nothing handed back")
	}
	// Interrupted here: a second hand-back moves nothing.
	again, err := a.HandBack(ctx, intent, "fp", previous)
	if err != nil || !again.Empty() {
		t.Fatalf("second hand-back moved %v (err %v), want nothing", again, err)
	}
	if _, err := a.Relinquish(ctx, intent, "fp"); err != nil {
		t.Fatal(err)
	}

	live := get(t, a.Client, intent)
	own = owners(t, live)
	for path, want := range map[string][]string{
		".spec.replicas": {"hpa/Update"},
		`.spec.template.spec.containers[name="app"].image`: {"vendor/Apply"},
	} {
		if got := own[path]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s owners = %v, want %v", path, got, want)
		}
	}
	for p, ms := range own {
		for _, m := range ms {
			if m == "fp/Apply" || m == "fp/Update" {
				t.Errorf("fp still owns %s", p)
			}
		}
	}
	if r, _, _ := unstructured.NestedInt64(live.Object, "spec", "replicas"); r != 5 {
		t.Errorf("replicas = %d, want the value to stay 5", r)
	}
	c, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	ctr := c[0].(map[string]interface{})
	if ctr["image"] != "nginx:1.28" {
		t.Errorf("image = %v, want the value to stay", ctr["image"])
	}
	if env := ctr["env"].([]interface{}); len(env) != 1 {
		t.Errorf("env = %v, want only the vendor's LOG_LEVEL (HTTP_PROXY was added by fp and must go)", env)
	}
}

func TestOwnedDiffIgnoresOthersFields(t *testing.T) {
	ctx := context.Background()
	a, _ := newApplier(t)
	applyAs(t, a.Client, "vendor", deployment("diff"))
	intent := obj(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: diff, namespace: default}
spec:
  template:
    metadata: {annotations: {example.com/team: platform}}
`)
	if _, err := a.Apply(ctx, intent, ownershipcore.ApplyOptions{FieldManager: "fp"}); err != nil {
		t.Fatal(err)
	}
	// A third party adds a label; the vendor changes the image.
	applyAs(t, a.Client, "kyverno", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"diff","namespace":"default","labels":{"policy":"x"}}}`)
	d, err := a.OwnedDiff(get(t, a.Client, intent), intent, "fp")
	if err != nil || !d.Empty() {
		t.Fatalf("diff = %v (err %v), want empty", d, err)
	}
	// Someone changes our annotation.
	if err := a.Client.Patch(ctx, obj(t, deployment("diff")), client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"template":{"metadata":{"annotations":{"example.com/team":"other"}}}}}`)), client.FieldOwner("intruder")); err != nil {
		t.Fatal(err)
	}
	d, err = a.OwnedDiff(get(t, a.Client, intent), intent, "fp")
	if err != nil {
		t.Fatal(err)
	}
	if got := ownershipcore.FormatSet(d); !reflect.DeepEqual(got, []string{`.spec.template.metadata.annotations["example.com/team"]`}) {
		t.Fatalf("diff = %v", got)
	}
}

// Removing every entry of a map removes the map (structured-merge-diff
// alone keeps it), and other entries and fields stay.
func TestRemoveFieldsEmptiesMaps(t *testing.T) {
	a, _ := newApplier(t)
	cm := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: default, annotations: {only: "1"}, labels: {a: "1", b: "2"}}, data: {k: v}}`)
	set, err := ownershipcore.ParsePathSet([]string{`.metadata.annotations["only"]`, `.metadata.labels["a"]`})
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.RemoveFields(cm, set)
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(out.Object, "metadata", "annotations"); found {
		t.Fatalf("annotations left: %v", out.GetAnnotations())
	}
	if !reflect.DeepEqual(out.GetLabels(), map[string]string{"b": "2"}) || out.Object["data"] == nil {
		t.Fatalf("too much removed: %v", out.Object)
	}
}

// Issue 11: a relinquish starts from a copy it is given (a cached one,
// at deletion) and sends one request; its empty apply carries that copy's
// resourceVersion, so a copy another writer moved on from is refused and
// read again, and the relinquish still drops exactly what fieldops alone
// owns: a field another manager took a share of meanwhile stays.
func TestRelinquishFromCopy(t *testing.T) {
	ctx := context.Background()
	a, n := newApplier(t)
	cm := func(name, body string) string {
		return sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: default}%s}", name, body)
	}
	for _, tc := range []struct {
		name          string
		rival         bool // another manager shares fp's field after the copy was read
		writes, reads int64
	}{
		{"up-to-date copy", false, 1, 0},
		{"stale copy", true, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "relinquish-" + strings.ReplaceAll(tc.name, " ", "-")
			applyAs(t, a.Client, "vendor", cm(name, ", data: {a: '1'}"))
			ref := applyAs(t, a.Client, "fp", cm(name, ", data: {added: x, other: z}"))
			copy := get(t, a.Client, ref)
			if tc.rival {
				applyAs(t, a.Client, "rival", cm(name, ", data: {added: x}"))
			}
			w, r := n.writes.Load(), n.reads.Load()
			if _, _, err := a.LetGo(ctx, ref, copy, "fp", ownershipcore.LetGo{Relinquish: true}); err != nil {
				t.Fatal(err)
			}
			if dw, dr := n.writes.Load()-w, n.reads.Load()-r; dw != tc.writes || dr != tc.reads {
				t.Errorf("%d writes and %d reads, want %d and %d", dw, dr, tc.writes, tc.reads)
			}
			live := get(t, a.Client, ref)
			data, _, _ := unstructured.NestedStringMap(live.Object, "data")
			want := map[string]string{"a": "1"}
			if tc.rival {
				want["added"] = "x"
			}
			if !reflect.DeepEqual(data, want) {
				t.Errorf("data %v, want %v", data, want)
			}
			for p, ms := range owners(t, live) {
				for _, m := range ms {
					if strings.HasPrefix(m, "fp/") {
						t.Errorf("fp still owns %s", p)
					}
				}
			}
		})
	}
}

// Issue 11: an env var fieldops added to a container another manager
// applied goes with one request (the empty apply): the container item is
// the vendor's too, so nothing is released first, and it stays.
func TestRelinquishAddedEnvVarInOneRequest(t *testing.T) {
	ctx := context.Background()
	a, n := newApplier(t)
	applyAs(t, a.Client, "vendor", deployment("env-relinquish"))
	ref := applyAs(t, a.Client, "fp", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: env-relinquish, namespace: default}
spec:
  template:
    spec:
      containers:
      - name: app
        env: [{name: HTTP_PROXY, value: "http://proxy:3128"}]
`)
	copy := get(t, a.Client, ref)
	w, r := n.writes.Load(), n.reads.Load()
	if _, _, err := a.LetGo(ctx, ref, copy, "fp", ownershipcore.LetGo{Relinquish: true}); err != nil {
		t.Fatal(err)
	}
	if dw, dr := n.writes.Load()-w, n.reads.Load()-r; dw != 1 || dr != 0 {
		t.Errorf("%d writes and %d reads, want 1 and 0", dw, dr)
	}
	live := get(t, a.Client, ref)
	c, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	if len(c) != 1 || c[0].(map[string]interface{})["image"] == nil {
		t.Fatalf("containers %v, want the vendor's app container", c)
	}
	for _, e := range c[0].(map[string]interface{})["env"].([]interface{}) {
		if e.(map[string]interface{})["name"] == "HTTP_PROXY" {
			t.Error("HTTP_PROXY (added by fp) is still there")
		}
	}
	for p, ms := range owners(t, live) {
		for _, m := range ms {
			if strings.HasPrefix(m, "fp/") {
				t.Errorf("fp still owns %s", p)
			}
		}
	}
}

// Every apply's answer is checked against the model's prediction (a
// *DivergenceError otherwise): a create, a forced apply (compared whole:
// it carries the resourceVersion it was decided on), a dry run, and an
// apply without force decided on a stale read (another manager wrote in
// between: only what the apply decides is compared). Values the
// apiserver's defaulting adds (a container's imagePullPolicy) are its own;
// a quantity the apiserver stores in its canonical form ("0.5" as "500m")
// is the value the intent gave.
func TestApplyAnswerMatchesPrediction(t *testing.T) {
	ctx := context.Background()
	a, _ := newApplier(t)
	create := obj(t, sprintf(imageDeployment, "predicted"))
	res, err := a.Apply(ctx, create, ownershipcore.ApplyOptions{FieldManager: "mw"})
	if err != nil || res.Action != ownershipcore.ActionCreated {
		t.Fatalf("create: %v %v", res.Action, err)
	}
	forced := obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"predicted","namespace":"default"},
"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"app","env":[{"name":"A","value":"1"}],"resources":{"limits":{"cpu":"0.5"}}}]}}}}`)
	force := ownershipcore.ApplyOptions{FieldManager: "fp", Conflicts: ownershipcore.Static(ownershipcore.DecisionForce)}
	for _, dryRun := range []bool{true, false} {
		force.DryRun = dryRun
		if res, err = a.Apply(ctx, forced, force); err != nil || res.Action != ownershipcore.ActionConfigured {
			t.Fatalf("forced apply (dry run %v): %v %v", dryRun, res.Action, err)
		}
	}
	stale := get(t, a.Client, create)
	if err := a.Client.Patch(ctx, obj(t, sprintf(imageDeployment, "predicted")), client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"team":"a"}}}`)), client.FieldOwner("labeler")); err != nil {
		t.Fatal(err)
	}
	annotate := obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"predicted","namespace":"default","annotations":{"x":"y"}}}`)
	res, err = a.Apply(ctx, annotate, ownershipcore.ApplyOptions{FieldManager: "ops", Live: stale})
	var div *ownershipcore.DivergenceError
	if errors.As(err, &div) || err != nil || res.Action != ownershipcore.ActionConfigured {
		t.Fatalf("apply decided on a stale read: %v %v", res.Action, err)
	}
	if labels := res.Object.GetLabels(); labels["team"] != "a" {
		t.Fatalf("labels = %v, want the labeler's", labels)
	}
}
