/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package optable_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fieldops/fieldops/ownershipcore"
)

// TestRestore: a LetGo with previous values (deletionPolicy Restore) puts
// back the value of each field the patch owns alone, then hands it to its
// previous owner; a field another manager wrote since keeps its value and
// owner (ChangedSince names it); added fields go; nothing else changes.
func TestRestore(t *testing.T) {
	s := newSchema(t)
	m := ownershipcore.Model{Schema: s}
	tests := []struct {
		name      string
		gvk       schema.GroupVersionKind
		before    []op   // the object before the patch
		taken     string // the fields the patch takes, as an apply
		since     []op   // what happens while the patch holds them
		values    []string
		owners    map[string][]string
		field     []string
		want      interface{}
		restored  []string
		changedBy map[string][]string
	}{{
		name:     "an incident pin: replicas back to 3, owned by helm",
		gvk:      deploymentGVK,
		before:   []op{applyAs("helm", `{spec: {replicas: 3, selector: {matchLabels: {app: a}}}}`)},
		taken:    `{spec: {replicas: 10}}`,
		values:   []string{".spec.replicas"},
		field:    []string{"spec", "replicas"},
		want:     int64(3),
		restored: []string{".spec.replicas"},
		owners:   map[string][]string{".spec.replicas": {"helm/Apply"}, ".spec.selector": {"helm/Apply"}},
	}, {
		name:      "a log level restored, the key another manager changed since keeps its value and owner",
		gvk:       configMapGVK,
		before:    []op{applyAs("helm", `{data: {LOG_LEVEL: info, other: a}}`)},
		taken:     `{data: {LOG_LEVEL: debug, other: b}}`,
		since:     []op{updateAs("ops", `{data: {other: c}}`)},
		values:    []string{".data.LOG_LEVEL", ".data.other"},
		field:     []string{"data"},
		want:      map[string]interface{}{"LOG_LEVEL": "info", "other": "c"},
		restored:  []string{".data.LOG_LEVEL"},
		owners:    map[string][]string{".data.LOG_LEVEL": {"helm/Apply"}, ".data.other": {"ops/Update"}},
		changedBy: map[string][]string{"ops": {".data.other"}},
	}, {
		name:      "kubectl edit set the pinned field since: it stays",
		gvk:       configMapGVK,
		before:    []op{applyAs("helm", `{data: {replicas: "3"}}`)},
		taken:     `{data: {replicas: "10"}}`,
		since:     []op{updateAs("kubectl-edit", `{data: {replicas: "7"}}`)},
		values:    []string{".data.replicas"},
		field:     []string{"data", "replicas"},
		want:      "7",
		restored:  nil,
		owners:    map[string][]string{".data.replicas": {"kubectl-edit/Update"}},
		changedBy: map[string][]string{"kubectl-edit": {".data.replicas"}},
	}, {
		name: "a container's env value in place, the item and its siblings untouched",
		gvk:  deploymentGVK,
		before: []op{applyAs("helm", `{spec: {selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: a}}, spec: {containers: [
  {name: app, image: i, env: [{name: A, value: "1"}, {name: B, value: "2"}]}]}}}}`)},
		taken:    `{spec: {template: {spec: {containers: [{name: app, env: [{name: A, value: "9"}, {name: NEW, value: "x"}]}]}}}}`,
		values:   []string{`.spec.template.spec.containers[name="app"].env[name="A"].value`},
		field:    []string{"spec", "template", "spec", "containers"},
		want:     []interface{}{map[string]interface{}{"name": "app", "image": "i", "env": []interface{}{map[string]interface{}{"name": "A", "value": "1"}, map[string]interface{}{"name": "B", "value": "2"}}}},
		restored: []string{`.spec.template.spec.containers[name="app"].env[name="A"].value`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newObject(t, s, tt.gvk).must(tt.before...)
			fields := paths(t, tt.values...)
			set, err := ownershipcore.ParsePathSet(fields)
			if err != nil {
				t.Fatal(err)
			}
			values, err := m.PreviousValues(o.live, set)
			if err != nil {
				t.Fatal(err)
			}
			helm, err := ownershipcore.Owners(o.live)
			if err != nil {
				t.Fatal(err)
			}
			o.must(forceApplyAs("fp", tt.taken)).must(tt.since...)
			state, err := ownershipcore.NewState(o.live, true)
			if err != nil {
				t.Fatal(err)
			}
			changed, err := m.ChangedSince(state, "fp", values)
			if err != nil {
				t.Fatal(err)
			}
			by := map[string][]string{}
			for manager, f := range changed {
				by[manager] = ownershipcore.FormatSet(f)
			}
			if tt.changedBy == nil {
				tt.changedBy = map[string][]string{}
			}
			equal(t, "changed since by", by, tt.changedBy)
			next, out, err := m.LetGo(state, "fp", ownershipcore.LetGo{Restore: values, Previous: helm, Relinquish: true})
			if err != nil {
				t.Fatal(err)
			}
			equal(t, "restored", sortedPaths(ownershipcore.FormatSet(out.Restored)), sortedPaths(tt.restored))
			o.live = next.Object
			o.setManagedFields(next.Owners)
			equal(t, "value", o.field(tt.field...), tt.want)
			if tt.owners != nil {
				got := o.owners()
				for p, want := range tt.owners {
					equal(t, "owners of "+p, got[p], want)
				}
			}
			for _, e := range next.Owners {
				if e.Manager == "fp" {
					t.Errorf("an entry of fp is left: %v", ownershipcore.FormatSet(e.Fields))
				}
			}
		})
	}
}
