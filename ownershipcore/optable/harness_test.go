/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package optable_test tests the ownership core's pure functions as
// tables of Server-Side Apply operations, in structured-merge-diff's
// merge-test style, without an apiserver: each case runs Apply and Update
// operations through the apiserver's own field manager
// (managedfields.NewDefaultFieldManager, via ownershipcore.Schema) over
// fixed schemas (client-go's for built-in kinds, and a test CRD with every
// list and map type), then checks what the core function under test says.
// What only an apiserver can tell (defaulting, admission, a CRD served in
// two versions) stays in ownershipcore's suite against the control plane.
package optable_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/ownershipcore"
)

// widgetSchema is the OpenAPI schema of the test CRD example.dev/v1
// Widget: a list or map of every SSA type (SSA docs, "Merge strategy").
const widgetSchema = `{
  "type": "object",
  "x-kubernetes-group-version-kind": [{"group": "example.dev", "version": "v1", "kind": "Widget"}],
  "properties": {
    "apiVersion": {"type": "string"},
    "kind": {"type": "string"},
    "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
    "spec": {
      "type": "object",
      "properties": {
        "size": {"type": "integer"},
        "atomicList": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string"}},
        "setList": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "mapList": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
          "items": {"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "string"}, "weight": {"type": "integer"}}}},
        "granularMap": {"type": "object", "x-kubernetes-map-type": "granular", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
        "atomicMap": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}}
      }
    }
  }
}`

var (
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	configMapGVK  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	widgetGVK     = schema.GroupVersionKind{Group: "example.dev", Version: "v1", Kind: "Widget"}
)

// newSchema is the fixed Schema of the tables: client-go's converter for
// built-in kinds, and one built from widgetSchema (with ObjectMeta's).
func newSchema(t *testing.T) *ownershipcore.Schema {
	t.Helper()
	builtin := applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
	var widget spec.Schema
	if err := json.Unmarshal([]byte(widgetSchema), &widget); err != nil {
		t.Fatal(err)
	}
	var objectMeta spec.Schema
	if err := json.Unmarshal([]byte(`{"type": "object", "properties": {
      "name": {"type": "string"}, "namespace": {"type": "string"}, "uid": {"type": "string"},
      "resourceVersion": {"type": "string"}, "generation": {"type": "integer"}, "creationTimestamp": {"type": "string"},
      "labels": {"type": "object", "additionalProperties": {"type": "string"}},
      "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
      "managedFields": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}`), &objectMeta); err != nil {
		t.Fatal(err)
	}
	custom, err := managedfields.NewTypeConverter(map[string]*spec.Schema{
		"dev.example.v1.Widget":                           &widget,
		"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": &objectMeta,
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	return ownershipcore.NewStaticSchema(map[schema.GroupVersion]managedfields.TypeConverter{
		deploymentGVK.GroupVersion(): builtin,
		configMapGVK.GroupVersion():  builtin,
		widgetGVK.GroupVersion():     custom,
	})
}

// op is one write to the object, as the apiserver's field manager records
// it: an Apply of a partial object (with or without force), or an Update
// that merge-patches the object (RFC 7386), as `kubectl patch --type
// merge` or a controller's update would.
type op struct {
	manager string
	apply   string // YAML of the applied configuration
	update  string // YAML of the merge patch
	force   bool
}

func applyAs(manager, y string) op      { return op{manager: manager, apply: y} }
func forceApplyAs(manager, y string) op { return op{manager: manager, apply: y, force: true} }
func updateAs(manager, patch string) op { return op{manager: manager, update: patch} }

// object is the live object of a case.
type object struct {
	t      *testing.T
	schema *ownershipcore.Schema
	live   *unstructured.Unstructured
}

// newObject starts an object of gvk named "x" in namespace "ns" (absent
// until the first operation creates it).
func newObject(t *testing.T, s *ownershipcore.Schema, gvk schema.GroupVersionKind) *object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetName("x")
	if gvk != widgetGVK {
		u.SetNamespace("ns")
	}
	return &object{t: t, schema: s, live: u}
}

// parse reads a partial object of o's kind and identity from YAML.
func (o *object) parse(y string) *unstructured.Unstructured {
	o.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		o.t.Fatalf("%s: %v", y, err)
	}
	u.SetGroupVersionKind(o.live.GroupVersionKind())
	u.SetName(o.live.GetName())
	u.SetNamespace(o.live.GetNamespace())
	return u
}

// patched returns the live object merge-patched (RFC 7386) with the YAML
// patch, without recording it: what an imperative patch would make of the
// object.
func (o *object) patched(patch string) *unstructured.Unstructured {
	o.t.Helper()
	cur, err := json.Marshal(o.live.Object)
	if err != nil {
		o.t.Fatal(err)
	}
	p, err := yaml.YAMLToJSON([]byte(patch))
	if err != nil {
		o.t.Fatal(err)
	}
	merged, err := jsonpatch.MergePatch(cur, p)
	if err != nil {
		o.t.Fatal(err)
	}
	next := &unstructured.Unstructured{}
	if err := json.Unmarshal(merged, &next.Object); err != nil {
		o.t.Fatal(err)
	}
	return next
}

// run performs ops in order; an error fails the test unless wantErr.
func (o *object) run(ops ...op) error {
	o.t.Helper()
	fm, err := o.schema.FieldManager(o.live.GroupVersionKind())
	if err != nil {
		o.t.Fatal(err)
	}
	for _, x := range ops {
		var out interface{ GetObjectKind() schema.ObjectKind }
		if x.apply != "" {
			res, err := fm.Apply(o.live, o.parse(x.apply), x.manager, x.force)
			if err != nil {
				return fmt.Errorf("apply as %s: %w", x.manager, err)
			}
			out = res
		} else {
			res, err := fm.Update(o.live, o.patched(x.update), x.manager)
			if err != nil {
				return fmt.Errorf("update as %s: %w", x.manager, err)
			}
			out = res
		}
		o.live = out.(*unstructured.Unstructured)
	}
	return nil
}

// must is run that fails the test on an error.
func (o *object) must(ops ...op) *object {
	o.t.Helper()
	if err := o.run(ops...); err != nil {
		o.t.Fatal(err)
	}
	return o
}

// owners returns leaf path → "manager/Operation" of the live object,
// sorted per path.
func (o *object) owners() map[string][]string {
	o.t.Helper()
	mf, err := ownershipcore.Owners(o.live)
	if err != nil {
		o.t.Fatal(err)
	}
	return byPath(mf)
}

func byPath(mf ownershipcore.ManagedFields) map[string][]string {
	out := mf.ByPath()
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

// setManagedFields replaces the live object's managed fields with mf, as
// the core's guarded JSON patch of /metadata/managedFields does.
func (o *object) setManagedFields(mf ownershipcore.ManagedFields) {
	o.t.Helper()
	entries, err := mf.Encode()
	if err != nil {
		o.t.Fatal(err)
	}
	o.live.SetManagedFields(entries)
}

// field reads a value of the live object (a path of map keys).
func (o *object) field(path ...string) interface{} {
	v, _, _ := unstructured.NestedFieldNoCopy(o.live.Object, path...)
	return v
}

func paths(t *testing.T, ps ...string) []string {
	t.Helper()
	if ps == nil {
		return []string{}
	}
	sort.Strings(ps)
	return ps
}

func sortedPaths(ps []string) []string {
	out := append([]string{}, ps...)
	sort.Strings(out)
	if out == nil {
		out = []string{}
	}
	return out
}

func equal(t *testing.T, what string, got, want interface{}) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %v\nwant %v", what, got, want)
	}
}
