/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package tenant

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fieldops/fieldops/internal/tenancy"
	"github.com/fieldops/fieldops/ownershipcore/redact"
)

// A Forbidden answer names the account it was met as; an RBAC denial of
// that account (missing, or without the right) also says how to onboard
// the namespace, and nothing else does.
func TestExplain(t *testing.T) {
	account := Account{Namespace: "team", Name: "fieldops-tenant"}
	cm := schema.GroupResource{Resource: "configmaps"}
	rbac := apierrors.NewForbidden(cm, "app", errors.New(`User "system:serviceaccount:team:fieldops-tenant" cannot patch resource "configmaps" in API group "" in the namespace "team"`))
	other := apierrors.NewForbidden(cm, "app", errors.New(`User "system:serviceaccount:team:robot" cannot patch resource "configmaps" in API group "" in the namespace "team"`))
	admission := apierrors.NewForbidden(cm, "app", errors.New("ValidatingAdmissionPolicy 'quota' with binding 'quota' denied request: too many"))
	for _, tc := range []struct {
		name    string
		account Account
		err     error
		want    []string // substrings of the message, in order
		hint    bool
	}{
		{"RBAC denied the account", account, rbac, []string{"acting as ServiceAccount team/fieldops-tenant: ", "cannot patch", "onboard namespace team: " + tenancy.OnboardingGuide + ")"}, true},
		{"RBAC denied another user", account, other, []string{"acting as ServiceAccount team/fieldops-tenant: ", "team:robot"}, false},
		{"admission denied", account, admission, []string{"acting as ServiceAccount team/fieldops-tenant: ", "denied request"}, false},
		{"the manager's rights", Account{}, rbac, []string{rbac.Error()}, false},
		{"not Forbidden", account, apierrors.NewNotFound(cm, "app"), []string{apierrors.NewNotFound(cm, "app").Error()}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Explain(tc.account, tc.err)
			if !errors.Is(got, tc.err) || apierrors.IsForbidden(got) != apierrors.IsForbidden(tc.err) {
				t.Errorf("Explain(%v) = %v: does not wrap it", tc.err, got)
			}
			msg, rest := got.Error(), got.Error()
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("message %q lacks %q (in order)", msg, w)
				}
				rest = rest[i+len(w):]
			}
			// What status and events show (controllers report
			// redact.Message) keeps it.
			if hint := strings.Contains(redact.Message(got), tenancy.OnboardingGuide); hint != tc.hint {
				t.Errorf("message %q: onboarding hint %v, want %v", redact.Message(got), hint, tc.hint)
			}
		})
	}
	if Explain(account, nil) != nil {
		t.Error("Explain(account, nil) is not nil")
	}
}
