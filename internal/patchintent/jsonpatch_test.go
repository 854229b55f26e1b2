/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchintent

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"sigs.k8s.io/yaml"
)

const liveDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: app
        image: nginx
        env: [{name: A, value: "1"}]
        ports: [{containerPort: 80, protocol: TCP}]
      tolerations: [{key: a, operator: Exists}]
      volumes: [{name: cache, emptyDir: {}}]
  finalizers: [x]
`

func toJSON(t *testing.T, y string) []byte {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func decodeJSON(t *testing.T, b []byte) interface{} {
	t.Helper()
	var v interface{}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// applyJSONPatchOnce: every operation applies once and then holds; the
// result of a second (and third) application to its own output is that
// output (issue 15, defect 3).
func TestApplyJSONPatchOnce(t *testing.T) {
	always := func(interface{}, []string) bool { return true }
	for _, tc := range []struct {
		name  string
		live  string // YAML edits of liveDeployment, as a JSON merge patch ("" none)
		patch string
		owned ownedFunc
		want  map[string]string // JSON pointer → YAML of the expected value after the first application
		err   string            // substring of the first application's error
	}{
		{
			name:  "add - to a map list",
			patch: `[{op: add, path: /spec/template/spec/containers/0/env/-, value: {name: B, value: "2"}}]`,
			want:  map[string]string{"/spec/template/spec/containers/0/env": `[{name: A, value: "1"}, {name: B, value: "2"}]`},
		},
		{
			name:  "add - to a map list whose item drifted: merged in place, no second item",
			live:  `{spec: {template: {spec: {containers: [{name: app, image: nginx, env: [{name: A, value: "1"}, {name: B, value: "drift"}]}]}}}}`,
			patch: `[{op: add, path: /spec/template/spec/containers/0/env/-, value: {name: B, value: "2"}}]`,
			want:  map[string]string{"/spec/template/spec/containers/0/env": `[{name: A, value: "1"}, {name: B, value: "2"}]`},
		},
		{
			name:  "add - of an item the server defaults: present",
			patch: `[{op: add, path: /spec/template/spec/containers/0/ports/-, value: {containerPort: 80}}]`,
			want:  map[string]string{"/spec/template/spec/containers/0/ports": `[{containerPort: 80, protocol: TCP}]`},
		},
		{
			name:  "add at an index",
			patch: `[{op: add, path: /spec/template/spec/containers/0/env/0, value: {name: Z, value: "0"}}]`,
			want:  map[string]string{"/spec/template/spec/containers/0/env": `[{name: Z, value: "0"}, {name: A, value: "1"}]`},
		},
		{
			name:  "add - to an atomic list",
			patch: `[{op: add, path: /spec/template/spec/tolerations/-, value: {key: b, operator: Exists, effect: NoSchedule}}]`,
			want:  map[string]string{"/spec/template/spec/tolerations": `[{key: a, operator: Exists}, {key: b, operator: Exists, effect: NoSchedule}]`},
		},
		{
			name:  "add - to a set",
			patch: `[{op: add, path: /spec/finalizers/-, value: z}]`,
			want:  map[string]string{"/spec/finalizers": `[x, z]`},
		},
		{
			name:  "add - of a value already there",
			patch: `[{op: add, path: /spec/finalizers/-, value: x}]`,
			want:  map[string]string{"/spec/finalizers": `[x]`},
		},
		{
			name:  "copy of an item into a list",
			patch: `[{op: add, path: /spec/template/spec/containers/0/list, value: []}, {op: copy, from: /spec/template/spec/tolerations/0, path: /spec/template/spec/containers/0/list/-}]`,
			want:  map[string]string{"/spec/template/spec/containers/0/list": `[{key: a, operator: Exists}]`},
		},
		{
			name:  "copy to a key",
			patch: `[{op: copy, from: /metadata/labels/app, path: /metadata/labels/app2}]`,
			want:  map[string]string{"/metadata/labels/app2": `web`},
		},
		{
			name:  "copy into a list twice is once",
			patch: `[{op: copy, from: /spec/template/spec/tolerations/0, path: /spec/template/spec/tolerations/-}]`,
			want:  map[string]string{"/spec/template/spec/tolerations": `[{key: a, operator: Exists}]`},
		},
		{
			name:  "test then replace: the test guards the first application only",
			patch: `[{op: test, path: /spec/replicas, value: 1}, {op: replace, path: /spec/replicas, value: 3}]`,
			owned: always,
			want:  map[string]string{"/spec/replicas": `3`},
		},
		{
			name:  "test then add below it",
			patch: `[{op: test, path: /spec/template/spec/tolerations, value: [{key: a, operator: Exists}]}, {op: add, path: /spec/template/spec/tolerations/-, value: {key: b, operator: Exists}}]`,
			owned: always,
			want:  map[string]string{"/spec/template/spec/tolerations": `[{key: a, operator: Exists}, {key: b, operator: Exists}]`},
		},
		{
			name:  "a failing test stops the first application",
			patch: `[{op: test, path: /spec/replicas, value: 2}, {op: replace, path: /spec/replicas, value: 3}]`,
			owned: always, // owned is asked only for a later application
			err:   "op 1 (test /spec/replicas): testing value /spec/replicas failed",
		},
		{
			name:  "replace keeps its value",
			patch: `[{op: replace, path: /spec/template/spec/containers/0/image, value: nginx:2}, {op: add, path: /metadata/labels/tier, value: web}]`,
			want:  map[string]string{"/spec/template/spec/containers/0/image": `nginx:2`, "/metadata/labels/tier": `web`},
		},
		{
			name:  "a missing parent is RFC 6902's error",
			patch: `[{op: add, path: /spec/template/spec/initContainers/-, value: {name: init}}]`,
			err:   "op 1 (add /spec/template/spec/initContainers/-)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := toJSON(t, liveDeployment)
			if tc.live != "" {
				var err error
				// A merge patch replaces lists whole.
				if doc, err = jsonpatch.MergePatch(doc, toJSON(t, tc.live)); err != nil {
					t.Fatal(err)
				}
			}
			ops, err := decodeJSONPatch(toJSON(t, tc.patch))
			if err != nil {
				t.Fatal(err)
			}
			if err := validateJSONOps(ops, deploymentSchema); err != nil {
				t.Fatal(err)
			}
			owned := tc.owned
			if owned == nil {
				owned = func(interface{}, []string) bool { return false }
			}
			first, err := applyJSONPatchOnce(ops, doc, deploymentSchema, func(interface{}, []string) bool { return false })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := decodeJSON(t, first)
			for p, y := range tc.want {
				tokens, _ := parsePointer(p)
				if v := lookup(got, tokens); !reflect.DeepEqual(v, decodeJSON(t, toJSON(t, y))) {
					t.Errorf("%s = %v, want %s", p, v, y)
				}
			}
			// Again, against its own output: nothing changes.
			out := first
			for i := 0; i < 2; i++ {
				if out, err = applyJSONPatchOnce(ops, out, deploymentSchema, owned); err != nil {
					t.Fatalf("application %d: %v", i+2, err)
				}
				if !reflect.DeepEqual(decodeJSON(t, out), got) {
					t.Fatalf("application %d changed the object:\n%s\nfirst:\n%s", i+2, out, first)
				}
			}
		})
	}
}

// A test of a field no later operation writes is checked at every
// application, and a guard of a field the patch has not written yet
// (owned says no) is too.
func TestApplyJSONPatchOnceKeepsTests(t *testing.T) {
	doc := toJSON(t, liveDeployment)
	never := func(interface{}, []string) bool { return false }
	for _, tc := range []struct {
		name, patch string
		owned       ownedFunc
	}{
		{"test of an unwritten field", `[{op: test, path: /metadata/labels/app, value: api}, {op: replace, path: /spec/replicas, value: 3}]`, func(interface{}, []string) bool { return true }},
		{"test of a field not owned yet", `[{op: test, path: /spec/replicas, value: 2}, {op: replace, path: /spec/replicas, value: 3}]`, never},
		{"test after the write", `[{op: replace, path: /spec/replicas, value: 3}, {op: test, path: /spec/replicas, value: 2}]`, func(interface{}, []string) bool { return true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, err := decodeJSONPatch(toJSON(t, tc.patch))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := applyJSONPatchOnce(ops, doc, deploymentSchema, tc.owned); err == nil || !strings.Contains(err.Error(), "test failed") {
				t.Fatalf("error %v, want a failed test", err)
			}
		})
	}
}

// The owned callback is asked with the path of the test and the document
// as the operations before it left it.
func TestApplyJSONPatchOnceAsksOwned(t *testing.T) {
	ops, err := decodeJSONPatch(toJSON(t, `[{op: add, path: /metadata/labels/x, value: "y"}, {op: test, path: /spec/template/spec/containers/0/env/0/value, value: "0"}, {op: replace, path: /spec/template/spec/containers/0/env/0/value, value: "9"}]`))
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	_, err = applyJSONPatchOnce(ops, toJSON(t, liveDeployment), deploymentSchema, func(doc interface{}, path []string) bool {
		asked = append(asked, pointer(path))
		if lookup(doc, []string{"metadata", "labels", "x"}) != "y" {
			t.Error("owned was asked about the document before the operations that precede the test")
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(asked, []string{"/spec/template/spec/containers/0/env/0/value"}) {
		t.Fatalf("owned asked about %v", asked)
	}
}

// Errors name operations and paths, never values of the target (a patch
// may copy from a Secret).
func TestApplyJSONPatchOnceErrorsHideValues(t *testing.T) {
	secret := toJSON(t, `{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {password: aHVudGVyMg==}}`)
	for _, patch := range []string{
		`[{op: test, path: /data/password, value: x}, {op: add, path: /metadata/labels, value: {a: b}}]`,
		`[{op: copy, from: /data/password, path: /metadata/annotations/p}]`,
		`[{op: copy, from: /data/password, path: /data/other/-}]`,
		`[{op: replace, path: /data/password/0, value: x}]`,
	} {
		ops, err := decodeJSONPatch(toJSON(t, patch))
		if err != nil {
			t.Fatal(err)
		}
		_, err = applyJSONPatchOnce(ops, secret, nil, nil)
		if err == nil {
			t.Fatalf("%s: applied", patch)
		}
		if strings.Contains(err.Error(), "aHVudGVyMg") {
			t.Fatalf("%s: error quotes the value: %v", patch, err)
		}
	}
}
