/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package optable_test

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fieldops/fieldops/ownershipcore"
)

const deployment = `
metadata: {labels: {app: web}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: "nginx:1.27"}
`

const fo = "fieldops-fieldpatch/ns/p"

// HandBackPlan after a recorded force apply: every field fieldops took
// goes back into the entry that owned it before (same manager and
// operation), fieldops keeps only what it added, values are untouched.
func TestHandBackPlan(t *testing.T) {
	for _, tc := range []struct {
		name   string
		gvk    any
		before []op
		patch  string // fieldops's applied configuration
		want   map[string][]string
	}{
		{
			name:   "a field of an Apply manager",
			before: []op{applyAs("helm", deployment)},
			patch:  `{spec: {replicas: 3}}`,
			want: map[string][]string{
				".metadata.labels.app": {"helm/Apply"}, ".spec.replicas": {"helm/Apply"},
				".spec.selector": {"helm/Apply"}, ".spec.template.metadata.labels.app": {"helm/Apply"},
				`.spec.template.spec.containers[name="app"].image`: {"helm/Apply"}, `.spec.template.spec.containers[name="app"].name`: {"helm/Apply"},
			},
		},
		{
			name:   "a field of an Update manager (an HPA through a merge patch)",
			before: []op{applyAs("helm", deployment), updateAs("hpa", `{spec: {replicas: 5}}`)},
			patch:  `{spec: {replicas: 3}}`,
			want: map[string][]string{
				".metadata.labels.app": {"helm/Apply"}, ".spec.replicas": {"hpa/Update"},
				".spec.selector": {"helm/Apply"}, ".spec.template.metadata.labels.app": {"helm/Apply"},
				`.spec.template.spec.containers[name="app"].image`: {"helm/Apply"}, `.spec.template.spec.containers[name="app"].name`: {"helm/Apply"},
			},
		},
		{
			name:   "a field inside a list item; an added env var stays with fieldops",
			before: []op{applyAs("helm", deployment)},
			patch:  `{spec: {template: {spec: {containers: [{name: app, image: "nginx:1.28", env: [{name: PROXY, value: "http://p"}]}]}}}}`,
			want: map[string][]string{
				".metadata.labels.app": {"helm/Apply"}, ".spec.replicas": {"helm/Apply"},
				".spec.selector": {"helm/Apply"}, ".spec.template.metadata.labels.app": {"helm/Apply"},
				`.spec.template.spec.containers[name="app"].image`: {"helm/Apply"},
				// The item's key is co-owned with helm (recorded as helm's):
				// helm never lost it, so nothing moves; the relinquish drops
				// fieldops's share (and the env var it added).
				`.spec.template.spec.containers[name="app"].name`:                    {fo + "/Apply", "helm/Apply"},
				`.spec.template.spec.containers[name="app"].env[name="PROXY"].name`:  {fo + "/Apply"},
				`.spec.template.spec.containers[name="app"].env[name="PROXY"].value`: {fo + "/Apply"},
			},
		},
		{
			name:   "a shared field (same value): nothing moves, the relinquish drops fieldops's share, helm keeps it",
			before: []op{applyAs("helm", deployment)},
			patch:  `{spec: {replicas: 1}}`,
			want: map[string][]string{
				".metadata.labels.app": {"helm/Apply"}, ".spec.replicas": {fo + "/Apply", "helm/Apply"},
				".spec.selector": {"helm/Apply"}, ".spec.template.metadata.labels.app": {"helm/Apply"},
				`.spec.template.spec.containers[name="app"].image`: {"helm/Apply"}, `.spec.template.spec.containers[name="app"].name`: {"helm/Apply"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSchema(t)
			o := newObject(t, s, deploymentGVK).must(tc.before...)
			applier := &ownershipcore.Applier{Schema: s}
			intent, err := applier.FieldSet(o.parse(tc.patch))
			if err != nil {
				t.Fatal(err)
			}
			// Recorded before the first write, as the controller does.
			previous, err := ownershipcore.PreviousOwners(o.live, intent, fo)
			if err != nil {
				t.Fatal(err)
			}
			o.must(forceApplyAs(fo, tc.patch))
			taken := runtime.DeepCopyJSONValue(o.field("spec"))
			current, err := ownershipcore.Owners(o.live)
			if err != nil {
				t.Fatal(err)
			}
			plan, _ := ownershipcore.HandBackPlan(current, fo, previous)
			o.setManagedFields(plan)
			equal(t, "owners after hand-back", o.owners(), tc.want)
			// Idempotent: planned again, nothing moves.
			again, err := ownershipcore.Owners(o.live)
			if err != nil {
				t.Fatal(err)
			}
			if _, m := ownershipcore.HandBackPlan(again, fo, previous); !m.Empty() {
				t.Errorf("a second hand-back moves %v", ownershipcore.FormatSet(m))
			}
			// Then fieldops relinquishes (an empty apply, as deletion
			// does): the field manager removes what fieldops alone still
			// owns (what it added) and keeps what went back, with the
			// values fieldops set.
			o.must(applyAs(fo, `{}`))
			want := map[string][]string{}
			for p, owners := range tc.want {
				var rest []string
				for _, m := range owners {
					if m != fo+"/Apply" {
						rest = append(rest, m)
					}
				}
				if rest != nil {
					want[p] = rest
				}
			}
			equal(t, "owners after the empty apply", o.owners(), want)
			equal(t, "replicas after the empty apply", o.field("spec", "replicas"), taken.(map[string]interface{})["replicas"])
		})
	}
}

// OwnedDiff: the fields where live differs from an intent that manager is
// responsible for; fields of others absent from the intent never count.
func TestOwnedDiff(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ops    []op
		intent string
		want   []string
	}{
		{"the intent holds", []op{applyAs("helm", deployment), forceApplyAs(fo, `{spec: {replicas: 3}}`)}, `{spec: {replicas: 3}}`, nil},
		{"another manager changed our field", []op{applyAs("helm", deployment), forceApplyAs(fo, `{spec: {replicas: 3}}`), updateAs("hpa", `{spec: {replicas: 7}}`)}, `{spec: {replicas: 3}}`, []string{".spec.replicas"}},
		{"another manager changed a field we do not set", []op{applyAs("helm", deployment), forceApplyAs(fo, `{spec: {replicas: 3}}`), updateAs("ci", `{metadata: {labels: {app: other}}}`)}, `{spec: {replicas: 3}}`, nil},
		{"a field we own that left the intent", []op{applyAs("helm", deployment), forceApplyAs(fo, `{spec: {replicas: 3}, metadata: {annotations: {x: "1"}}}`)}, `{spec: {replicas: 3}}`, []string{".metadata.annotations.x"}},
		{"a field of the intent nobody set yet", []op{applyAs("helm", deployment)}, `{spec: {minReadySeconds: 5}}`, []string{".spec.minReadySeconds"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSchema(t)
			o := newObject(t, s, deploymentGVK).must(tc.ops...)
			diff, err := (&ownershipcore.Applier{Schema: s}).OwnedDiff(o.live, o.parse(tc.intent), fo)
			if err != nil {
				t.Fatal(err)
			}
			equal(t, "diff", sortedPaths(ownershipcore.FormatSet(diff)), paths(t, tc.want...))
		})
	}
}

// ChangedIntent: a merge patch turned into an intent holds the fields it
// changes (a new map whole), plus those the manager already owns; a patch
// that removes fields is ErrRemoval.
func TestChangedIntent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ops     []op
		patched string // merge patch over live
		want    []string
		removal bool
	}{
		{"a changed field", []op{applyAs("helm", deployment)}, `{spec: {replicas: 4}}`, []string{".spec.replicas"}, false},
		{"an unchanged field is not taken", []op{applyAs("helm", deployment)}, `{spec: {replicas: 1}}`, nil, false},
		{"a new map, whole", []op{applyAs("helm", deployment)}, `{metadata: {annotations: {a: "1", b: "2"}}}`, []string{".metadata.annotations.a", ".metadata.annotations.b"}, false},
		{"fields we own stay in the intent", []op{applyAs("helm", deployment), forceApplyAs(fo, `{spec: {minReadySeconds: 5}}`)}, `{spec: {replicas: 4}}`, []string{".spec.minReadySeconds", ".spec.replicas"}, false},
		{"a removal", []op{applyAs("helm", deployment)}, `{metadata: {labels: {app: null}}}`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSchema(t)
			o := newObject(t, s, deploymentGVK).must(tc.ops...)
			applier := &ownershipcore.Applier{Schema: s}
			intent, err := applier.ChangedIntent(o.live, o.patched(tc.patched), fo)
			if tc.removal {
				if !errors.Is(err, ownershipcore.ErrRemoval) {
					t.Fatalf("want ErrRemoval, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			set, err := applier.FieldSet(intent)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range ownershipcore.FormatSet(set.Leaves()) {
				switch p {
				case ".apiVersion", ".kind", ".metadata.name", ".metadata.namespace":
					continue
				}
				got = append(got, p)
			}
			equal(t, "intent", sortedPaths(got), paths(t, tc.want...))
		})
	}
}

// Every list and map type of the SSA docs ("Merge strategy"), over the
// test CRD: who owns what after two managers apply, and what a force
// apply takes.
func TestListAndMapTypes(t *testing.T) {
	base := `{spec: {atomicList: [a, b], setList: [a, b], mapList: [{name: a, value: "1"}, {name: b, value: "2"}], granularMap: {a: "1", b: "2"}, atomicMap: {a: "1", b: "2"}}}`
	for _, tc := range []struct {
		name      string
		other     string // applied as "other" over base, applied as "owner"
		conflicts bool   // without force; then applied with force
		want      map[string][]string
	}{
		{"atomic list: one owner for the whole list", `{spec: {atomicList: [a, c]}}`, true, map[string][]string{".spec.atomicList": {"other/Apply"}}},
		{"set list: per element, an added element conflicts with nobody", `{spec: {setList: [c]}}`, false, map[string][]string{`.spec.setList[="a"]`: {"owner/Apply"}, `.spec.setList[="b"]`: {"owner/Apply"}, `.spec.setList[="c"]`: {"other/Apply"}}},
		{"map list: per key and field", `{spec: {mapList: [{name: a, value: "9"}]}}`, true, map[string][]string{`.spec.mapList[name="a"].name`: {"other/Apply", "owner/Apply"}, `.spec.mapList[name="a"].value`: {"other/Apply"}, `.spec.mapList[name="b"].name`: {"owner/Apply"}, `.spec.mapList[name="b"].value`: {"owner/Apply"}}},
		{"granular map: per key", `{spec: {granularMap: {a: "9"}}}`, true, map[string][]string{".spec.granularMap.a": {"other/Apply"}, ".spec.granularMap.b": {"owner/Apply"}}},
		{"atomic map: one owner for the whole map", `{spec: {atomicMap: {a: "9"}}}`, true, map[string][]string{".spec.atomicMap": {"other/Apply"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSchema(t)
			o := newObject(t, s, widgetGVK).must(applyAs("owner", base))
			if err := o.run(applyAs("other", tc.other)); (err != nil) != tc.conflicts {
				t.Fatalf("apply without force: %v, want a conflict: %v", err, tc.conflicts)
			}
			o.must(forceApplyAs("other", tc.other))
			got := o.owners()
			for p, want := range tc.want {
				equal(t, p, got[p], want)
			}
		})
	}
}

// RemoveFields keeps list items by their keys and drops a map emptied of
// every entry.
func TestRemoveFields(t *testing.T) {
	s := newSchema(t)
	o := newObject(t, s, widgetGVK).must(applyAs("owner", `{spec: {size: 1, mapList: [{name: a, value: "1"}, {name: b, value: "2"}], granularMap: {a: "1"}, labels: {x: "1"}}}`))
	set, err := ownershipcore.ParsePathSet([]string{`.spec.mapList[name="a"]`, `.spec.mapList[name="a"].name`, `.spec.mapList[name="a"].value`, ".spec.granularMap.a", ".spec.size"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := (&ownershipcore.Applier{Schema: s}).RemoveFields(o.live, set)
	if err != nil {
		t.Fatal(err)
	}
	spec := out.Object["spec"].(map[string]interface{})
	equal(t, "mapList", spec["mapList"], []interface{}{map[string]interface{}{"name": "b", "value": "2"}})
	if _, ok := spec["granularMap"]; ok {
		t.Errorf("granularMap left as %v, want it gone with its last entry", spec["granularMap"])
	}
	if _, ok := spec["size"]; ok {
		t.Error("size not removed")
	}
	equal(t, "labels", spec["labels"], map[string]interface{}{"x": "1"})
}

// NewApplier refuses what an Applier cannot work without.
func TestNewApplier(t *testing.T) {
	s := newSchema(t)
	if _, err := ownershipcore.NewApplier(nil, nil, nil, s); err == nil {
		t.Error("an applier without a client")
	}
}

// RemoveFields drops what a removal leaves empty inside list items too
// (a null or empty map), and keeps a list item left with its keys alone:
// a yielded field deep in a list item must not leave an intent that claims
// the item's map (seed 7800120 of test/invariants: a Yield patch applied
// "params: null" and owned .params, released it, and applied it again, in
// a loop), nor drop an item the applier may own, which would take others'
// fields inside it with it (seed 947 of the model fuzzer).
func TestRemoveFieldsInsideListItems(t *testing.T) {
	s := newSchema(t)
	for _, tc := range []struct {
		name, intent string
		remove       []string
		want         string
	}{
		{"the only field of a nested map of the only item", `{spec: {template: {spec: {containers: [{name: app, resources: {limits: {cpu: "1"}}}]}}}}`,
			[]string{`.spec.template.spec.containers[name="app"].resources.limits.cpu`}, `{spec: {template: {spec: {containers: [{name: app}]}}}}`},
		{"an item keeps its other fields", `{spec: {template: {spec: {containers: [{name: app, image: nginx, resources: {limits: {cpu: "1"}}}]}}}}`,
			[]string{`.spec.template.spec.containers[name="app"].resources.limits.cpu`}, `{spec: {template: {spec: {containers: [{name: app, image: nginx}]}}}}`},
		{"items keep their keys", `{spec: {template: {spec: {containers: [{name: app, env: [{name: A, value: "1"}, {name: B, value: "2"}]}, {name: side, image: busybox}]}}}}`,
			[]string{`.spec.template.spec.containers[name="app"].env[name="A"].value`, `.spec.template.spec.containers[name="app"].env[name="B"].value`},
			`{spec: {template: {spec: {containers: [{name: app, env: [{name: A}, {name: B}]}, {name: side, image: busybox}]}}}}`},
		{"a nested map keeps its other entries", `{spec: {template: {spec: {containers: [{name: app, resources: {limits: {cpu: "1", memory: 1Gi}}}]}}}}`,
			[]string{`.spec.template.spec.containers[name="app"].resources.limits.cpu`}, `{spec: {template: {spec: {containers: [{name: app, resources: {limits: {memory: 1Gi}}}]}}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newObject(t, s, deploymentGVK)
			intent := o.parse(tc.intent)
			set, err := ownershipcore.ParsePathSet(tc.remove)
			if err != nil {
				t.Fatal(err)
			}
			out, err := (&ownershipcore.Applier{Schema: s}).RemoveFields(intent, set)
			if err != nil {
				t.Fatal(err)
			}
			want := o.parse(tc.want)
			delete(out.Object, "metadata")
			delete(want.Object, "metadata")
			equal(t, "intent", out.Object, want.Object)
		})
	}
}
