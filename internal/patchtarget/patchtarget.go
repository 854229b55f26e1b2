/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package patchtarget holds the rules by which a FieldPatch or
// ClusterFieldPatch names its target: which references are valid, which
// objects fieldops refuses to patch (its own), and the reason each
// refusal is reported with. The FieldPatch controller and `kubectl
// fieldops plan` both use it, so that plan refuses what the controller
// refuses, with the same reason and message. It imports no controller
// code.
package patchtarget

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

// Reasons of a refused target (the Stalled condition's reason).
const (
	ReasonUnknownKind          = "UnknownKind"
	ReasonInvalidTarget        = "InvalidTarget"
	ReasonCrossNamespaceTarget = "CrossNamespaceTarget"
	ReasonForbiddenTarget      = "ForbiddenTarget"
)

// Error is a target the controller refuses: Stalled with Reason until the
// spec changes (or, with Retry, until the world may have changed).
type Error struct {
	Reason string
	Retry  bool
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func refuse(reason string, format string, args ...interface{}) error {
	return &Error{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// Protected reports whether an object is part of fieldops itself, which no
// fieldops object may change (a FieldPatch that widened fieldops's own
// CRD or RBAC would reach beyond every tenant), and why:
//   - every object of the API group fieldops.dev;
//   - its CustomResourceDefinitions (*.fieldops.dev);
//   - its ClusterRoles and ClusterRoleBindings (OwnName: fieldops-*, or
//     fieldops.v* as OLM names the ones of the ClusterServiceVersion);
//   - in its own namespace ownNamespace, the objects named as fieldops's
//     own (OwnName): its Deployment, ReplicaSets and Pods, ServiceAccount,
//     Roles and RoleBindings, Services, the leader election Lease
//     fieldops.dev, OLM's ClusterServiceVersion fieldops.v*;
//   - the Namespace ownNamespace itself.
//
// Other objects of ownNamespace are not fieldops's: installed by OLM into
// the shared namespace operators, the manager still patches the other
// operators installed there. ownNamespace "" (unknown) protects no
// namespaced object by its namespace.
func Protected(group, kind, namespace, name, ownNamespace string) (string, bool) {
	if why, ok := protectedKind(group, kind, name); ok {
		return why, true
	}
	switch {
	case ownNamespace != "" && namespace == ownNamespace && OwnName(name):
		return fmt.Sprintf("part of the fieldops installation in namespace %q", ownNamespace), true
	case ownNamespace != "" && group == "" && kind == "Namespace" && name == ownNamespace:
		return "fieldops's own namespace", true
	}
	return "", false
}

// protectedKind is Protected for fieldops's own kinds, CRDs and RBAC.
func protectedKind(group, kind, name string) (string, bool) {
	switch {
	case group == v1alpha1.GroupVersion.Group:
		return "a fieldops object", true
	case group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition" && strings.HasSuffix(name, "."+v1alpha1.GroupVersion.Group):
		return "a CustomResourceDefinition of fieldops", true
	case group == "rbac.authorization.k8s.io" && (kind == "ClusterRole" || kind == "ClusterRoleBinding") && OwnName(name):
		return "RBAC of fieldops", true
	}
	return "", false
}

// OwnName reports whether name is one fieldops gives its own objects:
// "fieldops", "fieldops-*" (the kustomize and Helm installs:
// fieldops-controller-manager, fieldops-leader-election-role, ...),
// "fieldops.*" (the leader election Lease fieldops.dev; OLM's
// ClusterServiceVersion fieldops.v0.1.0 and the Roles, RoleBindings and
// ClusterRoles OLM names after it).
func OwnName(name string) bool {
	return name == "fieldops" || strings.HasPrefix(name, "fieldops-") || strings.HasPrefix(name, "fieldops.")
}

// Resolve validates obj's target reference and returns an empty object
// naming it: a namespaced kind in obj's target namespace, a cluster-scoped
// one only for a ClusterFieldPatch (cluster), never one of fieldops's own
// objects (Protected; ownNamespace is the manager's namespace, "" when
// unknown). Its errors are *Error.
func Resolve(mapper meta.RESTMapper, obj v1alpha1.Patcher, cluster bool, ownNamespace string) (*unstructured.Unstructured, error) {
	t := obj.PatchSpec().Target
	gv, err := schema.ParseGroupVersion(t.APIVersion)
	if err != nil {
		return nil, refuse(ReasonInvalidTarget, "target apiVersion %q: %v", t.APIVersion, err)
	}
	gvk := gv.WithKind(t.Kind)
	if why, ok := Protected(gvk.Group, gvk.Kind, obj.TargetNamespace(), t.Name, ownNamespace); ok {
		return nil, refuse(ReasonForbiddenTarget, "target %s %s is %s; fieldops does not patch its own objects", t.Kind, t.Name, why)
	}
	if !cluster && t.Namespace != "" && t.Namespace != obj.GetNamespace() {
		return nil, refuse(ReasonCrossNamespaceTarget, "a FieldPatch may only target its own namespace %q, not %q: use a ClusterFieldPatch", obj.GetNamespace(), t.Namespace)
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, &Error{Reason: ReasonUnknownKind, Retry: true, Err: fmt.Errorf("kind %s is not served by the apiserver", gvk)}
		}
		return nil, &Error{Reason: ReasonUnknownKind, Retry: true, Err: err}
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	ns := obj.TargetNamespace()
	switch {
	case namespaced && ns == "":
		return nil, refuse(ReasonInvalidTarget, "target %s is namespaced: set spec.target.namespace", gvk.Kind)
	case !namespaced && !cluster:
		return nil, refuse(ReasonInvalidTarget, "target %s is cluster-scoped: use a ClusterFieldPatch", gvk.Kind)
	case !namespaced:
		ns = ""
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(t.Name)
	return u, nil
}

// ManagedByFieldops reports whether fieldops itself manages live (an
// object owned, by ownerReference, by a fieldops object: a PodSet's pods),
// and the refusal the controller reports for it. An object a
// ManagedWorkload applies fields to is not refused: a FieldPatch and the
// workload contest the fields they share, as any two field managers do.
func ManagedByFieldops(live *unstructured.Unstructured) error {
	who := ""
	for _, ref := range live.GetOwnerReferences() {
		if strings.HasPrefix(ref.APIVersion, v1alpha1.GroupVersion.Group+"/") {
			who = ref.Kind + " " + ref.Name
			break
		}
	}
	if who == "" {
		return nil
	}
	name := live.GetName()
	if live.GetNamespace() != "" {
		name = live.GetNamespace() + "/" + name
	}
	return refuse(ReasonForbiddenTarget, "target %s %s is managed by fieldops (%s); fieldops does not patch its own objects", live.GetKind(), name, who)
}
