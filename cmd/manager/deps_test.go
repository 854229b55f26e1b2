/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The production manager links neither the local control plane nor
// envtest (DESIGN.md, "The local control plane"; cmd/fieldops-local is the
// local mode), and no package of its own or of its libraries brings in
// `testing`, except the one known below.
func TestManagerDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	// github.com/hashicorp/go-plugin (the plugin host's library) ships
	// test helpers (testing.go: TestConn, TestPluginGRPCConn, ...) in
	// its main package, so `testing` is in its imports; nothing else may
	// add it.
	allowTesting := map[string]bool{"github.com/hashicorp/go-plugin": true}
	forbidden := []string{
		"github.com/fieldops/fieldops/internal/localcp",
		"github.com/fieldops/fieldops/test/",
		"sigs.k8s.io/controller-runtime/pkg/envtest",
		"sigs.k8s.io/controller-runtime/pkg/internal/testing/",
		"github.com/onsi/",
	}
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		seen++
		// The image builds from the directories the Dockerfile copies.
		if dir, ok := strings.CutPrefix(pkg, "github.com/fieldops/fieldops/"); ok && !copied(string(dockerfile), dir) {
			t.Errorf("the Dockerfile copies no directory holding %s, which cmd/manager needs", dir)
		}
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, f) || strings.HasPrefix(pkg, f+"/") {
				t.Errorf("cmd/manager depends on %s", pkg)
			}
		}
		for _, imp := range imports {
			if imp == "testing" && !allowTesting[pkg] {
				t.Errorf("%s, a dependency of cmd/manager, imports testing", pkg)
			}
		}
	}
	if seen < 100 {
		t.Fatalf("go list -deps listed only %d packages:\n%s", seen, out)
	}
}

// copied reports whether a COPY line of the Dockerfile copies dir or a
// parent of it.
func copied(dockerfile, dir string) bool {
	for _, line := range strings.Split(dockerfile, "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "COPY" && strings.HasPrefix(dir+"/", strings.TrimSuffix(f[1], "/")+"/") {
			return true
		}
	}
	return false
}
