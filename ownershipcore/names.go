/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// MaxManagerLength is the longest field manager name the apiserver accepts
// (128 characters; ValidateManagedFields in k8s.io/apiserver).
const MaxManagerLength = 128

// ManagerName returns the field manager name for an object of fieldops:
// "<prefix>/<namespace>/<name>", or "<prefix>/<name>" when namespace is empty.
// It is deterministic and unique per (prefix, namespace, name). When longer
// than MaxManagerLength it is cut and ends in "-" and 16 hex digits of the
// SHA-256 of the full name, so two long names never share a manager.
func ManagerName(prefix, namespace, name string) string {
	parts := []string{prefix}
	if namespace != "" {
		parts = append(parts, namespace)
	}
	full := strings.Join(append(parts, name), "/")
	if len(full) <= MaxManagerLength {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	suffix := "-" + hex.EncodeToString(sum[:])[:16]
	return full[:MaxManagerLength-len(suffix)] + suffix
}

// Field manager prefixes of fieldops's own objects (ManagerName's prefix),
// and the kind each names.
var fieldopsPrefixes = map[string]string{
	"fieldops-fieldpatch":        "FieldPatch",
	"fieldops-clusterfieldpatch": "ClusterFieldPatch",
	"fieldops-workload":          "ManagedWorkload",
	"fieldops-podset":            "PodSet",
}

// FieldopsObject names the fieldops object behind a field manager.
type FieldopsObject struct {
	// Kind is FieldPatch, ClusterFieldPatch, ManagedWorkload or PodSet.
	Kind string
	// Namespace is empty for a ClusterFieldPatch.
	Namespace string
	// Name is empty when the manager name was cut to MaxManagerLength (the
	// hash suffix cannot be reversed).
	Name string
}

// String prints "Kind namespace/name", or the kind alone when the name is
// not known.
func (o FieldopsObject) String() string {
	switch {
	case o.Name == "":
		return o.Kind
	case o.Namespace == "":
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// ParseManager reports whether manager is the field manager of a fieldops
// object (one ManagerName made) and which. Such a manager is another
// fieldops object, never an outside actor: two fieldops objects that want
// one field are a configuration conflict to report, not drift to repair.
func ParseManager(manager string) (FieldopsObject, bool) {
	prefix, rest, ok := strings.Cut(manager, "/")
	kind, known := fieldopsPrefixes[prefix]
	if !ok || !known {
		return FieldopsObject{}, false
	}
	o := FieldopsObject{Kind: kind}
	if len(manager) == MaxManagerLength {
		return o, true // cut: the name is not recoverable
	}
	if kind == "ClusterFieldPatch" {
		o.Name = rest
		return o, true
	}
	o.Namespace, o.Name, _ = strings.Cut(rest, "/")
	return o, true
}

// DescribeManager is manager's name followed by the fieldops object it
// belongs to, if any: `"fieldops-fieldpatch/a/b" (FieldPatch a/b)`.
func DescribeManager(manager string) string {
	if o, ok := ParseManager(manager); ok {
		return fmt.Sprintf("%q (%s)", manager, o)
	}
	return fmt.Sprintf("%q", manager)
}
