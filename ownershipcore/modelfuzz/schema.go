/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package modelfuzz

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/fieldops/fieldops/ownershipcore"
)

// WidgetGVK is the kind of the sequences' object: a custom resource with a
// list or map of every Server-Side Apply type (SSA docs, "Merge strategy").
var WidgetGVK = schema.GroupVersionKind{Group: "example.dev", Version: "v1", Kind: "Widget"}

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
          "items": {"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "string"}, "weight": {"type": "integer"},
            "tags": {"type": "object", "additionalProperties": {"type": "string"}}}}},
        "granularMap": {"type": "object", "x-kubernetes-map-type": "granular", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
        "atomicMap": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "nested": {"type": "object", "properties": {"inner": {"type": "object", "additionalProperties": {"type": "string"}}}}
      }
    }
  }
}`

const objectMetaSchema = `{"type": "object", "properties": {
  "name": {"type": "string"}, "namespace": {"type": "string"}, "uid": {"type": "string"},
  "resourceVersion": {"type": "string"}, "generation": {"type": "integer"}, "creationTimestamp": {"type": "string"},
  "labels": {"type": "object", "additionalProperties": {"type": "string"}},
  "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
  "managedFields": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}`

// Schema is the static Schema of the sequences: the Widget custom resource,
// with ObjectMeta.
func Schema() (*ownershipcore.Schema, error) {
	var widget, objectMeta spec.Schema
	if err := json.Unmarshal([]byte(widgetSchema), &widget); err != nil {
		return nil, fmt.Errorf("widget schema: %w", err)
	}
	if err := json.Unmarshal([]byte(objectMetaSchema), &objectMeta); err != nil {
		return nil, fmt.Errorf("object meta schema: %w", err)
	}
	tc, err := managedfields.NewTypeConverter(map[string]*spec.Schema{
		"dev.example.v1.Widget":                           &widget,
		"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": &objectMeta,
	}, false)
	if err != nil {
		return nil, err
	}
	return ownershipcore.NewStaticSchema(map[schema.GroupVersion]managedfields.TypeConverter{WidgetGVK.GroupVersion(): tc}), nil
}
