/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/fieldplan"
)

// namedPatches are the patches TYPE/NAME arguments name (fieldpatch,
// fieldpatches or fp; clusterfieldpatch, clusterfieldpatches or cfp), as
// objects plan reads from the cluster.
func namedPatches(args []string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, a := range args {
		typ, name, ok := strings.Cut(a, "/")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: name a patch as fieldpatch/NAME or clusterfieldpatch/NAME", a)
		}
		kind := ""
		switch strings.ToLower(typ) {
		case "fieldpatch", "fieldpatches", "fp", "fieldpatch.fieldops.dev", "fieldpatches.fieldops.dev":
			kind = "FieldPatch"
		case "clusterfieldpatch", "clusterfieldpatches", "cfp", "clusterfieldpatch.fieldops.dev", "clusterfieldpatches.fieldops.dev":
			kind = "ClusterFieldPatch"
		default:
			return nil, fmt.Errorf("%q: %w", a, fieldplan.ErrDeleteKinds)
		}
		u := namedObject(v1alpha1.GroupVersion.String(), kind, "", name)
		u.Object["spec"] = map[string]interface{}{}
		out = append(out, u)
	}
	return out, nil
}
