/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package tenancy says which account a fieldops object acts as (its
// spec.serviceAccountName, the manager's --default-service-account, or
// the manager itself), for the controllers (controllers/internal/tenant,
// which impersonates it) and kubectl fieldops plan (which plans as it).
package tenancy

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DefaultServiceAccount is the default of the manager's
// --default-service-account: the ServiceAccount, in their own namespace,
// that namespaced fieldops objects naming none act as.
const DefaultServiceAccount = "fieldops-tenant"

// OnboardingGuide is the section of the operator's guide that onboards a
// namespace (its DefaultServiceAccount, bound to the rights its fieldops
// objects should have), as a path and anchor from the repository root.
const OnboardingGuide = "docs/operators-guide.md#onboarding-a-tenant-namespace"

// Options are the manager-wide settings of tenant isolation.
type Options struct {
	// DefaultServiceAccount is the account, in the object's own namespace,
	// of namespaced fieldops objects that name none (the manager's
	// --default-service-account, fieldops-tenant unless a cluster
	// administrator says otherwise). Empty: such objects act with the
	// manager's own rights (the zero Options, which tests use).
	DefaultServiceAccount string
	// ManagerRightsNamespaces are the namespaces whose fieldops objects
	// that name no account act with the manager's own rights although
	// DefaultServiceAccount is set (--manager-rights-namespaces, a cluster
	// administrator's explicit opt-in); "*" is every namespace.
	ManagerRightsNamespaces []string
	// NoCrossNamespaceRefs refuses ManagedWorkload objects of another
	// namespace (--no-cross-namespace-refs); a cluster-scoped object is
	// left to the RBAC of the account the workload acts as.
	NoCrossNamespaceRefs bool
	// OwnNamespace is the namespace the manager runs in: no fieldops object
	// may change what is in it.
	OwnNamespace string
}

// ManagerRights reports whether namespaced objects of namespace that name
// no account act with the manager's rights: it is one of
// ManagerRightsNamespaces, or that list holds "*".
func (o Options) ManagerRights(namespace string) bool {
	for _, ns := range o.ManagerRightsNamespaces {
		if ns == "*" || ns == namespace {
			return true
		}
	}
	return false
}

// Account is the ServiceAccount a fieldops object acts as; the zero
// Account is the manager itself.
type Account struct {
	Namespace, Name string
}

// IsManager reports whether a acts with the manager's own rights.
func (a Account) IsManager() bool { return a.Name == "" }

// UserName is the account's user name, "system:serviceaccount:<ns>:<name>"
// (as the apiserver's ServiceAccount authenticator names it).
func (a Account) UserName() string {
	return fmt.Sprintf("system:serviceaccount:%s:%s", a.Namespace, a.Name)
}

func (a Account) String() string {
	if a.IsManager() {
		return "the fieldops manager"
	}
	return fmt.Sprintf("ServiceAccount %s/%s", a.Namespace, a.Name)
}

// Resolve returns the account of a fieldops object in namespace (empty for
// a cluster-scoped one) that names serviceAccountName (and, for a
// cluster-scoped object, serviceAccountNamespace). A namespaced object's
// account is always in its own namespace; without a name it gets
// opts.DefaultServiceAccount, unless its namespace is one of
// opts.ManagerRightsNamespaces (then, as with an empty
// DefaultServiceAccount, the manager). A cluster-scoped object without a
// name acts as the manager (ClusterFieldPatch is for cluster
// administrators).
func Resolve(opts Options, namespace, serviceAccountName, serviceAccountNamespace string) (Account, error) {
	if namespace == "" {
		if serviceAccountName == "" {
			return Account{}, nil
		}
		if serviceAccountNamespace == "" {
			return Account{}, fmt.Errorf("serviceAccountName %q needs serviceAccountNamespace on a cluster-scoped object", serviceAccountName)
		}
		return Account{Namespace: serviceAccountNamespace, Name: serviceAccountName}, nil
	}
	if serviceAccountNamespace != "" && serviceAccountNamespace != namespace {
		return Account{}, fmt.Errorf("serviceAccountNamespace %q: a namespaced object acts as an account of its own namespace %q", serviceAccountNamespace, namespace)
	}
	if serviceAccountName == "" && !opts.ManagerRights(namespace) {
		serviceAccountName = opts.DefaultServiceAccount
	}
	if serviceAccountName == "" {
		return Account{}, nil
	}
	return Account{Namespace: namespace, Name: serviceAccountName}, nil
}

// Explain says which account a Forbidden error was met as ("acting as
// ServiceAccount ns/name: ..."). When RBAC denied the account itself (the
// apiserver's message `User "<account>" cannot <verb> ...`,
// k8s.io/apiserver responsewriters.forbiddenMessage: the account is
// missing or lacks the right), it adds how to onboard the namespace, the
// operator's guide's section (OnboardingGuide); a denial by
// admission gets no such hint. Other errors, and errors met with the
// manager's own rights, are returned as they are.
func Explain(account Account, err error) error {
	if err == nil || !apierrors.IsForbidden(err) || account.IsManager() {
		return err
	}
	if strings.Contains(err.Error(), fmt.Sprintf("User %q cannot ", account.UserName())) {
		return fmt.Errorf("acting as %s: %w (grant the account this right, or onboard namespace %s: %s)",
			account, err, account.Namespace, OnboardingGuide)
	}
	return fmt.Errorf("acting as %s: %w", account, err)
}
