/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package repo

import (
	"os/exec"
	"strings"
	"testing"
)

// deps returns the packages pkgs link (go list -deps).
func deps(t *testing.T, pkgs ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...)
	cmd.Dir = root(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// Issue 14 part 3: the kubectl plugin links what a client needs (the
// scheme, names, the ownership core, and the plugin host that `plan
// --plugin-config` runs a conflict plugin with, as the controller does),
// never the controllers or controller-runtime's manager;
// a fieldops plugin links the SDK and the plugin-facing leaf packages,
// never the ownership core itself.
func TestCommandsLinkOnlyWhatTheyNeed(t *testing.T) {
	for _, tc := range []struct {
		pkg    string
		banned []string
	}{
		{"./cmd/kubectl-fieldops", []string{"github.com/fieldops/fieldops/controllers", "sigs.k8s.io/controller-runtime/pkg/manager", "sigs.k8s.io/controller-runtime/pkg/builder"}},
		{"./plugins/examples/...", []string{"github.com/fieldops/fieldops/controllers", "github.com/fieldops/fieldops/ownershipcore"}},
		// Helm's Go module is for the chart's tests (test/release) and
		// hack/chart only.
		{"./cmd/manager", []string{"helm.sh/helm"}},
		{"./cmd/kubectl-fieldops", []string{"helm.sh/helm"}},
		// gopher-lua (the Lua interpreter Argo CD embeds) runs the Argo CD
		// health scripts of config/argocd in test/health only.
		{"./cmd/manager", []string{"github.com/yuin/gopher-lua"}},
		{"./cmd/kubectl-fieldops", []string{"github.com/yuin/gopher-lua"}},
		{"./plugins/examples/...", []string{"github.com/yuin/gopher-lua"}},
		// go-containerregistry writes hack/kobase's base image (issue 41,
		// item 3) and is for that tool only.
		{"./cmd/manager", []string{"github.com/google/go-containerregistry"}},
		{"./cmd/kubectl-fieldops", []string{"github.com/google/go-containerregistry"}},
		{"./plugins/examples/...", []string{"github.com/google/go-containerregistry"}},
	} {
		for _, d := range deps(t, tc.pkg) {
			for _, b := range tc.banned {
				if d == b || strings.HasPrefix(d, b+"/") {
					if b == "github.com/fieldops/fieldops/ownershipcore" && (strings.HasPrefix(d, b+"/fieldset") || strings.HasPrefix(d, b+"/strategy")) {
						continue // the plugin-facing leaves
					}
					t.Errorf("%s links %s", tc.pkg, d)
				}
			}
		}
	}
}
