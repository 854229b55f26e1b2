/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/fieldops/fieldops/ownershipcore"
)

const schemaInfoDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: shapes
  labels: {app: shapes}
  finalizers: [example.com/a, example.com/b]
spec:
  selector: {matchLabels: {app: shapes}}
  template:
    metadata: {labels: {app: shapes}}
    spec:
      containers:
      - name: app
        image: nginx
        ports: [{containerPort: 80, protocol: TCP}]
      tolerations: [{key: a, operator: Exists}]
`

// SchemaInfo answers from the apiserver's own schema of a kind: list types
// and keys, map types and structs at a JSON pointer, and the managedFields
// path of the value a pointer names.
func TestSchemaInfo(t *testing.T) {
	d := obj(t, schemaInfoDeployment)
	info, err := schema.Info(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pointer string
		shape   ownershipcore.FieldShape
		none    bool   // the schema declares no value there
		field   string // FieldPath; "" when the pointer names no value of d
	}{
		{pointer: "/spec", shape: ownershipcore.FieldShape{MapType: "granular", Struct: true}, field: ".spec"},
		{pointer: "/spec/selector", shape: ownershipcore.FieldShape{MapType: "atomic", Struct: true}, field: ".spec.selector"},
		{pointer: "/metadata/labels", shape: ownershipcore.FieldShape{MapType: "granular"}, field: ".metadata.labels"},
		{pointer: "/metadata/labels/app", field: ".metadata.labels.app"},
		{pointer: "/metadata/finalizers", shape: ownershipcore.FieldShape{ListType: "set"}, field: ".metadata.finalizers"},
		{pointer: "/metadata/finalizers/1", field: `.metadata.finalizers[="example.com/b"]`},
		{pointer: "/spec/template/spec/containers", shape: ownershipcore.FieldShape{ListType: "map", Keys: []string{"name"}}, field: ".spec.template.spec.containers"},
		{pointer: "/spec/template/spec/containers/0/image", field: `.spec.template.spec.containers[name="app"].image`},
		{pointer: "/spec/template/spec/containers/-", shape: ownershipcore.FieldShape{MapType: "granular", Struct: true}},
		{pointer: "/spec/template/spec/containers/0/ports/0", shape: ownershipcore.FieldShape{MapType: "granular", Struct: true}, field: `.spec.template.spec.containers[name="app"].ports[containerPort=80,protocol="TCP"]`},
		{pointer: "/spec/template/spec/tolerations", shape: ownershipcore.FieldShape{ListType: "atomic"}, field: ".spec.template.spec.tolerations"},
		{pointer: "/spec/template/spec/tolerations/0/key", shape: ownershipcore.FieldShape{}, field: ".spec.template.spec.tolerations"},
		{pointer: "/spec/nope", none: true},
	} {
		t.Run(strings.TrimPrefix(tc.pointer, "/"), func(t *testing.T) {
			shape, ok := info.Shape(tokens(tc.pointer))
			if len(shape.Keys) == 0 {
				shape.Keys = nil // a set's keys may be empty or nil
			}
			switch {
			case ok == tc.none:
				t.Errorf("Shape: ok = %v", ok)
			case ok && !reflect.DeepEqual(shape, tc.shape):
				t.Errorf("Shape = %+v, want %+v", shape, tc.shape)
			}
			p, ok := info.FieldPath(d.Object, tokens(tc.pointer))
			switch {
			case tc.field == "" && ok:
				t.Errorf("FieldPath = %s, want none", ownershipcore.FormatPath(p))
			case tc.field != "" && !ok:
				t.Errorf("FieldPath: none, want %s", tc.field)
			case ok && ownershipcore.FormatPath(p) != tc.field:
				t.Errorf("FieldPath = %s, want %s", ownershipcore.FormatPath(p), tc.field)
			}
		})
	}
}

// tokens splits a JSON pointer without escapes into its tokens.
func tokens(pointer string) []string { return strings.Split(pointer[1:], "/") }
