/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package tenant gives each fieldops object the rights of the account it
// acts for: an ownershipcore.Applier whose every read and write of targets
// impersonates a ServiceAccount (client-go impersonation, as Flux's
// kustomize-controller does with spec.serviceAccountName), so RBAC, its
// escalation and bind checks, and admission judge the tenant, not the
// manager.
package tenant

import (
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/ownershipcore"
)

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
	// NoCrossNamespaceRefs refuses ManagedWorkload objects outside the
	// workload's own namespace (--no-cross-namespace-refs).
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

// Appliers builds and caches one Applier per account. It is safe for
// concurrent use.
type Appliers struct {
	// Manager is the Applier with the manager's rights (reads from its
	// cache).
	Manager *ownershipcore.Applier
	// Config is the manager's rest config; account clients copy it and
	// add impersonation.
	Config *rest.Config
	Scheme *runtime.Scheme
	Mapper meta.RESTMapper

	mu sync.Mutex
	m  map[Account]*ownershipcore.Applier
}

// For returns the Applier of account: the manager's for the zero Account;
// otherwise one whose Client, Reader and APIReader all impersonate the
// account (reads are not served from the manager's cache, so a target the
// account may not read is Forbidden, not served with the manager's
// rights), sharing the manager's Schema.
func (p *Appliers) For(account Account) (*ownershipcore.Applier, error) {
	if account.IsManager() {
		return p.Manager, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.m[account]; ok {
		return a, nil
	}
	cfg := rest.CopyConfig(p.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: account.UserName()}
	c, err := client.New(cfg, client.Options{Scheme: p.Scheme, Mapper: p.Mapper})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", account, err)
	}
	a, err := ownershipcore.NewApplier(c, c, c, p.Manager.Schema)
	if err != nil {
		return nil, fmt.Errorf("applier for %s: %w", account, err)
	}
	if p.m == nil {
		p.m = map[Account]*ownershipcore.Applier{}
	}
	p.m[account] = a
	return a, nil
}

// Explain says which account a Forbidden error was met as ("acting as
// ServiceAccount ns/name: ..."); other errors, and errors met with the
// manager's own rights, are returned as they are.
func Explain(account Account, err error) error {
	if err != nil && apierrors.IsForbidden(err) && !account.IsManager() {
		return fmt.Errorf("acting as %s: %w", account, err)
	}
	return err
}
