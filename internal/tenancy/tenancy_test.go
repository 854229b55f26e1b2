/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package tenancy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	locked := Options{DefaultServiceAccount: "fieldops-tenant"}
	optIn := Options{DefaultServiceAccount: "fieldops-tenant", ManagerRightsNamespaces: []string{"kube-system"}}
	all := Options{ManagerRightsNamespaces: []string{"*"}}
	for _, tc := range []struct {
		name              string
		opts              Options
		namespace, sa, sn string
		want              Account
		err               bool
	}{
		{"default account", locked, "team", "", "", Account{"team", "fieldops-tenant"}, false},
		{"named account", locked, "team", "robot", "", Account{"team", "robot"}, false},
		{"another namespace's account", locked, "team", "robot", "other", Account{}, true},
		{"opted-in namespace", optIn, "kube-system", "", "", Account{}, false},
		{"opted-in namespace, named account", optIn, "kube-system", "robot", "", Account{"kube-system", "robot"}, false},
		{"namespace not opted in", optIn, "team", "", "", Account{"team", "fieldops-tenant"}, false},
		{"every namespace opted in", all, "team", "", "", Account{}, false},
		{"zero options: the manager", Options{}, "team", "", "", Account{}, false},
		{"cluster-scoped without account", locked, "", "", "", Account{}, false},
		{"cluster-scoped with account", locked, "", "robot", "ops", Account{"ops", "robot"}, false},
		{"cluster-scoped without its namespace", locked, "", "robot", "", Account{}, true},
	} {
		got, err := Resolve(tc.opts, tc.namespace, tc.sa, tc.sn)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v, error %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// OnboardingGuide names a heading of the guide: messages and
// fieldops-local print it, so it must not go stale when the guide moves.
func TestOnboardingGuide(t *testing.T) {
	file, anchor, ok := strings.Cut(OnboardingGuide, "#")
	if !ok {
		t.Fatalf("%q has no anchor", OnboardingGuide)
	}
	b, err := os.ReadFile(filepath.Join("..", "..", file))
	if err != nil {
		t.Fatal(err)
	}
	// GitHub's anchor of a heading: lower case, punctuation dropped,
	// spaces as hyphens.
	drop := regexp.MustCompile("[^a-z0-9 _-]")
	for _, line := range strings.Split(string(b), "\n") {
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		if strings.HasPrefix(line, "#") && strings.ReplaceAll(drop.ReplaceAllString(h, ""), " ", "-") == anchor {
			return
		}
	}
	t.Errorf("%s has no heading with anchor #%s", file, anchor)
}
