/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// crdGVK is the kind of a CustomResourceDefinition, read as unstructured so
// that the ownership core needs no scheme for it.
var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// SameFieldPaths reports whether field sets recorded in apiVersions (of
// managed-fields entries, or of a FieldPatch's record of previous owners)
// name the fields of objects of kind gvk with the same paths as gvk's
// version does, so that they can be compared with that version's sets path
// by path. It is true when every apiVersion is gvk's, and when gvk is a
// custom resource whose CustomResourceDefinition converts with strategy
// None (the apiserver changes only apiVersion between versions: the
// Kubernetes docs, "Versions in CustomResourceDefinitions"). It is false
// otherwise: a conversion webhook may rename or move fields (cluster-api's
// v1beta1 and v1beta2), as built-in kinds do (autoscaling/v1 and v2
// HorizontalPodAutoscalers); and when the CRD cannot be read (the read
// refused, say). The CRD is read through the Applier's APIReader once per
// kind, on the rare paths that ask, until the group's CRDs change.
//
// A comparison of paths across versions that may differ can take another
// manager's field for ours alone, or miss the previous owner of a field we
// took: the callers then remove nothing and hand nothing back, and leave
// our fields in place without an owner.
func (a *Applier) SameFieldPaths(ctx context.Context, gvk schema.GroupVersionKind, apiVersions ...string) bool {
	own := gvk.GroupVersion().String()
	for _, v := range apiVersions {
		if v != "" && v != own {
			return a.convertsNone(ctx, gvk)
		}
	}
	return true
}

// sameFieldPaths is SameFieldPaths for the entries of live, compared with
// apiVersion.
func (a *Applier) sameFieldPaths(ctx context.Context, live *unstructured.Unstructured, apiVersion string) bool {
	if !otherVersionEntries(live, apiVersion) {
		return true
	}
	return a.convertsNone(ctx, schema.FromAPIVersionAndKind(apiVersion, live.GetKind()))
}

// convertsNone reports whether gvk is a custom resource whose
// CustomResourceDefinition converts with strategy None. The answer is kept
// by the Schema until the group's CRDs change (Schema.InvalidateGroup); a
// failed read (the kind built in, the read refused) answers false and is
// not kept.
func (a *Applier) convertsNone(ctx context.Context, gvk schema.GroupVersionKind) bool {
	if gvk.Group == "" || a.Client == nil {
		return false
	}
	gk := gvk.GroupKind()
	if none, ok := a.Schema.conversionNone(gk); ok {
		return none
	}
	mapping, err := a.Client.RESTMapper().RESTMapping(gk, gvk.Version)
	if err != nil {
		return false
	}
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	if err := a.freshReader().Get(ctx, client.ObjectKey{Name: mapping.Resource.Resource + "." + gvk.Group}, crd); err != nil {
		return false
	}
	strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
	none := strategy == "" || strategy == "None"
	a.Schema.setConversionNone(gk, none)
	return none
}

// otherVersionEntries reports whether live has a managed-fields entry of
// the main resource in another version than apiVersion (a subresource's
// entries, such as /scale's, are left out: they hold the main resource's
// paths).
func otherVersionEntries(live *unstructured.Unstructured, apiVersion string) bool {
	for _, e := range live.GetManagedFields() {
		if e.Subresource == "" && e.APIVersion != "" && e.APIVersion != apiVersion {
			return true
		}
	}
	return false
}
