/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package workloadspec reads a ManagedWorkload's spec.resources the way
// the controller applies them: parsed, identity checked, namespaces
// defaulted, duplicates refused, in apply order. The controller and
// kubectl fieldops plan share it; it is a leaf, so the command does not
// link the controllers.
package workloadspec

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/inputlimits"
	"github.com/fieldops/fieldops/internal/names"
)

// Reasons of an entry that cannot be applied as it is.
const (
	ReasonInvalidObject   = "InvalidObject"
	ReasonDuplicateObject = "DuplicateObject"
	ReasonUnknownKind     = "UnknownKind"
)

// Object is one entry of spec.resources, parsed.
type Object struct {
	// Index is the entry's position in spec.resources.
	Index int
	// Intent is the object with its namespace defaulted; nil when the
	// entry could not be parsed.
	Intent *unstructured.Unstructured
	// Key is names.Key of the object; empty when it has no identity.
	Key        string
	Namespaced bool
	// Err is why the object is not applied (reason, message, retry).
	Err *Error
}

// Error is a problem with one object: it is reported in its inventory
// entry and as an event, and the other objects go on.
type Error struct {
	Reason  string
	Message string
	// Retry says a later attempt may succeed without a spec change.
	Retry bool
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an Error with reason and a formatted message.
func Errorf(reason string, retry bool, format string, args ...any) *Error {
	return &Error{Reason: reason, Retry: retry, Message: fmt.Sprintf(format, args...)}
}

// Parse reads spec.resources: identity checked, namespace defaulted to
// the workload's for namespaced kinds, duplicates refused (the first
// wins). mapper tells namespaced kinds from cluster-scoped ones.
func Parse(mw *v1alpha1.ManagedWorkload, mapper meta.RESTMapper) []*Object {
	out := make([]*Object, 0, len(mw.Spec.Resources))
	seen := map[string]int{}
	for i := range mw.Spec.Resources {
		o := parse(mw, mapper, i, seen)
		out = append(out, o)
	}
	return out
}

// parse reads entry i; seen are the keys of the entries before it.
func parse(mw *v1alpha1.ManagedWorkload, mapper meta.RESTMapper, i int, seen map[string]int) *Object {
	o := &Object{Index: i}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(mw.Spec.Resources[i].Raw); err != nil {
		o.Err = Errorf(ReasonInvalidObject, false, "resources[%d]: %v", i, err)
		return o
	}
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil || u.GetKind() == "" {
		o.Err = Errorf(ReasonInvalidObject, false, "resources[%d]: apiVersion %q and kind %q do not name a kind", i, u.GetAPIVersion(), u.GetKind())
		return o
	}
	o.Intent = u
	gvk := gv.WithKind(u.GetKind())
	if u.GetName() == "" {
		o.Err = Errorf(ReasonInvalidObject, false, "resources[%d] (%s): metadata.name is required (generateName cannot be applied)", i, gvk.Kind)
		return o
	}
	if err := inputlimits.Object(mw.Spec.Resources[i].Raw); err != nil {
		o.Err = Errorf(ReasonInvalidObject, false, "resources[%d] (%s %s): %v", i, gvk.Kind, u.GetName(), err)
		return o
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			o.Err = Errorf(ReasonUnknownKind, true, "resources[%d]: kind %s is not served by the apiserver", i, gvk)
		} else {
			o.Err = Errorf(ReasonUnknownKind, true, "resources[%d]: %v", i, err)
		}
		return o
	}
	o.Namespaced = mapping.Scope.Name() == meta.RESTScopeNameNamespace
	switch {
	case o.Namespaced && u.GetNamespace() == "":
		u.SetNamespace(mw.Namespace)
	case !o.Namespaced && u.GetNamespace() != "":
		o.Err = Errorf(ReasonInvalidObject, false, "resources[%d]: %s is cluster-scoped; remove metadata.namespace", i, gvk.Kind)
		return o
	}
	o.Key = names.Key(gvk.GroupKind(), u.GetNamespace(), u.GetName())
	if first, dup := seen[o.Key]; dup {
		o.Err = Errorf(ReasonDuplicateObject, false, "resources[%d]: %s %s is already resources[%d]", i, gvk.Kind, RefName(u.GetNamespace(), u.GetName()), first)
		return o
	}
	seen[o.Key] = i
	return o
}

// Resource is one entry of spec.resources as the controller reads it.
type Resource struct {
	// Index is the entry's position in spec.resources.
	Index int
	// Intent is the object with its namespace defaulted; nil when the
	// entry could not be parsed.
	Intent *unstructured.Unstructured
	// Err is why the controller would not apply the entry (an unknown
	// kind, no name, a duplicate, ...); nil otherwise.
	Err error
}

// Resources returns the entries of mw's spec.resources parsed and in the
// order the controller applies them (namespaces, CRDs, other
// cluster-scoped objects, namespaced objects), for kubectl fieldops plan.
func Resources(mw *v1alpha1.ManagedWorkload, mapper meta.RESTMapper) []Resource {
	var out []Resource
	for _, o := range ApplyOrder(Parse(mw, mapper)) {
		r := Resource{Index: o.Index, Intent: o.Intent}
		if o.Err != nil {
			r.Err = o.Err
		}
		out = append(out, r)
	}
	return out
}

// Rank orders applies: namespaces, then CRDs, then other cluster-scoped
// objects, then namespaced ones (which may need all of those). Deletion
// runs in the reverse order.
func Rank(apiVersion, kind string, namespaced bool) int {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	switch {
	case gv.Group == "" && kind == "Namespace":
		return 0
	case gv.Group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition":
		return 1
	case !namespaced:
		return 2
	default:
		return 3
	}
}

// ApplyOrder sorts objects by Rank, stable on their index; entries that
// could not be parsed go last.
func ApplyOrder(objs []*Object) []*Object {
	out := append([]*Object(nil), objs...)
	sort.SliceStable(out, func(i, j int) bool {
		return objRank(out[i]) < objRank(out[j])
	})
	return out
}

func objRank(o *Object) int {
	if o.Intent == nil {
		return 4
	}
	return Rank(o.Intent.GetAPIVersion(), o.Intent.GetKind(), o.Namespaced)
}

// RefName is "namespace/name", or name alone when cluster-scoped.
func RefName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
