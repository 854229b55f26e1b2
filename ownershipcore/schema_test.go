/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// A CRD that gains a field is followed without an explicit invalidation:
// converting an object with the new field re-reads the group's OpenAPI
// (which the apiserver republishes a moment after the CRD changes)
// instead of failing on the cached schema forever.
func TestSchemaFollowsCRDChange(t *testing.T) {
	ctx := context.Background()
	cs := apiextensionsclient.NewForConfigOrDie(cfg)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal([]byte(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.schema.fieldops.dev}
spec:
  group: schema.fieldops.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
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
              size: {type: integer}
`), crd); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	widget := func(spec map[string]interface{}) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "schema.fieldops.dev/v1", "kind": "Widget",
			"metadata": map[string]interface{}{"name": "w", "namespace": "default"},
			"spec":     spec,
		}}
	}
	eventuallyTyped := func(obj *unstructured.Unstructured) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := schema.ToTyped(obj)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("ToTyped(%v): %v", obj.Object["spec"], err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	eventuallyTyped(widget(map[string]interface{}{"size": int64(1)}))
	if _, err := schema.ToTyped(widget(map[string]interface{}{"color": "blue"})); err == nil || !strings.Contains(err.Error(), "field not declared in schema") {
		t.Fatalf("a field the CRD does not have: %v, want field not declared in schema", err)
	}

	live, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	props := live.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	props.Properties["color"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	live.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = props
	if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No Invalidate here: the schema cached above must not stick.
	eventuallyTyped(widget(map[string]interface{}{"size": int64(1), "color": "blue"}))
}
