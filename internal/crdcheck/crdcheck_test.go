/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package crdcheck

import (
	"fmt"
	"strings"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// crd is a CustomResourceDefinition of widgets.example.com whose v1
// spec.items has the given schema (YAML, indented for the spot).
func crd(t *testing.T, items string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	y := `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              items:
` + indent(items, "                ") + `
  - name: v0
    served: false
    storage: false
    schema:
      openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {items: {type: array, items: {type: string}}}}}}
`
	c := &apiextv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(y), c); err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	return c
}

func indent(s, by string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = by + lines[i]
	}
	return strings.Join(lines, "\n")
}

// widget is a Widget with spec.items and managedFields entries
// (manager: fieldsV1 of spec.items, as JSON).
func widget(t *testing.T, items string, managers ...string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	mf := "[]"
	if len(managers) > 0 {
		var entries []string
		for i := 0; i < len(managers); i += 2 {
			entries = append(entries, fmt.Sprintf(`{"manager": %q, "operation": "Apply", "apiVersion": "example.com/v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:items": %s}}}`, managers[i], managers[i+1]))
		}
		mf = "[" + strings.Join(entries, ",") + "]"
	}
	y := fmt.Sprintf(`{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns", "managedFields": %s}, "spec": {"items": %s}}`, mf, items)
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	return u
}

const (
	scalars   = "type: array\nitems: {type: string}"
	setOf     = "type: array\nx-kubernetes-list-type: set\nitems: {type: string}"
	objects   = "type: array\nitems: {type: object, properties: {name: {type: string}, port: {type: integer}, protocol: {type: string}}}"
	mapByName = "type: array\nx-kubernetes-list-type: map\nx-kubernetes-list-map-keys: [name]\nitems: {type: object, required: [name], properties: {name: {type: string}, port: {type: integer}, protocol: {type: string}}}"
	mapByBoth = "type: array\nx-kubernetes-list-type: map\nx-kubernetes-list-map-keys: [name, protocol]\nitems: {type: object, required: [name, protocol], properties: {name: {type: string}, port: {type: integer}, protocol: {type: string}}}"
	mapDefKey = "type: array\nx-kubernetes-list-type: map\nx-kubernetes-list-map-keys: [name]\nitems: {type: object, properties: {name: {type: string, default: main}, port: {type: integer}}}"
	setOfMaps = "type: array\nx-kubernetes-list-type: set\nitems: {type: object, x-kubernetes-map-type: atomic, properties: {name: {type: string}, port: {type: integer}, protocol: {type: string}}}"
	atomicMap = "type: object\nx-kubernetes-map-type: atomic\nadditionalProperties: {type: string}"
	granular  = "type: object\nadditionalProperties: {type: string}"
)

// One case per transition of issue 13 §2: what check-crd reports for a
// stored object, and whether it is a break.
func TestCheck(t *testing.T) {
	twoOwnersOfMap := []string{"a", `{"k:{\"name\":\"x\"}": {".": {}, "f:name": {}}}`, "b", `{"k:{\"name\":\"y\"}": {".": {}, "f:name": {}}}`}
	for _, c := range []struct {
		name      string
		old, next string
		items     string
		managers  []string
		want      []string // "Severity path: reason prefix"
	}{
		{"set to map: scalar elements", setOf, mapByName, `["a", "b"]`, []string{"a", `{"v:\"a\"": {}}`},
			[]string{"Break .spec.items[0]: associative list with keys may not have non-map elements (the element is a string)",
				"Break .spec.items[1]: associative list with keys may not have non-map elements"}},
		{"atomic to map: elements with keys", objects, mapByName, `[{"name": "x"}, {"name": "y"}]`, []string{"helm", `{}`},
			[]string{`Warning .spec.items: "helm" (Apply) owned it whole (atomic); now it owns only the field itself`}},
		{"atomic to map: an element lacks every key", objects, mapByName, `[{"name": "x"}, {"port": 80}]`, []string{"helm", `{}`},
			[]string{`Warning .spec.items: "helm" (Apply) owned it whole`, `Break .spec.items[1]: associative list with keys has an element that omits all key fields ["name"]`}},
		{"atomic to map: a key with a default may be omitted", objects, mapDefKey, `[{"port": 80}]`, []string{"helm", `{}`},
			[]string{`Warning .spec.items: "helm" (Apply) owned it whole`}},
		{"atomic to map: duplicates", objects, mapByName, `[{"name": "x", "port": 1}, {"name": "x", "port": 2}]`, []string{"helm", `{}`},
			[]string{`Warning .spec.items: "helm" (Apply) owned it whole`, `Break .spec.items[1]: duplicate entries for key [name="x"] (elements 0, 1): "helm" (Apply) applied them all, so its next apply of the same configuration fails ("spec.items: duplicate entries for key [name="x"]")`}},
		{"atomic to map: duplicates nobody applied", objects, mapByName, `[{"name": "x", "port": 1}, {"name": "x", "port": 2}]`, nil,
			[]string{`Warning .spec.items: the object has no managedFields`, `Warning .spec.items[1]: duplicate entries for key [name="x"] (elements 0, 1): the apiserver keeps them`}},
		{"new map key: an element lacks it", mapByName, mapByBoth, `[{"name": "x", "protocol": "TCP"}, {"name": "y"}]`, twoOwnersOfMap,
			[]string{`Warning .spec.items: managedFields name its entries by the keys [name]; with the keys [name,protocol]`, `Break .spec.items[1]: the element omits the key fields ["protocol"], which the new schema requires (a list-map key must be required or defaulted): every write of the object, apply, update or patch, fails validation (spec.items[1].protocol: Required value)`}},
		{"fewer map keys: duplicates", mapByBoth, mapByName, `[{"name": "x", "protocol": "TCP"}, {"name": "x", "protocol": "UDP"}]`, nil,
			[]string{`Warning .spec.items: the object has no managedFields: its first server-side apply makes "before-first-apply" (Update) own every field`, `Warning .spec.items[1]: duplicate entries for key [name="x"] (elements 0, 1): the apiserver keeps them`}},
		{"fewer map keys: duplicates one manager applied", mapByBoth, mapByName, `[{"name": "x", "protocol": "TCP"}, {"name": "x", "protocol": "UDP"}]`,
			[]string{"a", `{"k:{\"name\":\"x\",\"protocol\":\"TCP\"}": {".": {}, "f:name": {}}, "k:{\"name\":\"x\",\"protocol\":\"UDP\"}": {".": {}, "f:name": {}}}`},
			[]string{`Warning .spec.items: managedFields name its entries by the keys [name,protocol]; with the keys [name]`, `Break .spec.items[1]: duplicate entries for key [name="x"] (elements 0, 1): "a" (Apply) applied them all`}},
		{"fewer map keys: duplicates of two managers", mapByBoth, mapByName, `[{"name": "x", "protocol": "TCP"}, {"name": "x", "protocol": "UDP"}]`,
			[]string{"a", `{"k:{\"name\":\"x\",\"protocol\":\"TCP\"}": {".": {}, "f:name": {}}}`, "b", `{"k:{\"name\":\"x\",\"protocol\":\"UDP\"}": {".": {}, "f:name": {}}}`},
			[]string{`Warning .spec.items: managedFields name its entries by the keys [name,protocol]; with the keys [name]`, `Warning .spec.items[1]: duplicate entries for key [name="x"] (elements 0, 1): the apiserver keeps them`}},
		{"map to set: map elements", mapByName, setOfMaps, `[{"name": "x"}]`, []string{"a", `{"k:{\"name\":\"x\"}": {".": {}, "f:name": {}}}`},
			[]string{"Break .spec.items[0]: associative list without keys has an element that's a map type; updates and patches still succeed, but clear the object's managedFields"}},
		{"map to atomic: entries of two managers", mapByName, objects, `[{"name": "x"}, {"name": "y"}]`, twoOwnersOfMap,
			[]string{`Break .spec.items: "a" (Apply), "b" (Apply) own entries of it; as atomic, the first write of the object after the change makes each of them own it whole`}},
		{"map to atomic: one manager", mapByName, objects, `[{"name": "x"}]`, twoOwnersOfMap[:2], nil},
		{"set to atomic: values of two managers", setOf, scalars, `["a", "b"]`, []string{"a", `{"v:\"a\"": {}}`, "b", `{"v:\"b\"": {}}`},
			[]string{`Break .spec.items: "a" (Apply), "b" (Apply) own entries of it; as atomic`}},
		{"atomic to set: duplicates", scalars, setOf, `["a", "a"]`, []string{"a", `{}`},
			[]string{`Warning .spec.items: "a" (Apply) owned it whole (atomic)`, `Break .spec.items[1]: duplicate entries for key [="a"] (elements 0, 1): "a" (Apply) applied them all`}},
		{"atomic to set: map elements", objects, setOfMaps, `[{"name": "x"}]`, []string{"a", `{}`},
			[]string{`Warning .spec.items: "a" (Apply) owned it whole`, "Break .spec.items[0]: associative list without keys has an element that's a map type"}},
		{"granular to atomic map: keys of two managers", granular, atomicMap, `{"x": "1", "y": "2"}`, []string{"a", `{"f:x": {}}`, "b", `{"f:y": {}}`},
			[]string{`Break .spec.items: "a" (Apply), "b" (Apply) own entries of it; as atomic`}},
		{"atomic to granular map", atomicMap, granular, `{"x": "1"}`, []string{"a", `{}`},
			[]string{`Warning .spec.items: "a" (Apply) owned it whole (atomic)`}},
		{"no change", mapByName, mapByName, `[{"port": 1}]`, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			changes := Changes(crd(t, c.old), crd(t, c.next))
			findings, err := Check(widget(t, c.items, c.managers...), changes)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range findings {
				got = append(got, fmt.Sprintf("%s %s: %s", f.Severity, f.Path, f.Reason))
			}
			if len(got) != len(c.want) {
				t.Fatalf("changes %v: findings\n%s\nwant\n%s", changes, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], c.want[i]) {
					t.Errorf("finding %d:\n%s\nwant prefix\n%s", i, got[i], c.want[i])
				}
			}
			wantBreak := strings.Contains(strings.Join(c.want, "\n"), "Break ")
			if Breaks(findings) != wantBreak {
				t.Errorf("Breaks = %v, want %v", Breaks(findings), wantBreak)
			}
		})
	}
}

// Changes finds nested lists (under list items and map values), skips
// versions that are not served, and names the old and new topology.
func TestChanges(t *testing.T) {
	nested := func(listType string) string {
		return "type: array\nx-kubernetes-list-type: map\nx-kubernetes-list-map-keys: [name]\nitems:\n  type: object\n  properties:\n    name: {type: string}\n    hosts: {type: array, " + listType + "items: {type: string}}"
	}
	got := Changes(crd(t, nested("")), crd(t, nested("x-kubernetes-list-type: set, ")))
	if len(got) != 1 || got[0].String() != "v1 .spec.items[*].hosts: atomic → set" {
		t.Errorf("nested: %v", got)
	}
	if got := Changes(crd(t, mapByName), crd(t, mapByBoth)); len(got) != 1 || got[0].String() != "v1 .spec.items: map[name] → map[name,protocol]" {
		t.Errorf("keys: %v", got)
	}
	// v0 is not served: its change (atomic → nothing) is not looked at.
	old, next := crd(t, scalars), crd(t, scalars)
	spec := next.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"]
	items := spec.Properties["items"]
	items.XListType = ptr("set")
	spec.Properties["items"] = items
	if got := Changes(old, next); len(got) != 0 {
		t.Errorf("unserved version: %v", got)
	}
}

func ptr(s string) *string { return &s }
