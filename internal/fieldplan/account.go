/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldplan

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/tenancy"
	"github.com/fieldops/fieldops/ownershipcore"
)

// actingAs returns the planner that plans obj's target as the controller
// acts on it: as the account obj acts as (tenancy.Resolve with the
// manager's --default-service-account and --manager-rights-namespaces,
// as plan was told them), impersonated as client-go impersonates it for
// the controller, so that RBAC and admission judge the account and not
// the person planning. Impersonating a ServiceAccount takes the verb
// impersonate on serviceaccounts in its namespace (the built-in admin and
// edit roles grant it there; Kubernetes docs, "User impersonation"); a
// user without it is planned with their own rights, and the returned note
// says so plainly. The account is the zero Account when the plan acts
// with the user's rights. An account obj may not name is an error (the
// controller stalls with reason InvalidTarget).
func (p *Planner) actingAs(ctx context.Context, obj v1alpha1.Patcher) (_ *Planner, account tenancy.Account, note string, _ error) {
	spec := obj.PatchSpec()
	acct, err := tenancy.Resolve(p.Tenancy, obj.GetNamespace(), spec.ServiceAccountName, spec.ServiceAccountNamespace)
	if err != nil {
		return nil, tenancy.Account{}, "", err
	}
	if acct.IsManager() {
		return p, tenancy.Account{}, "", nil
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: acct.Namespace, Verb: "impersonate", Resource: "serviceaccounts", Name: acct.Name},
	}}
	if err := p.Client.Create(ctx, review); err != nil {
		return nil, tenancy.Account{}, "", fmt.Errorf("may I impersonate %s: %w", acct, err)
	}
	if !review.Status.Allowed {
		return p, tenancy.Account{}, fmt.Sprintf("planned with your own rights: the controller acts as %s, which you may not impersonate (the verb impersonate on serviceaccounts, which admin and edit grant in their namespace); where that account's rights are narrower than yours, the controller's answer may differ (reason Forbidden)", acct), nil
	}
	cfg := rest.CopyConfig(p.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: acct.UserName()}
	c, err := client.New(cfg, client.Options{Scheme: p.Client.Scheme(), Mapper: p.Client.RESTMapper()})
	if err != nil {
		return nil, tenancy.Account{}, "", fmt.Errorf("client for %s: %w", acct, err)
	}
	a, err := ownershipcore.NewApplier(c, c, c, p.Applier.Schema)
	if err != nil {
		return nil, tenancy.Account{}, "", fmt.Errorf("applier for %s: %w", acct, err)
	}
	as := *p
	as.Applier = a
	return &as, acct, "", nil
}
