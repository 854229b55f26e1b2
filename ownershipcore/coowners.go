/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
)

// CoOwners returns the field managers not in ours that own a field of
// live's main resource outside metadata and status (apiVersion and kind
// aside): co-owners of the object's content, sorted. Metadata-only
// managers (a webhook's annotations, a controller's revision annotation)
// and status writers (entries of a subresource) are not co-owners: they
// add to an object, they do not make it theirs.
func CoOwners(live *unstructured.Unstructured, ours sets.Set[string]) ([]string, error) {
	owners, err := Owners(live)
	if err != nil {
		return nil, err
	}
	others := sets.New[string]()
	for _, e := range owners {
		if ours.Has(e.Manager) || e.Subresource != "" {
			continue
		}
		for _, p := range FormatSet(e.Fields) {
			if !strings.HasPrefix(p, ".metadata") && !strings.HasPrefix(p, ".status") &&
				p != ".apiVersion" && p != ".kind" {
				others.Insert(e.Manager)
				break
			}
		}
	}
	return sets.List(others), nil
}
