/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package controllers

import (
	"reflect"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

// ownKinds are the kinds a shard's label selector restricts: the objects
// people create and label with v1alpha1.ShardLabel. Targets, a PodSet's
// pods and the CRDs are never restricted: a shard acts on whatever its
// own objects name.
func ownKinds() []client.Object {
	return []client.Object{&v1alpha1.FieldPatch{}, &v1alpha1.ClusterFieldPatch{}, &v1alpha1.ManagedWorkload{}, &v1alpha1.PodSet{}}
}

// WatchLabelSelector returns base with the informers of fieldops's own
// kinds (FieldPatch, ClusterFieldPatch, ManagedWorkload, PodSet) listing
// and watching only the objects sel matches (cache.ByObject.Label, a label
// selector sent to the apiserver with every list and watch); nil or an
// empty sel leaves base as it is. It keeps what base already sets for
// those kinds (the transform of CacheOptions, whose result it takes):
// an entry is found by its Go type, not by its map key, so each kind
// keeps one entry.
//
// Every controller, index and the fieldops_objects metric read these
// informers, so a manager never sees, and never acts on, an object
// outside its selector. An object relabelled out of it is a deletion to
// this cache (the apiserver's watch sends DELETED when an object stops
// matching the selector), which the controllers take as "forget", not as
// a deletion to hand back; the manager whose selector it now matches sees
// it added. Flux's --watch-label-selector works the same way.
func WatchLabelSelector(base cache.Options, sel labels.Selector) cache.Options {
	if sel == nil || sel.Empty() {
		return base
	}
	if base.ByObject == nil {
		base.ByObject = map[client.Object]cache.ByObject{}
	}
	for _, kind := range ownKinds() {
		key := client.Object(kind)
		for k := range base.ByObject {
			if reflect.TypeOf(k) == reflect.TypeOf(kind) {
				key = k
				break
			}
		}
		by := base.ByObject[key]
		by.Label = sel
		base.ByObject[key] = by
	}
	return base
}
