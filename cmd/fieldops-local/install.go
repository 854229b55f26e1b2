/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/internal/bundle"
	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/internal/tenancy"
)

// installDirs are the kustomizations, relative to the module root, whose
// admission and RBAC objects the local cluster gets: config/default, and
// config/admission, the overlay config/default documents for Kubernetes
// 1.36+ (the local cluster's version). Their other objects (the manager's
// Deployment, its metrics Service and NetworkPolicy) are left out: the
// manager runs in this process.
var installDirs = []string{"config/default", "config/admission"}

// installManager is the field manager of what install applies.
const installManager = "fieldops-install"

// isAdmissionOrRBAC reports whether o is part of a cluster's admission
// (every admissionregistration.k8s.io kind: admission policies, their
// bindings, webhook configurations) or authorization (every
// rbac.authorization.k8s.io kind, and ServiceAccounts).
func isAdmissionOrRBAC(o *unstructured.Unstructured) bool {
	gvk := o.GroupVersionKind()
	return gvk.Group == "admissionregistration.k8s.io" || gvk.Group == rbacv1.GroupName ||
		gvk.GroupKind() == schema.GroupKind{Kind: "ServiceAccount"}
}

// admissionAndRBAC renders installDirs under root (kustomize, as
// `kubectl apply -k` does) and returns their admission and RBAC objects,
// after the Namespaces these are in, in kustomize's order.
func admissionAndRBAC(root string) ([]*unstructured.Unstructured, error) {
	var namespaces, objs []*unstructured.Unstructured
	needed := map[string]bool{}
	for _, dir := range installDirs {
		rendered, err := bundle.Render(filepath.Join(root, dir))
		if err != nil {
			return nil, err
		}
		for _, o := range rendered {
			if o.GetKind() == "Namespace" && o.GetAPIVersion() == "v1" {
				namespaces = append(namespaces, o)
			} else if isAdmissionOrRBAC(o) {
				objs = append(objs, o)
				needed[o.GetNamespace()] = true
			}
		}
	}
	var out []*unstructured.Unstructured
	for _, ns := range namespaces {
		if needed[ns.GetName()] {
			out = append(out, ns)
		}
	}
	return append(out, objs...), nil
}

// install applies admissionAndRBAC with c (server-side apply as
// installManager, forced: the objects are the installation's) and returns
// a summary for the user: a line per admission policy or webhook
// configuration, one counting the rest. With a MutatingAdmissionPolicy
// (config/admission's finalizer policy) it waits until that mutates
// FieldPatches in the default namespace: the apiserver loads admission
// policies asynchronously, from its informers.
func install(ctx context.Context, c client.Client, root string) ([]string, error) {
	objs, err := admissionAndRBAC(root)
	if err != nil {
		return nil, err
	}
	var lines, counted []string
	count := map[string]int{}
	for _, o := range objs {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(installManager), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("install %s %s: %w", o.GetKind(), objectName(o), err)
		}
		kind := o.GetKind()
		if o.GroupVersionKind().Group == "admissionregistration.k8s.io" && !strings.HasSuffix(kind, "Binding") {
			lines = append(lines, kind+" "+o.GetName())
			continue
		}
		if count[kind] == 0 {
			counted = append(counted, kind)
		}
		count[kind]++
	}
	for i, kind := range counted {
		if counted[i] = fmt.Sprintf("%d %s", count[kind], kind); count[kind] > 1 {
			counted[i] += "s"
		}
	}
	lines = append(lines, strings.Join(counted, ", "))
	if slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "MutatingAdmissionPolicy" }) {
		return lines, localcp.WaitFinalizerPolicy(ctx, c, "default")
	}
	return lines, nil
}

func objectName(o client.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// onboard onboards namespace as the operator's guide shows
// (tenancy.OnboardingGuide): the ServiceAccount account, which the
// namespace's fieldops objects naming no account act as, bound to the
// built-in ClusterRole edit by the RoleBinding <account>-edit. It creates
// what is missing and leaves what exists as it is (a later start, or a
// binding the user narrowed); created reports whether it created either.
func onboard(ctx context.Context, c client.Client, namespace, account string) (created bool, err error) {
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account, Namespace: namespace}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: account + "-edit", Namespace: namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: namespace}},
		},
	}
	for _, o := range objs {
		switch err := c.Create(ctx, o, client.FieldOwner(installManager)); {
		case err == nil:
			created = true
		case !apierrors.IsAlreadyExists(err):
			return created, fmt.Errorf("onboard namespace %s: %w", namespace, err)
		}
	}
	return created, nil
}

// onboardDefault onboards the default namespace for the manager's
// options and says what it did: nothing when fieldops objects there act
// with the manager's rights.
func onboardDefault(ctx context.Context, c client.Client, opts tenancy.Options) (string, error) {
	const ns = "default"
	account, err := tenancy.Resolve(opts, ns, "", "")
	if err != nil || account.IsManager() {
		return fmt.Sprintf("namespace %s: fieldops objects naming no account act with the manager's rights (--manager-rights-namespaces); nothing to onboard", ns), err
	}
	created, err := onboard(ctx, c, ns, account.Name)
	if err != nil {
		return "", err
	}
	what := fmt.Sprintf("ServiceAccount %s bound to ClusterRole edit (RoleBinding %[1]s-edit)", account.Name)
	if !created {
		return fmt.Sprintf("namespace %s is onboarded already: %s, left as they are", ns, what), nil
	}
	return fmt.Sprintf("onboarded namespace %s: %s, which its FieldPatches and ManagedWorkloads naming no account act as (%s)", ns, what, tenancy.OnboardingGuide), nil
}
