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
	"github.com/fieldops/fieldops/internal/names"
	"github.com/fieldops/fieldops/ownershipcore"
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
// CRD or RBAC would reach beyond every tenant): its CustomResourceDefinitions
// (*.fieldops.dev), its ClusterRoles and ClusterRoleBindings (fieldops-*),
// its namespace and everything in it. It returns why.
func Protected(group, kind, namespace, name, ownNamespace string) (string, bool) {
	switch {
	case group == v1alpha1.GroupVersion.Group:
		return "a fieldops object", true
	case group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition" && strings.HasSuffix(name, "."+v1alpha1.GroupVersion.Group):
		return "a CustomResourceDefinition of fieldops", true
	case group == "rbac.authorization.k8s.io" && (kind == "ClusterRole" || kind == "ClusterRoleBinding") && strings.HasPrefix(name, "fieldops-"):
		return "RBAC of fieldops", true
	case ownNamespace != "" && namespace == ownNamespace:
		return fmt.Sprintf("in fieldops's own namespace %q", ownNamespace), true
	case ownNamespace != "" && group == "" && kind == "Namespace" && name == ownNamespace:
		return "fieldops's own namespace", true
	}
	return "", false
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
// object of another fieldops controller: owned by a fieldops object, or
// with fields of a fieldops manager other than a patch's and self), and
// the refusal the controller reports for it.
func ManagedByFieldops(live *unstructured.Unstructured, self string) error {
	who := ""
	for _, ref := range live.GetOwnerReferences() {
		if strings.HasPrefix(ref.APIVersion, v1alpha1.GroupVersion.Group+"/") {
			who = ref.Kind + " " + ref.Name
			break
		}
	}
	if who == "" {
		for _, m := range ownershipcore.ManagerNames(live) {
			if strings.HasPrefix(m, names.OwnPrefix) &&
				!strings.HasPrefix(m, names.FieldPatchPrefix+"/") && !strings.HasPrefix(m, names.ClusterFieldPatchPrefix+"/") && m != self {
				who = m
				break
			}
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
