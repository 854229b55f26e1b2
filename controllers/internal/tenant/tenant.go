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

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/internal/tenancy"
	"github.com/fieldops/fieldops/ownershipcore"
)

// Options are the manager-wide settings of tenant isolation
// (tenancy.Options).
type Options = tenancy.Options

// Account is the ServiceAccount a fieldops object acts as; the zero
// Account is the manager itself (tenancy.Account).
type Account = tenancy.Account

// Resolve returns the account a fieldops object acts as
// (tenancy.Resolve).
func Resolve(opts Options, namespace, serviceAccountName, serviceAccountNamespace string) (Account, error) {
	return tenancy.Resolve(opts, namespace, serviceAccountName, serviceAccountNamespace)
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

// Explain says which account a Forbidden error was met as, and how to
// onboard the namespace when RBAC denied the account itself
// (tenancy.Explain).
func Explain(account Account, err error) error { return tenancy.Explain(account, err) }
