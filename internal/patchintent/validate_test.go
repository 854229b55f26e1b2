/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchintent

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

// fakeSchema is a schemaInfo for table tests: structs and map lists by
// path (tokens joined with "/", list positions as "*").
type fakeSchema struct {
	structs map[string]bool
	keys    map[string][]string
}

func wildcard(path []string) string {
	out := make([]string, len(path))
	for i, t := range path {
		if isListPosition(t) {
			t = "*"
		}
		out[i] = t
	}
	return strings.Join(out, "/")
}

func (f fakeSchema) IsStruct(path []string) bool     { return f.structs[wildcard(path)] }
func (f fakeSchema) ListKeys(path []string) []string { return f.keys[wildcard(path)] }

var deploymentSchema = fakeSchema{
	structs: map[string]bool{
		"spec/template/spec/volumes/*/emptyDir":           true,
		"spec/template/spec/containers/*/securityContext": true,
		"spec/strategy": true,
	},
	keys: map[string][]string{
		"spec/template/spec/containers":       {"name"},
		"spec/template/spec/containers/*/env": {"name"},
		"spec/template/spec/volumes":          {"name"},
	},
}

var webTarget = patchTarget{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Namespace: "shop"}

// validatePatch refuses every input fieldops would otherwise ignore or
// never apply, with a message naming what is wrong (issue 15, defect 13),
// and accepts ordinary patches.
func TestValidatePatch(t *testing.T) {
	for _, tc := range []struct {
		name      string
		typ       v1alpha1.PatchType
		patch     string // YAML, as a user writes spec.patch ("" is none)
		want      string // substring of the error; "" means valid
		nilSchema bool
	}{
		// Accepted.
		{name: "apply", typ: "Apply", patch: `{spec: {replicas: 3}}`},
		{name: "apply with identity", typ: "Apply", patch: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: shop, labels: {a: b}}}`},
		{name: "merge", typ: "Merge", patch: `{metadata: {labels: {a: b}}}`},
		{name: "smp", typ: "StrategicMerge", patch: `{spec: {template: {spec: {containers: [{name: app, image: x}]}}}}`},
		{name: "ownerReferences", typ: "Merge", patch: `{metadata: {ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: c, uid: u}]}}`},
		{name: "emptyDir in a list item", typ: "Apply", patch: `{spec: {template: {spec: {volumes: [{name: scratch, emptyDir: {}}]}}}}`},
		{name: "empty list", typ: "Apply", patch: `{spec: {template: {spec: {tolerations: []}}}}`},
		{name: "json add", typ: "JSON", patch: `[{op: add, path: /metadata/labels/a, value: b}]`},
		{name: "json add -", typ: "JSON", patch: `[{op: add, path: /spec/template/spec/containers/0/env/-, value: {name: X, value: "1"}}]`},
		{name: "json copy", typ: "JSON", patch: `[{op: copy, from: /metadata/labels/app, path: /metadata/annotations/app}]`},
		{name: "json test+replace", typ: "JSON", patch: `[{op: test, path: /spec/replicas, value: 1}, {op: replace, path: /spec/replicas, value: 3}]`},
		{name: "json test reads status", typ: "JSON", patch: `[{op: test, path: /status/replicas, value: 1}, {op: replace, path: /spec/replicas, value: 3}]`},
		{name: "json copy from uid", typ: "JSON", patch: `[{op: copy, from: /metadata/uid, path: /metadata/annotations/uid}]`},
		{name: "json emptyDir", typ: "JSON", patch: `[{op: add, path: /spec/template/spec/volumes/-, value: {name: s, emptyDir: {}}}]`},
		{name: "escaped pointer", typ: "JSON", patch: `[{op: add, path: /metadata/annotations/example.com~1x, value: "1"}]`},

		// Empty patches.
		{name: "no patch", typ: "Apply", patch: ``, want: "the patch is empty"},
		{name: "null", typ: "Merge", patch: `null`, want: "the patch is empty"},
		{name: "empty object", typ: "Apply", patch: `{}`, want: "the patch is empty"},
		{name: "empty merge", typ: "Merge", patch: `{}`, want: "merge patch: the patch is empty"},
		{name: "empty json", typ: "JSON", patch: `[]`, want: "JSON patch: the patch is empty"},
		{name: "identity only", typ: "Apply", patch: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web}}`, want: "sets no field besides the target's identity"},
		{name: "identity only merge", typ: "Merge", patch: `{metadata: {namespace: shop}}`, want: "sets no field besides"},
		{name: "only test", typ: "JSON", patch: `[{op: test, path: /spec/replicas, value: 1}]`, want: "no operation writes a field"},

		// Another object.
		{name: "other name", typ: "Merge", patch: `{metadata: {name: api, labels: {a: b}}}`, want: `.metadata.name differs from the target's "web"`},
		{name: "other kind", typ: "StrategicMerge", patch: `{kind: StatefulSet, spec: {replicas: 1}}`, want: ".kind differs"},
		{name: "other namespace", typ: "Apply", patch: `{metadata: {namespace: kube-system, labels: {a: b}}}`, want: ".metadata.namespace differs"},
		{name: "json identity", typ: "JSON", patch: `[{op: replace, path: /metadata/name, value: api}]`, want: "changes the target's identity"},
		{name: "json whole object", typ: "JSON", patch: `[{op: replace, path: "", value: {a: b}}]`, want: "replaces the whole object"},

		// Status and server-set metadata.
		{name: "apply status", typ: "Apply", patch: `{status: {replicas: 3}}`, want: ".status: patches of status are not supported"},
		{name: "merge status", typ: "Merge", patch: `{spec: {replicas: 2}, status: {replicas: 3}}`, want: "patches of status"},
		{name: "smp status", typ: "StrategicMerge", patch: `{status: {replicas: 3}}`, want: "patches of status"},
		{name: "json status", typ: "JSON", patch: `[{op: replace, path: /status/replicas, value: 3}]`, want: "/status/replicas: patches of status"},
		{name: "json managedFields", typ: "JSON", patch: `[{op: replace, path: /metadata/managedFields, value: []}]`, want: "/metadata/managedFields is the apiserver's record of field ownership"},
		{name: "json managedFields item", typ: "JSON", patch: `[{op: add, path: /metadata/managedFields/-, value: {manager: x}}]`, want: "/metadata/managedFields is"},
		{name: "json uid", typ: "JSON", patch: `[{op: replace, path: /metadata/uid, value: x}]`, want: "/metadata/uid is set by the apiserver"},
		{name: "json resourceVersion", typ: "JSON", patch: `[{op: replace, path: /metadata/resourceVersion, value: "1"}]`, want: "/metadata/resourceVersion is set by the apiserver"},
		{name: "json creationTimestamp", typ: "JSON", patch: `[{op: add, path: /metadata/creationTimestamp, value: "2020-01-01T00:00:00Z"}]`, want: "/metadata/creationTimestamp"},
		{name: "json generation", typ: "JSON", patch: `[{op: replace, path: /metadata/generation, value: 9}]`, want: "/metadata/generation"},
		{name: "json selfLink", typ: "JSON", patch: `[{op: add, path: /metadata/selfLink, value: x}]`, want: "/metadata/selfLink"},
		{name: "json deletionTimestamp", typ: "JSON", patch: `[{op: add, path: /metadata/deletionTimestamp, value: "2020-01-01T00:00:00Z"}]`, want: "/metadata/deletionTimestamp is set by the apiserver when the object is deleted"},
		{name: "json deletionGracePeriodSeconds", typ: "JSON", patch: `[{op: add, path: /metadata/deletionGracePeriodSeconds, value: 0}]`, want: "/metadata/deletionGracePeriodSeconds"},
		{name: "json metadata with uid", typ: "JSON", patch: `[{op: add, path: /metadata, value: {name: web, uid: x}}]`, want: "/metadata/uid is set by the apiserver"},
		{name: "json copy to uid", typ: "JSON", patch: `[{op: copy, from: /metadata/name, path: /metadata/uid}]`, want: "/metadata/uid"},
		{name: "merge managedFields null", typ: "Merge", patch: `{metadata: {managedFields: null}}`, want: ".metadata.managedFields is the apiserver's record"},
		{name: "apply uid", typ: "Apply", patch: `{metadata: {uid: x, labels: {a: b}}}`, want: ".metadata.uid is set by the apiserver"},

		// Nulls: removals, as they arrive or once a client dropped them.
		{name: "merge data null", typ: "Merge", patch: `{data: {a: null}}`, want: ".data.a is null: a null asks for the field's removal (RFC 7386), and removals cannot be owned"},
		{name: "apply label null", typ: "Apply", patch: `{metadata: {labels: {a: null, b: c}}}`, want: ".metadata.labels.a is null"},
		{name: "smp null in a list item", typ: "StrategicMerge", patch: `{spec: {template: {spec: {containers: [{name: app, image: null}]}}}}`, want: ".spec.template.spec.containers[0].image is null"},
		{name: "json null value", typ: "JSON", patch: `[{op: replace, path: /data/a, value: null}]`, want: "op 1 (replace /data/a): /data/a is null"},
		{name: "json null inside a value", typ: "JSON", patch: `[{op: add, path: /metadata/labels, value: {a: null}}]`, want: "/metadata/labels/a is null"},
		{name: "json test of null", typ: "JSON", patch: `[{op: test, path: /data/a, value: null}, {op: add, path: /data/a, value: "1"}]`},
		{name: "merge data null, dropped", typ: "Merge", patch: `{data: {}}`, want: ".data is an empty object: an empty object sets no field: a null asks for the field's removal (RFC 7386), and clients such as kubectl apply drop nulls"},
		{name: "merge label null, pruned", typ: "Merge", patch: `{metadata: {labels: {}}}`, want: ".metadata.labels is an empty object"},
		{name: "managedFields null, pruned", typ: "Merge", patch: `{metadata: {}}`, want: ".metadata is an empty object"},
		{name: "struct outside a list", typ: "Apply", patch: `{spec: {strategy: {}}}`, want: ".spec.strategy is an empty object"},
		{name: "map in a list item", typ: "Apply", patch: `{spec: {template: {spec: {containers: [{name: app, resources: {limits: {}}}]}}}}`, want: ".spec.template.spec.containers[0].resources.limits is an empty object"},
		{name: "emptyDir without schema", typ: "Apply", patch: `{spec: {template: {spec: {volumes: [{name: s, emptyDir: {}}]}}}}`, nilSchema: true, want: "emptyDir is an empty object"},
		{name: "json empty value", typ: "JSON", patch: `[{op: add, path: /data, value: {}}]`, want: "/data is an empty object"},
		{name: "json nested empty", typ: "JSON", patch: `[{op: add, path: /metadata/labels, value: {a: b, c: {}}}]`, want: "/metadata/labels/c is an empty object"},
		{name: "json null value, dropped", typ: "JSON", patch: `[{op: add, path: /data/a}]`, want: "op 1 (add /data/a): the operation has no value: a null asks for the field's removal"},

		// Removals.
		{name: "json remove", typ: "JSON", patch: `[{op: remove, path: /metadata/labels/a}]`, want: "op 1 (remove /metadata/labels/a): the patch removes a field"},
		{name: "json move", typ: "JSON", patch: `[{op: add, path: /metadata/labels/x, value: "y"}, {op: move, from: /metadata/labels/a, path: /metadata/labels/b}]`, want: "op 2 (move from /metadata/labels/a to /metadata/labels/b): move removes its source /metadata/labels/a"},

		// Malformed.
		{name: "list for apply", typ: "Apply", patch: `[{op: add, path: /x, value: 1}]`, want: "apply patch: must be an object"},
		{name: "object for json", typ: "JSON", patch: `{spec: {}}`, want: "JSON patch: must be a list"},
		{name: "unknown op", typ: "JSON", patch: `[{op: frobnicate, path: /spec/replicas}]`, want: `JSON patch op 1: unknown op "frobnicate"`},
		{name: "no path", typ: "JSON", patch: `[{op: add, value: 1}]`, want: "no path"},
		{name: "bad pointer", typ: "JSON", patch: `[{op: add, path: spec/replicas, value: 1}]`, want: "must start with /"},
		{name: "bad escape", typ: "JSON", patch: `[{op: add, path: /a~2, value: 1}]`, want: "~ must be escaped"},
		{name: "copy without from", typ: "JSON", patch: `[{op: copy, path: /a}]`, want: "no from"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var raw []byte
			if tc.patch != "" {
				var err error
				if raw, err = yaml.YAMLToJSON([]byte(tc.patch)); err != nil {
					t.Fatal(err)
				}
			}
			var sch schemaInfo = deploymentSchema
			if tc.nilSchema {
				sch = nil
			}
			err := validatePatch(tc.typ, raw, webTarget, sch)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted; want an error with %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}
