/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package repo

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 14: the ownership core is the only place that knows managed
// fields. No controller, no command and no shared package under internal/
// imports structured-merge-diff: they hold field sets through
// ownershipcore/fieldset (a leaf naming its types and building paths), ask
// schema questions through ownershipcore.SchemaInfo, and never decode
// metadata.managedFields themselves. Controllers and commands keep it out of
// their tests too; tests under internal/ may build structured-merge-diff
// values (a typed schema parsed from YAML) to feed the core. plugins/ (the
// SDK's path type) and ownershipcore/ itself are not checked.
func TestOnlyTheCoreImportsStructuredMergeDiff(t *testing.T) {
	for _, c := range []struct {
		format   string
		packages []string
	}{
		{`{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, []string{"./controllers/...", "./cmd/..."}},
		{`{{.ImportPath}} {{join .Imports " "}}`, []string{"./internal/..."}},
	} {
		cmd := exec.Command("go", append([]string{"list", "-f", c.format}, c.packages...)...)
		cmd.Dir = root(t)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			fields := strings.Fields(line)
			for _, imp := range fields[1:] {
				if strings.HasPrefix(imp, "sigs.k8s.io/structured-merge-diff") {
					t.Errorf("%s imports %s: use ownershipcore (and ownershipcore/fieldset for the types)", fields[0], imp)
				}
			}
		}
	}
}

// Nor do they read or write metadata.managedFields outside the core's
// functions (ownershipcore.Owners, ManagerNames, HasManager, …).
func TestOnlyTheCoreReadsManagedFields(t *testing.T) {
	for _, dir := range []string{"controllers", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root(t), dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, call := range []string{".GetManagedFields()", ".SetManagedFields("} {
				if strings.Contains(string(b), call) {
					t.Errorf("%s calls %s: use the ownership core", path, call)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// The target rules plan and the FieldPatch controller share
// (internal/patchtarget) link no controller: neither fieldops's
// controllers nor controller-runtime's manager, controllers or builder.
func TestSharedTargetRulesLinkNoController(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./internal/patchtarget")
	cmd.Dir = root(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/fieldops/fieldops/controllers") || strings.HasPrefix(dep, "sigs.k8s.io/controller-runtime/pkg/manager") ||
			strings.HasPrefix(dep, "sigs.k8s.io/controller-runtime/pkg/controller") || strings.HasPrefix(dep, "sigs.k8s.io/controller-runtime/pkg/builder") {
			t.Errorf("internal/patchtarget links %s", dep)
		}
	}
}

// STYLE.md rule 10: command code lives under cmd/ (Kubernetes:
// cmd/<binary>/app) and internal/ holds what several binaries share, so no
// package under internal/ imports the layers above it: neither fieldops's
// controllers nor any command. Only production imports are checked; a
// test under internal/ may start a controller to exercise what it shares.
func TestInternalImportsNoControllerOrCommand(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./internal/...")
	cmd.Dir = root(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const module = "github.com/fieldops/fieldops/"
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		seen++
		for _, imp := range fields[1:] {
			for _, layer := range []string{"controllers", "cmd"} {
				if imp == module+layer || strings.HasPrefix(imp, module+layer+"/") {
					t.Errorf("%s imports %s: internal/ holds what the binaries share and imports no controller or command (STYLE.md)", fields[0], imp)
				}
			}
		}
	}
	if seen < 5 {
		t.Fatalf("go list listed only %d packages under internal/:\n%s", seen, out)
	}
}
