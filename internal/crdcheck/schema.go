/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package crdcheck

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Topology is the Server-Side Apply semantics of one list or map of a
// schema, defaults filled in: a list without x-kubernetes-list-type is
// atomic, an object without x-kubernetes-map-type is granular (SSA docs,
// "Merge strategy").
type Topology struct {
	// Type is atomic, set or map for a list; atomic or granular for an
	// object.
	Type string
	// Keys are x-kubernetes-list-map-keys of a map list.
	Keys []string
}

func (t Topology) String() string {
	if t.Type == "map" {
		return "map" + "[" + strings.Join(t.Keys, ",") + "]"
	}
	return t.Type
}

// Step is one step of a schema path: a property, the items of a list
// ("[*]") or the values of a map ("{*}", additionalProperties).
type Step struct {
	Field string
	Items bool
	// Values is additionalProperties.
	Values bool
}

// Path is a schema path from the object's root.
type Path []Step

// String renders the path as .spec.ports[*].name, .spec.labels{*}.
func (p Path) String() string {
	var b strings.Builder
	for _, s := range p {
		switch {
		case s.Items:
			b.WriteString("[*]")
		case s.Values:
			b.WriteString("{*}")
		default:
			b.WriteString("." + s.Field)
		}
	}
	if b.Len() == 0 {
		return "."
	}
	return b.String()
}

// Change is a list or map of one served version whose topology differs
// between the served CRD and the new one.
type Change struct {
	Version string
	Path    Path
	// List is true for a list (x-kubernetes-list-type), false for an
	// object (x-kubernetes-map-type).
	List     bool
	Old, New Topology
	// KeyDefaults are the map keys the new item schema gives a default:
	// an entry may omit them (structured-merge-diff fills them in).
	KeyDefaults []string
}

func (c Change) String() string {
	return fmt.Sprintf("%s %s: %s → %s", c.Version, c.Path, c.Old, c.New)
}

// Changes compares the schemas of every version the served CRD serves
// with the same version of the new CRD and returns each list and map
// whose topology changes, ordered by version and path. A version the new
// CRD drops or that has no schema is skipped.
func Changes(served, next *apiextv1.CustomResourceDefinition) []Change {
	var out []Change
	for _, v := range served.Spec.Versions {
		if !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		i := slices.IndexFunc(next.Spec.Versions, func(n apiextv1.CustomResourceDefinitionVersion) bool { return n.Name == v.Name })
		if i < 0 || next.Spec.Versions[i].Schema == nil || next.Spec.Versions[i].Schema.OpenAPIV3Schema == nil {
			continue
		}
		walk(v.Name, nil, v.Schema.OpenAPIV3Schema, next.Spec.Versions[i].Schema.OpenAPIV3Schema, &out)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Version != out[j].Version {
			return out[i].Version < out[j].Version
		}
		return out[i].Path.String() < out[j].Path.String()
	})
	return out
}

func listTopology(s *apiextv1.JSONSchemaProps) Topology {
	t := Topology{Type: "atomic"}
	if s.XListType != nil && *s.XListType != "" {
		t.Type = *s.XListType
	}
	if t.Type == "map" {
		t.Keys = s.XListMapKeys
	}
	return t
}

func mapTopology(s *apiextv1.JSONSchemaProps) Topology {
	if s.XMapType != nil && *s.XMapType != "" {
		return Topology{Type: *s.XMapType}
	}
	return Topology{Type: "granular"}
}

// walk appends to out the changes of list and map topology between old
// and next, the schemas at path, and walks the properties, items and
// additional properties both have.
func walk(version string, path Path, old, next *apiextv1.JSONSchemaProps, out *[]Change) {
	if old == nil || next == nil {
		return
	}
	path = slices.Clip(path)
	switch {
	case old.Type == "array" && next.Type == "array":
		walkArray(version, path, old, next, out)
	case old.Type == "object" && next.Type == "object":
		walkObject(version, path, old, next, out)
	}
}

// walkArray appends a change of list type or keys (with the keys that
// have defaults in next) and walks the items.
func walkArray(version string, path Path, old, next *apiextv1.JSONSchemaProps, out *[]Change) {
	o, n := listTopology(old), listTopology(next)
	if o.Type != n.Type || !slices.Equal(o.Keys, n.Keys) {
		c := Change{Version: version, Path: path, List: true, Old: o, New: n}
		if n.Type == "map" && next.Items != nil && next.Items.Schema != nil {
			for _, k := range n.Keys {
				if p, ok := next.Items.Schema.Properties[k]; ok && p.Default != nil {
					c.KeyDefaults = append(c.KeyDefaults, k)
				}
			}
		}
		*out = append(*out, c)
	}
	if old.Items != nil && next.Items != nil {
		walk(version, append(path, Step{Items: true}), old.Items.Schema, next.Items.Schema, out)
	}
}

// walkObject appends a change of map type and walks the properties both
// have, sorted, and the additional properties.
func walkObject(version string, path Path, old, next *apiextv1.JSONSchemaProps, out *[]Change) {
	// The root object and metadata are the apiserver's, not the schema's.
	if len(path) > 0 {
		if o, n := mapTopology(old), mapTopology(next); o.Type != n.Type {
			*out = append(*out, Change{Version: version, Path: path, Old: o, New: n})
		}
	}
	names := make([]string, 0, len(next.Properties))
	for name := range next.Properties {
		if _, ok := old.Properties[name]; ok && (len(path) != 0 || name != "metadata") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		o, n := old.Properties[name], next.Properties[name]
		walk(version, append(path, Step{Field: name}), &o, &n, out)
	}
	if old.AdditionalProperties != nil && next.AdditionalProperties != nil {
		walk(version, append(path, Step{Values: true}), old.AdditionalProperties.Schema, next.AdditionalProperties.Schema, out)
	}
}
