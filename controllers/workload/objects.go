/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/watch"
	"github.com/fieldops/fieldops/internal/workloadspec"
)

// object is one entry of spec.resources, parsed (workloadspec.Object).
type object = workloadspec.Object

// objectError is a problem with one object (workloadspec.Error): it is
// reported in its inventory entry and as an event, and the other objects
// go on.
type objectError = workloadspec.Error

func objErr(reason string, retry bool, format string, args ...interface{}) *objectError {
	return workloadspec.Errorf(reason, retry, format, args...)
}

// parseObjects reads spec.resources (workloadspec.Parse).
func parseObjects(mw *v1alpha1.ManagedWorkload, mapper meta.RESTMapper) []*object {
	return workloadspec.Parse(mw, mapper)
}

// Resource is one entry of spec.resources as the controller reads it
// (workloadspec.Resource).
type Resource = workloadspec.Resource

// Resources returns the entries of mw's spec.resources parsed and in
// apply order (workloadspec.Resources).
func Resources(mw *v1alpha1.ManagedWorkload, mapper meta.RESTMapper) []Resource {
	return workloadspec.Resources(mw, mapper)
}

// rank orders applies (workloadspec.Rank).
func rank(apiVersion, kind string, namespaced bool) int {
	return workloadspec.Rank(apiVersion, kind, namespaced)
}

// applyOrder sorts objects by rank, stable on their index.
func applyOrder(objs []*object) []*object { return workloadspec.ApplyOrder(objs) }

// indexKeys are the watch keys spec.resources may refer to. Without a
// RESTMapper, an object without a namespace yields both its
// cluster-scoped key and its key in the workload's namespace.
func indexKeys(mw *v1alpha1.ManagedWorkload) []string {
	var keys []string
	for _, raw := range mw.Spec.Resources {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw.Raw); err != nil || u.GetName() == "" {
			continue
		}
		gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
		if err != nil {
			continue
		}
		gk := gv.WithKind(u.GetKind()).GroupKind()
		if ns := u.GetNamespace(); ns != "" {
			keys = append(keys, watch.Key(gk, ns, u.GetName()))
			continue
		}
		keys = append(keys, watch.Key(gk, "", u.GetName()), watch.Key(gk, mw.Namespace, u.GetName()))
	}
	return keys
}

func refName(namespace, name string) string { return workloadspec.RefName(namespace, name) }
