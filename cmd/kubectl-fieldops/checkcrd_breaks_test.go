/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// Schemas of spec.ports for the transitions of TestCheckCRDBreaks, each
// one the apiserver accepts (a list-map key is required; a set's items
// are scalars or atomic maps).
const (
	portItems   = "items: {type: object, required: [name], properties: {name: {type: string}, port: {type: integer}, protocol: {type: string}}}"
	portsAtomic = "type: array\n" + portItems
	portsByName = "type: array\nx-kubernetes-list-type: map\nx-kubernetes-list-map-keys: [name]\n" + portItems
	portsByBoth = "type: array\nx-kubernetes-list-type: map\nx-kubernetes-list-map-keys: [name, protocol]\nitems: {type: object, required: [name, protocol], properties: {name: {type: string}, port: {type: integer}, protocol: {type: string}}}"
	portsSet    = "type: array\nx-kubernetes-list-type: set\nitems: {type: object, x-kubernetes-map-type: atomic, properties: {name: {type: string}, port: {type: integer}, protocol: {type: string}}}"
	namesAtomic = "type: array\nitems: {type: string}"
	namesSet    = "type: array\nx-kubernetes-list-type: set\nitems: {type: string}"
	labelsMap   = "type: object\nadditionalProperties: {type: string}"
	labelsAtom  = "type: object\nx-kubernetes-map-type: atomic\nadditionalProperties: {type: string}"
)

// breakCRD is a CRD of <plural>.breaks.example.com whose spec.ports has
// the given schema.
func breakCRD(t *testing.T, plural, ports string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	return portsCRD(t, "breaks.example.com", plural, ports)
}

// portsCRD is a CRD of <plural>.<group> (its kind: plural without its
// last letter, capitalized) whose spec.ports has the given schema.
func portsCRD(t *testing.T, group, plural, ports string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	kind := strings.ToUpper(plural[:1]) + plural[1:len(plural)-1]
	y := `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ` + plural + `.` + group + `}
spec:
  group: ` + group + `
  names: {kind: ` + kind + `, listKind: ` + kind + `List, plural: ` + plural + `, singular: ` + plural[:len(plural)-1] + `}
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
              ports:
` + indentBy(ports, "                ")
	c := &apiextv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(y), c); err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	return c
}

func indentBy(s, by string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = by + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

// gadgets writes objects of one kind of TestCheckCRDBreaks.
type gadgets struct {
	t    *testing.T
	kind string
}

func (g gadgets) obj(name, ports string) *unstructured.Unstructured {
	g.t.Helper()
	u := &unstructured.Unstructured{}
	y := fmt.Sprintf(`{"apiVersion": "breaks.example.com/v1", "kind": %q, "metadata": {"name": %q, "namespace": "breaks"}`, g.kind, name)
	if ports != "" {
		y += `, "spec": {"ports": ` + ports + `}`
	}
	if err := yaml.Unmarshal([]byte(y+"}"), &u.Object); err != nil {
		g.t.Fatal(err)
	}
	return u
}

// apply applies spec.ports of name as manager, forced or not.
func (g gadgets) apply(manager, name, ports string, force bool) (*unstructured.Unstructured, error) {
	u := g.obj(name, ports)
	opts := []client.ApplyOption{client.FieldOwner(manager)}
	if force {
		opts = append(opts, client.ForceOwnership)
	}
	return u, k8s.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u), opts...)
}

// label applies only a label to name, as another manager.
func (g gadgets) label(name string) error {
	u := g.obj(name, "")
	u.SetLabels(map[string]string{"team": "x"})
	return k8s.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("labeller"))
}

// merge merge-patches a label onto name (an update, not an apply).
func (g gadgets) merge(name string) error {
	return k8s.Patch(context.Background(), g.obj(name, ""), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":"yes"}}}`)), client.FieldOwner("kubectl-edit"))
}

func (g gadgets) live(name string) *unstructured.Unstructured {
	g.t.Helper()
	u := g.obj(name, "")
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(u), u); err != nil {
		g.t.Fatal(err)
	}
	return u
}

// fields is name's managedFields as "manager: fieldsV1" lines.
func (g gadgets) fields(name string) string {
	var out []string
	for _, e := range g.live(name).GetManagedFields() {
		out = append(out, e.Manager+": "+e.FieldsV1.GetRawString())
	}
	return strings.Join(out, "\n")
}

func (g gadgets) ports(name string) string {
	b, _ := json.Marshal(g.live(name).Object["spec"].(map[string]interface{})["ports"])
	return string(b)
}

// Every transition check-crd reports as a Break, proven on the control
// plane: the objects are written under the old CRD, check-crd reports the
// break for the object and path, the CRD change is applied, and the write
// the report names as failing fails (or does what the report says).
func TestCheckCRDBreaks(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "breaks")
	for _, c := range []struct {
		name, plural string
		old, next    string
		// applies are (manager, spec.ports) applied to the object "o" in
		// order, before the change.
		applies [][2]string
		// canary is spec.ports of the object "canary", applied by
		// "canary" before the change and again until newSchema says the
		// apiserver applies the new CRD.
		canary    string
		newSchema func(fields string, err error) bool
		// finding is the break check-crd reports for o: "path: reason
		// prefix".
		finding string
		// prove tries the failing write once the new schema is served.
		prove func(t *testing.T, g gadgets)
	}{{
		name: "map to atomic: entries of two managers", plural: "maptoatomics", old: portsByName, next: portsAtomic,
		applies: [][2]string{{"a", `[{"name": "x", "port": 1}]`}, {"b", `[{"name": "y", "port": 2}]`}},
		canary:  `[{"name": "c"}]`, newSchema: func(f string, err error) bool {
			return err == nil && strings.Contains(f, `canary: {"f:spec":{"f:ports":{}}}`)
		},
		finding: `.spec.ports: "a" (Apply), "b" (Apply) own entries of it; as atomic, the first write of the object after the change makes each of them own it whole`,
		prove: func(t *testing.T, g gadgets) {
			// The entries are not emptied: the values stay as they were.
			if got := g.ports("o"); got != `[{"name":"x","port":1},{"name":"y","port":2}]` {
				t.Errorf("ports after the change: %s", got)
			}
			// Any write (here a label) re-encodes managedFields: a and b
			// now both own the list whole.
			if err := g.label("o"); err != nil {
				t.Fatal(err)
			}
			if f := g.fields("o"); !strings.Contains(f, `a: {"f:spec":{"f:ports":{}}}`) || !strings.Contains(f, `b: {"f:spec":{"f:ports":{}}}`) {
				t.Errorf("managedFields after a write:\n%s", f)
			}
			// a's routine apply of its entry now conflicts with b ...
			if _, err := g.apply("a", "o", `[{"name": "x", "port": 10}]`, false); err == nil || !strings.Contains(err.Error(), `conflict with "b"`) {
				t.Errorf("a's apply of its entry: %v, want a conflict with b", err)
			}
			// ... and forced, it drops b's entry.
			if _, err := g.apply("a", "o", `[{"name": "x", "port": 10}]`, true); err != nil {
				t.Fatal(err)
			}
			if got := g.ports("o"); got != `[{"name":"x","port":10}]` {
				t.Errorf("ports after a's forced apply: %s, want b's entry gone", got)
			}
		},
	}, {
		name: "set to atomic: values of two managers", plural: "settoatomics", old: namesSet, next: namesAtomic,
		applies: [][2]string{{"a", `["x"]`}, {"b", `["y"]`}},
		canary:  `["c"]`, newSchema: func(f string, err error) bool {
			return err == nil && strings.Contains(f, `canary: {"f:spec":{"f:ports":{}}}`)
		},
		finding: `.spec.ports: "a" (Apply), "b" (Apply) own entries of it; as atomic`,
		prove: func(t *testing.T, g gadgets) {
			if _, err := g.apply("a", "o", `["x", "z"]`, false); err == nil || !strings.Contains(err.Error(), `conflict with "b"`) {
				t.Errorf("a's apply of its values: %v, want a conflict with b", err)
			}
		},
	}, {
		name: "granular to atomic map: keys of two managers", plural: "maptoatomicmaps", old: labelsMap, next: labelsAtom,
		applies: [][2]string{{"a", `{"x": "1"}`}, {"b", `{"y": "2"}`}},
		canary:  `{"c": "1"}`, newSchema: func(f string, err error) bool {
			return err == nil && strings.Contains(f, `canary: {"f:spec":{"f:ports":{}}}`)
		},
		finding: `.spec.ports: "a" (Apply), "b" (Apply) own entries of it; as atomic`,
		prove: func(t *testing.T, g gadgets) {
			if _, err := g.apply("a", "o", `{"x": "10"}`, false); err == nil || !strings.Contains(err.Error(), `conflict with "b"`) {
				t.Errorf("a's apply of its key: %v, want a conflict with b", err)
			}
		},
	}, {
		name: "map to set: map elements", plural: "maptosets", old: portsByName, next: portsSet,
		applies: [][2]string{{"a", `[{"name": "x", "port": 1}]`}},
		canary:  `[{"name": "c"}]`, newSchema: func(_ string, err error) bool { return err != nil && strings.Contains(err.Error(), "map type") },
		finding: `.spec.ports[0]: associative list without keys has an element that's a map type; updates and patches still succeed, but clear the object's managedFields`,
		prove: func(t *testing.T, g gadgets) {
			if err := g.label("o"); err == nil || !strings.Contains(err.Error(), "associative list without keys has an element that's a map type") {
				t.Errorf("apply of a label: %v, want the reported break", err)
			}
			if err := g.merge("o"); err != nil {
				t.Fatalf("merge patch: %v", err)
			}
			if f := g.fields("o"); f != "" {
				t.Errorf("managedFields after a merge patch: %s, want none", f)
			}
		},
	}, {
		name: "atomic to set: map elements", plural: "atomictosets", old: portsAtomic, next: portsSet,
		applies: [][2]string{{"a", `[{"name": "x", "port": 1}]`}},
		canary:  `[{"name": "c"}]`, newSchema: func(_ string, err error) bool { return err != nil && strings.Contains(err.Error(), "map type") },
		finding: `.spec.ports[0]: associative list without keys has an element that's a map type`,
		prove: func(t *testing.T, g gadgets) {
			if _, err := g.apply("a", "o", `[{"name": "x", "port": 1}]`, true); err == nil || !strings.Contains(err.Error(), "associative list without keys has an element that's a map type") {
				t.Errorf("a's apply: %v, want the reported break", err)
			}
		},
	}, {
		name: "set to map: scalar elements", plural: "settomaps", old: namesSet, next: portsByName,
		applies: [][2]string{{"a", `["x"]`}},
		canary:  `["c"]`, newSchema: func(_ string, err error) bool { return err != nil && strings.Contains(err.Error(), "non-map elements") },
		finding: `.spec.ports[0]: associative list with keys may not have non-map elements (the element is a string)`,
		prove: func(t *testing.T, g gadgets) {
			if err := g.label("o"); err == nil || !strings.Contains(err.Error(), "associative list with keys may not have non-map elements") {
				t.Errorf("apply of a label: %v, want the reported break", err)
			}
		},
	}, {
		name: "new required map key: an element lacks it", plural: "newkeys", old: portsByName, next: portsByBoth,
		applies: [][2]string{{"a", `[{"name": "x", "port": 1, "protocol": "TCP"}, {"name": "y", "port": 2}]`}},
		canary:  `[{"name": "c", "protocol": "TCP"}]`, newSchema: func(f string, err error) bool {
			return err == nil && strings.Contains(f, `k:{\"name\":\"c\",\"protocol\":\"TCP\"}`)
		},
		finding: `.spec.ports[1]: the element omits the key fields ["protocol"], which the new schema requires`,
		prove: func(t *testing.T, g gadgets) {
			if err := g.merge("o"); err == nil || !strings.Contains(err.Error(), "spec.ports[1].protocol: Required value") {
				t.Errorf("merge patch: %v, want spec.ports[1].protocol: Required value", err)
			}
			if err := g.label("o"); err == nil || !strings.Contains(err.Error(), "spec.ports[1].protocol: Required value") {
				t.Errorf("apply of a label: %v, want spec.ports[1].protocol: Required value", err)
			}
		},
	}, {
		name: "atomic to map: duplicates one manager applied", plural: "duptomaps", old: portsAtomic, next: portsByName,
		applies: [][2]string{{"a", `[{"name": "x", "port": 1}, {"name": "x", "port": 2}]`}},
		canary:  `[{"name": "c"}]`, newSchema: func(f string, err error) bool { return err == nil && strings.Contains(f, `k:{\"name\":\"c\"}`) },
		finding: `.spec.ports[1]: duplicate entries for key [name="x"] (elements 0, 1): "a" (Apply) applied them all, so its next apply of the same configuration fails`,
		prove: func(t *testing.T, g gadgets) {
			// Updates still pass ...
			if err := g.merge("o"); err != nil {
				t.Errorf("merge patch: %v", err)
			}
			// ... but a's apply of what it applied before fails.
			if _, err := g.apply("a", "o", `[{"name": "x", "port": 1}, {"name": "x", "port": 2}]`, true); err == nil || !strings.Contains(err.Error(), `.spec.ports: duplicate entries for key [name="x"]`) {
				t.Errorf("a's apply: %v, want the reported break", err)
			}
			// An apply naming the key once replaces both entries.
			if _, err := g.apply("b", "o", `[{"name": "x", "port": 5}]`, false); err != nil {
				t.Fatal(err)
			}
			if got := g.ports("o"); got != `[{"name":"x","port":5}]` {
				t.Errorf("ports after b's apply: %s", got)
			}
		},
	}, {
		name: "fewer map keys: duplicates one manager applied", plural: "fewerkeys", old: portsByBoth, next: portsByName,
		applies: [][2]string{{"a", `[{"name": "x", "port": 1, "protocol": "TCP"}, {"name": "x", "port": 1, "protocol": "UDP"}]`}},
		canary:  `[{"name": "c", "protocol": "TCP"}]`, newSchema: func(f string, err error) bool { return err == nil && strings.Contains(f, `k:{\"name\":\"c\"}`) },
		finding: `.spec.ports[1]: duplicate entries for key [name="x"] (elements 0, 1): "a" (Apply) applied them all`,
		prove: func(t *testing.T, g gadgets) {
			if _, err := g.apply("a", "o", `[{"name": "x", "port": 1, "protocol": "TCP"}, {"name": "x", "port": 1, "protocol": "UDP"}]`, true); err == nil || !strings.Contains(err.Error(), `duplicate entries for key [name="x"]`) {
				t.Errorf("a's apply: %v, want the reported break", err)
			}
		},
	}, {
		name: "atomic to set: duplicates one manager applied", plural: "duptosets", old: namesAtomic, next: namesSet,
		applies: [][2]string{{"a", `["x", "x"]`}},
		canary:  `["c"]`, newSchema: func(f string, err error) bool { return err == nil && strings.Contains(f, `v:\"c\"`) },
		finding: `.spec.ports[1]: duplicate entries for key [="x"] (elements 0, 1): "a" (Apply) applied them all`,
		prove: func(t *testing.T, g gadgets) {
			if _, err := g.apply("a", "o", `["x", "x"]`, true); err == nil || !strings.Contains(err.Error(), `.spec.ports: duplicate entries for key [="x"]`) {
				t.Errorf("a's apply: %v, want the reported break", err)
			}
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			old := breakCRD(t, c.plural, c.old)
			if err := k8s.Create(ctx, old); err != nil {
				t.Fatal(err)
			}
			if err := envtest.WaitForCRDs(restConfig, []*apiextv1.CustomResourceDefinition{old}, envtest.CRDInstallOptions{MaxTime: 30 * time.Second, PollInterval: 50 * time.Millisecond}); err != nil {
				t.Fatal(err)
			}
			g := gadgets{t: t, kind: old.Spec.Names.Kind}
			for _, a := range c.applies {
				if _, err := g.apply(a[0], "o", a[1], false); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := g.apply("canary", "canary", c.canary, false); err != nil {
				t.Fatal(err)
			}

			next := breakCRD(t, c.plural, c.next)
			b, err := yaml.Marshal(next)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), c.plural+".yaml")
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}
			out, stderr, err := plugin(t, "check-crd", "-f", file, "-o", "json")
			if !errors.Is(err, ErrWouldBreak) {
				t.Fatalf("check-crd: %v, want ErrWouldBreak\n%s%s", err, out, stderr)
			}
			var findings []CRDFinding
			if err := json.Unmarshal([]byte(out), &findings); err != nil {
				t.Fatal(err)
			}
			reported := false
			for _, f := range findings {
				if f.Name == "o" && f.Severity == "Break" && strings.HasPrefix(f.Path+": "+f.Reason, c.finding) {
					reported = true
				}
			}
			if !reported {
				t.Fatalf("check-crd did not report %q for o:\n%s", c.finding, out)
			}

			served := &apiextv1.CustomResourceDefinition{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: old.Name}, served); err != nil {
				t.Fatal(err)
			}
			served.Spec.Versions = next.Spec.Versions
			if err := k8s.Update(ctx, served); err != nil {
				t.Fatalf("the apiserver refuses the CRD change: %v", err)
			}
			// The apiserver serves the new schema once the canary's
			// apply shows it.
			err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				_, err := g.apply("canary", "canary", c.canary, true)
				f := ""
				if err == nil {
					f = g.fields("canary")
				}
				return c.newSchema(f, err), nil
			})
			if err != nil {
				t.Fatalf("the new schema never took effect: %v", err)
			}
			c.prove(t, g)
		})
	}
}
