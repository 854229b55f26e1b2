/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package repo

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// writeVerbs are the methods that write an object: controller-runtime's
// client.Writer and client.SubResourceWriter, client-go's dynamic
// ResourceInterface.
var writeVerbs = map[string]bool{"Create": true, "Update": true, "Patch": true, "Apply": true, "Delete": true}

// The packages that hold writes to targets: fieldops's product code
// (api, cmd, controllers, feature, internal, metrics, plugins). The core
// itself (ownershipcore/...) is where they belong; test/ and hack/ are
// test drivers and benchmarks that play the other field managers.
var targetWritePackages = []string{"./api/...", "./cmd/...", "./controllers/...", "./feature/...", "./internal/...", "./metrics/...", "./plugins/..."}

// targetWriteExceptions are the files allowed to write targets outside
// the core, each with the reason.
var targetWriteExceptions = map[string]string{
	"cmd/fieldops-local/install.go":             "fieldops-local installs the admission and RBAC objects of config/default (rendered by kustomize, so unstructured) and onboards the default namespace as the guide does: objects of fieldops's own installation, not targets",
	"internal/fieldplan/plan.go":                "the plan (kubectl fieldops plan) dry-runs the creation of the FieldPatch or ManagedWorkload it plans (client.Object): fieldops's own resource, never stored",
	"controllers/internal/skeleton/skeleton.go": "the reconcile skeleton patches the finalizer and the status of the reconciled object (a type parameter): fieldops's own resource",
	"controllers/internal/skeleton/writes.go":   "RemoveFinalizer patches the finalizer of the reconciled object (a FieldPatch, a ManagedWorkload): fieldops's own resource",
	"internal/localcp/policy.go":                "the local control plane (make run-local, tests) installs fieldops's own admission policies and dry-runs a probe FieldPatch: objects of fieldops's own installation, not targets",
	"controllers/accountuse/accountuse.go":      "the in-use protection patches only the finalizers of the accounts fieldops objects act as (ServiceAccounts, RoleBindings, Roles; client.Object): never a target's content",
	"internal/patchplan/execute.go":             "Execute sends a plan's apply through its patchplan.Writer, whose implementations (the controller's targetWriter, kubectl fieldops plan's dry run) send it through the ownership core's Applier.Apply",
	"internal/localcp/upstream.go":              "the local control plane applies the demo's upstream objects under the managers that own them in a real cluster (Helm, Flux): it plays those managers, as test/ does",
}

// Issue 41: every write to a target goes through the ownership core,
// guarded by uid and resourceVersion. A target is an object fieldops
// does not define (a FieldPatch's target, a ManagedWorkload's resource):
// fieldops holds such objects as *unstructured.Unstructured, since their
// kinds are known only at run time. So a target write is a call of a
// method named Create, Update, Patch, Apply or Delete (on a client, a
// status or other subresource writer, a dynamic client; a method of the
// ownership core itself is the way through it) with an argument that may
// be a target (mayBeTarget): a *unstructured.Unstructured, an apply
// configuration made from one, or an object whose type is not known
// statically (a type parameter, client.Object). Writes of typed objects
// are not target writes: fieldops's own custom resources and their
// status, Events, Leases, its own Secrets, a PodSet's Pods (which it
// controls, as a StatefulSet does its Pods). Production code only (tests
// play the other managers). Every exception must still be found, so the
// check cannot go blind without failing.
func TestOnlyTheCoreWritesTargets(t *testing.T) {
	pkgs := listExported(t, targetWritePackages)
	imp := exportImporter(pkgs)
	found := map[string][]string{}
	checked := 0
	for _, p := range pkgs {
		if !p.inModule || len(p.GoFiles) == 0 {
			continue
		}
		checked++
		for _, w := range targetWrites(t, imp, p) {
			found[w.file] = append(found[w.file], w.String())
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d packages", checked)
	}
	files := make([]string, 0, len(found))
	for f := range found {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		if _, ok := targetWriteExceptions[f]; !ok {
			t.Errorf("%s writes targets outside the ownership core: %s", f, strings.Join(found[f], "; "))
		}
	}
	for f, why := range targetWriteExceptions {
		if _, ok := found[f]; !ok {
			t.Errorf("%s is allowed to write targets (%s) but writes none: remove it from the exceptions", f, why)
		}
	}
}

// exported is one package of `go list -export -deps`.
type exported struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Export     string
	Module     *struct{ Path string }
	inModule   bool
}

// listExported lists patterns and their dependencies with their export
// data (compiled by the go command as for a build).
func listExported(t *testing.T, patterns []string) []*exported {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,Export,Module"}, patterns...)...)
	cmd.Dir = root(t)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	var pkgs []*exported
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		p := &exported{}
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		p.inModule = p.Module != nil && p.Module.Path == "github.com/fieldops/fieldops" &&
			!strings.HasPrefix(p.ImportPath, "github.com/fieldops/fieldops/ownershipcore") &&
			!strings.HasPrefix(p.ImportPath, "github.com/fieldops/fieldops/test/") &&
			!strings.HasPrefix(p.ImportPath, "github.com/fieldops/fieldops/hack/")
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// exportImporter imports packages from the export data go list named.
func exportImporter(pkgs []*exported) types.Importer {
	files := map[string]string{}
	for _, p := range pkgs {
		files[p.ImportPath] = p.Export
	}
	lookup := func(path string) (io.ReadCloser, error) {
		f, ok := files[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	}
	return importer.ForCompiler(token.NewFileSet(), "gc", lookup)
}

// targetWrite is one call that writes a target.
type targetWrite struct {
	file, call string
	line       int
}

func (w targetWrite) String() string { return fmt.Sprintf("line %d: %s", w.line, w.call) }

// targetWrites type-checks p's files and returns its target writes.
func targetWrites(t *testing.T, imp types.Importer, p *exported) []targetWrite {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Selections: map[*ast.SelectorExpr]*types.Selection{}, Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: imp.(types.ImporterFrom), Error: func(error) {}}
	if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
		t.Fatalf("type-check %s: %v", p.ImportPath, err)
	}
	var out []targetWrite
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			m := info.Selections[sel]
			if !writeVerbs[sel.Sel.Name] || m == nil || m.Kind() != types.MethodVal || inCore(m.Obj()) {
				return true
			}
			if writesTarget(info, call) {
				pos := fset.Position(call.Pos())
				rel, _ := filepath.Rel(root(t), pos.Filename)
				out = append(out, targetWrite{file: rel, line: pos.Line, call: types.ExprString(call.Fun)})
			}
			return true
		})
	}
	return out
}

// inCore reports whether the method m is the ownership core's (a call of
// Applier.Apply or Applier.Delete is a write through the core).
func inCore(m types.Object) bool {
	return m.Pkg() != nil && strings.HasPrefix(m.Pkg().Path(), "github.com/fieldops/fieldops/ownershipcore")
}

// writesTarget reports whether one of call's arguments may be a target
// object (mayBeTarget) or is an apply configuration made from one.
func writesTarget(info *types.Info, call *ast.CallExpr) bool {
	for _, arg := range call.Args {
		if inner, ok := arg.(*ast.CallExpr); ok {
			if sel, ok := inner.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "ApplyConfigurationFromUnstructured" {
				return true
			}
		}
		if mayBeTarget(info.TypeOf(arg)) {
			return true
		}
	}
	return false
}

// mayBeTarget reports whether a value of typ may be a target: a
// *unstructured.Unstructured; or an object whose concrete type is not
// known statically (a type parameter, an interface that is a
// runtime.Object — client.Object —, an apply configuration), unless the
// interface is one of fieldops's API (api/..., implemented by its own
// custom resources only).
func mayBeTarget(typ types.Type) bool {
	switch typ := types.Unalias(typ).(type) {
	case *types.Pointer:
		named, ok := typ.Elem().(*types.Named)
		return ok && named.Obj().Pkg() != nil &&
			named.Obj().Pkg().Path() == "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured" && named.Obj().Name() == "Unstructured"
	case *types.TypeParam:
		return true
	case *types.Named:
		if !types.IsInterface(typ) || typ.Obj().Pkg() == nil || strings.HasPrefix(typ.Obj().Pkg().Path(), "github.com/fieldops/fieldops/api") {
			return false
		}
		if typ.Obj().Pkg().Path() == "k8s.io/apimachinery/pkg/runtime" && typ.Obj().Name() == "ApplyConfiguration" {
			return true
		}
		obj, _, _ := types.LookupFieldOrMethod(typ, false, nil, "DeepCopyObject")
		return obj != nil
	}
	return false
}
