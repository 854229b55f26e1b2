/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore_test

import (
	"context"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/ownershipcore"
)

// jsonObj reads YAML into an unstructured object as the apiserver's
// answers hold it (integers as int64).
func jsonObj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

// yieldDeployment is the Deployment yield-fields with the annotations,
// replicas (none when empty) and containers given.
func yieldDeployment(annotations, replicas, containers string) string {
	if replicas != "" {
		replicas = "replicas: " + replicas + ", "
	}
	return `{apiVersion: apps/v1, kind: Deployment, metadata: {name: yield-fields, namespace: default` + annotations + `},
spec: {` + replicas + `selector: {matchLabels: {app: yf}}, template: {metadata: {labels: {app: yf}}, spec: {containers: [` + containers + `]}}}}`
}

// YieldFields leaves out of helm's next intent the leaves a yielded
// manager owns, but for those helm co-owns at the value the intent keeps
// and for list items' keys; WithLiveValues gives them their live values.
func TestYieldFields(t *testing.T) {
	ctx := context.Background()
	a, _ := newApplier(t)
	const fp = "fieldops-fieldpatch/default/p"
	const ab = `, annotations: {a: "1", b: "1"}`
	applyAs(t, a.Client, "helm", yieldDeployment(ab, "1", `{name: app, image: "nginx:1.27", env: [{name: A, value: a}]}`))
	applyAs(t, a.Client, fp, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: yield-fields, namespace: default, annotations: {a: "2", b: "1"}},
spec: {replicas: 5, template: {spec: {containers: [{name: app, env: [{name: P, value: p}]}]}}}}`)
	live := jsonObj(t, "{apiVersion: apps/v1, kind: Deployment}")
	if err := a.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "yield-fields"}, live); err != nil {
		t.Fatal(err)
	}
	isFP := func(m string) bool { return m == fp }
	for _, tc := range []struct {
		name, desired, out, kept string
		yielded                  []string
	}{{
		name:    "taken fields",
		desired: yieldDeployment(ab, "1", `{name: app, image: "nginx:1.28", env: [{name: A, value: a}]}`),
		yielded: []string{".metadata.annotations.a", ".spec.replicas"},
		out:     yieldDeployment(`, annotations: {b: "1"}`, "", `{name: app, image: "nginx:1.28", env: [{name: A, value: a}]}`),
		kept:    yieldDeployment(`, annotations: {a: "2", b: "1"}`, "5", `{name: app, image: "nginx:1.28", env: [{name: A, value: a}]}`),
	}, {
		name:    "a co-owned field the chart changes",
		desired: yieldDeployment(`, annotations: {a: "1", b: "3"}`, "1", `{name: app, image: "nginx:1.28"}`),
		yielded: []string{".metadata.annotations.a", ".metadata.annotations.b", ".spec.replicas"},
		out:     yieldDeployment("", "", `{name: app, image: "nginx:1.28"}`),
		kept:    yieldDeployment(`, annotations: {a: "2", b: "1"}`, "5", `{name: app, image: "nginx:1.28"}`),
	}, {
		name:    "an item the patch added, its key kept",
		desired: yieldDeployment(ab, "1", `{name: app, image: "nginx:1.28", env: [{name: P, value: chart}]}`),
		yielded: []string{".metadata.annotations.a", ".spec.replicas", `.spec.template.spec.containers[name="app"].env[name="P"].value`},
		out:     yieldDeployment(`, annotations: {b: "1"}`, "", `{name: app, image: "nginx:1.28", env: [{name: P}]}`),
		kept:    yieldDeployment(`, annotations: {a: "2", b: "1"}`, "5", `{name: app, image: "nginx:1.28", env: [{name: P, value: p}]}`),
	}} {
		desired := jsonObj(t, tc.desired)
		out, yielded, err := a.YieldFields(live, desired, "helm", isFP)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(yielded) != 1 || yielded[0].Manager != fp || !reflect.DeepEqual(ownershipcore.FormatSet(yielded[0].Fields), tc.yielded) {
			t.Errorf("%s: yielded %+v, want %v to %s", tc.name, yielded, tc.yielded, fp)
			continue
		}
		if want := jsonObj(t, tc.out); !reflect.DeepEqual(out.Object, want.Object) {
			t.Errorf("%s: intent\n%v\nwant\n%v", tc.name, out.Object, want.Object)
		}
		kept, err := a.WithLiveValues(live, desired, yielded)
		if err != nil {
			t.Fatal(err)
		}
		if want := jsonObj(t, tc.kept); !reflect.DeepEqual(kept.Object, want.Object) {
			t.Errorf("%s: with live values\n%v\nwant\n%v", tc.name, kept.Object, want.Object)
		}
	}
	desired := jsonObj(t, yieldDeployment(ab, "1", `{name: app, image: "nginx:1.28"}`))
	if out, yielded, err := a.YieldFields(live, desired, "helm", func(string) bool { return false }); err != nil || yielded != nil || out != desired {
		t.Errorf("yielding to nobody: %v %v, want the intent itself", yielded, err)
	}
}
