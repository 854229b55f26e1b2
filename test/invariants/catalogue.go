/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package invariants

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kind is a kind of target object and the fields the random steps use on
// it.
type Kind struct {
	// Name is the kind, e.g. "ConfigMap".
	Name       string
	APIVersion string
	// Resource is the plural resource name (to count writes by URL).
	Resource string
	// Builtin kinds accept strategic merge patches.
	Builtin bool
	// Base are the fields the manager "base" creates the target with. They
	// hold what the apiserver requires and the parents of the JSON
	// pointers of the slots (base never changes them again).
	Base []Field
	// Slots are the fields the random steps set, change and remove.
	Slots []Slot
	// Defaults are paths the apiserver fills in when they are removed,
	// with the value it fills in: "gone" means that value there.
	Defaults map[string]interface{}
	// OtherVersions are further apiVersions the kind is served in (the
	// same schema): other managers' requests and FieldPatch targets use
	// them now and then, so managed fields entries carry several versions.
	OtherVersions []string
}

// GVK is the kind's GroupVersionKind.
func (k *Kind) GVK() schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(k.APIVersion, k.Name)
}

// Slot is one field of a target the random steps touch, with the values
// they choose from.
type Slot struct {
	// Path in the ownership core's form, e.g. `.spec.items[name="x"].value`.
	Path string
	// Values to choose from; a set element (`[="a"]`) has the one value
	// true, for "present".
	Values []interface{}
	// JSON: the slot can be set by an RFC 6902 "add" because its parent
	// always exists (base created it).
	JSON bool
	// Keep: the apiserver defaults the field when it is removed, so Update
	// steps do not remove it.
	Keep bool
}

// targetName is the name of every sequence's target (one per namespace).
const targetName = "target"

// str and ints make slot values.
func str(vs ...string) []interface{} {
	out := make([]interface{}, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

func ints(vs ...int64) []interface{} {
	out := make([]interface{}, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// present is the value of a set element slot.
var present = []interface{}{true}

// configMap: a granular map (data) and metadata maps.
var configMap = &Kind{
	Name: "ConfigMap", APIVersion: "v1", Resource: "configmaps", Builtin: true,
	Base: []Field{
		{".data.base", "0"},
		{".metadata.labels.app", "inv"},
		{".metadata.annotations.base", "0"},
	},
	Slots: []Slot{
		{Path: ".data.a", Values: str("1", "2"), JSON: true},
		{Path: ".data.b", Values: str("1", "2"), JSON: true},
		{Path: ".data.mode", Values: str("fast", "safe"), JSON: true},
		{Path: ".metadata.labels.tier", Values: str("web", "db"), JSON: true},
		{Path: ".metadata.annotations.note", Values: str("n1", "n2"), JSON: true},
	},
}

// deployment: a built-in kind with map-lists inside map-lists (containers,
// env), an atomic list (args), a granular map (nodeSelector) and a field
// the apiserver defaults (replicas).
var deployment = &Kind{
	Name: "Deployment", APIVersion: "apps/v1", Resource: "deployments", Builtin: true,
	Base: []Field{
		{".metadata.labels.app", "inv"},
		{".spec.replicas", int64(1)},
		{".spec.selector.matchLabels.app", "inv"},
		{".spec.template.metadata.labels.app", "inv"},
		{".spec.template.metadata.annotations.base", "0"},
		{`.spec.template.spec.containers[name="app"].image`, "nginx:1"},
		{`.spec.template.spec.containers[name="app"].env[name="BASE"].value`, "0"},
	},
	Slots: []Slot{
		{Path: ".spec.replicas", Values: ints(3, 10), JSON: true, Keep: true},
		{Path: ".spec.minReadySeconds", Values: ints(5, 10), JSON: true},
		{Path: ".metadata.labels.tier", Values: str("web", "db"), JSON: true},
		{Path: ".spec.template.metadata.annotations.note", Values: str("n1", "n2"), JSON: true},
		{Path: ".spec.template.spec.nodeSelector.zone", Values: str("a", "b")},
		{Path: `.spec.template.spec.containers[name="app"].env[name="A"].value`, Values: str("1", "2")},
		{Path: `.spec.template.spec.containers[name="app"].args`, Values: []interface{}{[]interface{}{"--a"}, []interface{}{"--b", "--c"}}},
	},
	Defaults: map[string]interface{}{".spec.replicas": int64(1)},
}

// widget: the test CRD with every list and map type (see
// test/testdata/crds/invariants.example.com_widgets.yaml).
var widget = &Kind{
	Name: "Widget", APIVersion: "invariants.example.com/v1", Resource: "widgets",
	OtherVersions: []string{"invariants.example.com/v2"},
	Base: []Field{
		{".spec.granularMap.base", "0"},
		{`.spec.setList[="base"]`, true},
		{`.spec.items[name="base"].value`, "0"},
		{".spec.baseMap", map[string]interface{}{}},
	},
	Slots: []Slot{
		{Path: ".spec.replicas", Values: ints(2, 3), JSON: true},
		{Path: ".spec.mode", Values: str("fast", "safe"), JSON: true},
		{Path: ".spec.enabled", Values: []interface{}{true, false}, JSON: true},
		{Path: ".spec.atomicList", Values: []interface{}{[]interface{}{"a"}, []interface{}{"a", "b"}}, JSON: true},
		{Path: `.spec.setList[="a"]`, Values: present},
		{Path: `.spec.setList[="b"]`, Values: present},
		{Path: `.spec.items[name="x"].value`, Values: str("1", "2")},
		{Path: `.spec.items[name="x"].tags[="t"]`, Values: present},
		{Path: `.spec.items[name="x"].params.k`, Values: str("1", "2")},
		{Path: `.spec.items[name="y"].value`, Values: str("1", "2")},
		{Path: `.spec.ports[port=80,protocol="TCP"].target`, Values: str("web", "api")},
		{Path: `.spec.ports[port=80,protocol="UDP"].target`, Values: str("dns")},
		{Path: ".spec.atomicMap", Values: []interface{}{map[string]interface{}{"k": "1"}, map[string]interface{}{"k": "2", "j": "1"}}, JSON: true},
		{Path: ".spec.granularMap.k1", Values: str("1", "2"), JSON: true},
		{Path: ".spec.granularMap.k2", Values: str("1", "2"), JSON: true},
		{Path: ".spec.baseMap.k", Values: str("1", "2"), JSON: true},
		{Path: ".spec.atomicStruct", Values: []interface{}{map[string]interface{}{"host": "a", "port": int64(1)}, map[string]interface{}{"host": "b"}}, JSON: true},
	},
}

// kinds are the target kinds, in the order the generator picks from.
var kinds = []*Kind{configMap, deployment, widget}
