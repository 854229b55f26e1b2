/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command ignore-policy-annotations is a fieldops ignorable-paths plugin,
// and the template for writing one: it names the annotations policy
// engines and service meshes put on objects (Kyverno's
// policies.kyverno.io/*, Istio's sidecar.istio.io/* and istio.io/rev), on
// the object and on a pod template, so fieldops neither sets nor fights
// them (Strimzi issue #6938).
//
// Build it with `make plugins`, pin its SHA-256 in the --plugin-config
// file, and list it in `ignorePlugins` of a FieldPatch or ManagedWorkload.
package main

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/fieldops/fieldops/ownershipcore/fieldset"
	"github.com/fieldops/fieldops/plugins/sdk"
)

// prefixes of annotation keys to leave alone; a key equal to an entry
// without a trailing "/" matches exactly.
var prefixes = []string{"policies.kyverno.io/", "sidecar.istio.io/", "istio.io/rev"}

// Paths is the plugin's strategy.IgnorablePaths.
type Paths struct{}

// Paths names every matching annotation of obj and of its pod template.
func (Paths) Paths(_ context.Context, obj *unstructured.Unstructured) (*fieldpath.Set, error) {
	var paths []string
	for _, at := range [][]string{{"metadata"}, {"spec", "template", "metadata"}} {
		annotations, _, _ := unstructured.NestedStringMap(obj.Object, append(at, "annotations")...)
		for key := range annotations {
			if matches(key) {
				paths = append(paths, "."+strings.Join(at, ".")+`.annotations["`+key+`"]`)
			}
		}
	}
	return fieldset.ParsePathSet(paths)
}

func matches(key string) bool {
	for _, p := range prefixes {
		if strings.HasSuffix(p, "/") && strings.HasPrefix(key, p) || key == p {
			return true
		}
	}
	return false
}

func main() {
	sdk.Serve(sdk.Plugins{IgnorablePaths: Paths{}})
}
