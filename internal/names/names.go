/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package names are the names fieldops gives things, shared by the
// controllers and kubectl fieldops: the field manager of each kind
// (ownershipcore.ManagerName) and the index key of an object. It is a
// leaf beside the ownership core: a command computing a name does not
// link the controllers.
package names

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fieldops/fieldops/ownershipcore"
)

// Field manager prefixes: a FieldPatch applies with
// "fieldops-fieldpatch/<namespace>/<name>", a ClusterFieldPatch with
// "fieldops-clusterfieldpatch/<name>", a ManagedWorkload with
// "fieldops-workload/<namespace>/<name>", a PodSet its pods with
// "fieldops-podset/<namespace>/<name>" (ownershipcore.ManagerName).
const (
	FieldPatchPrefix        = "fieldops-fieldpatch"
	ClusterFieldPatchPrefix = "fieldops-clusterfieldpatch"
	WorkloadPrefix          = "fieldops-workload"
	PodSetPrefix            = "fieldops-podset"
	// OwnPrefix marks field managers of fieldops itself.
	OwnPrefix = "fieldops-"
)

// FieldPatch is the field manager a FieldPatch (cluster false) or a
// ClusterFieldPatch (cluster true, namespace ignored) applies with.
func FieldPatch(cluster bool, namespace, name string) string {
	if cluster {
		return ownershipcore.ManagerName(ClusterFieldPatchPrefix, "", name)
	}
	return ownershipcore.ManagerName(FieldPatchPrefix, namespace, name)
}

// Workload is the field manager of the ManagedWorkload namespace/name.
func Workload(namespace, name string) string {
	return ownershipcore.ManagerName(WorkloadPrefix, namespace, name)
}

// PodSet is the field manager of the PodSet namespace/name.
func PodSet(namespace, name string) string {
	return ownershipcore.ManagerName(PodSetPrefix, namespace, name)
}

// Key is the index key of an object: "<group>/<kind>/<namespace>/<name>".
// The version is left out, so every version of a kind maps the same.
func Key(gk schema.GroupKind, namespace, name string) string {
	return fmt.Sprintf("%s/%s/%s/%s", gk.Group, gk.Kind, namespace, name)
}
