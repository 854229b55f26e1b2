/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package repo

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Limits of every function in ownershipcore/ and controllers/: one screen
// each.
const (
	maxReconcileLines      = 60 // from func to its closing brace
	maxReconcileComplexity = 15 // cyclomatic, as gocyclo counts it
)

// Every function in ownershipcore/ and controllers/ (production code; the
// Reconcile functions and phases first among them) fits one screen: at
// most 60 lines and cyclomatic complexity 15.
func TestFunctionsFitOneScreen(t *testing.T) {
	for _, dir := range []string{"ownershipcore", "controllers"} {
		checkFunctions(t, dir)
	}
}

func checkFunctions(t *testing.T, dir string) {
	fset := token.NewFileSet()
	checked, reconciles := 0, 0
	err := filepath.WalkDir(filepath.Join(root(t), dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			checked++
			if reconcileOrPhase(fn) {
				reconciles++
			}
			rel, _ := filepath.Rel(root(t), path)
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if lines > maxReconcileLines {
				t.Errorf("%s: %s is %d lines, want at most %d", rel, fn.Name.Name, lines, maxReconcileLines)
			}
			if c := complexity(fn); c > maxReconcileComplexity {
				t.Errorf("%s: %s has cyclomatic complexity %d, want at most %d", rel, fn.Name.Name, c, maxReconcileComplexity)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if dir == "controllers" && reconciles < 3 {
		t.Fatalf("checked %d Reconcile functions and phases; the controllers have at least three Reconcile", reconciles)
	}
	if checked < 50 {
		t.Fatalf("checked %d functions in %s", checked, dir)
	}
}

// reconcileOrPhase reports whether fn is Reconcile, reconcile* or a
// phase: a function with a skeleton.Step among its results.
func reconcileOrPhase(fn *ast.FuncDecl) bool {
	if n := fn.Name.Name; n == "Reconcile" || strings.HasPrefix(n, "reconcile") {
		return true
	}
	if fn.Type.Results == nil {
		return false
	}
	for _, r := range fn.Type.Results.List {
		if sel, ok := r.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Step" {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "skeleton" {
				return true
			}
		}
	}
	return false
}

// complexity is fn's cyclomatic complexity as github.com/fzipp/gocyclo
// counts it: 1, plus one per if, for, range, case and select case (not
// default), && and ||. Function literals in fn count towards it.
func complexity(fn *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

// writePath are the files of the ownership core that send requests: the
// apply, the let-go, the one guarded write and its JSON patch. The model
// (pure operations, checks, comparisons, plans) is elsewhere.
var writePath = []string{"applier.go", "letgo.go", "commit.go", "jsonpatch.go"}

// The ownership core's write path is at most 1,000 lines, licence headers
// included: what sends requests stays small enough to read whole.
func TestWritePathFitsAThousandLines(t *testing.T) {
	total := 0
	for _, f := range writePath {
		b, err := os.ReadFile(filepath.Join(root(t), "ownershipcore", f))
		if err != nil {
			t.Fatal(err)
		}
		total += bytes.Count(b, []byte("\n"))
	}
	if total > 1000 {
		t.Errorf("ownershipcore's write path (%v) is %d lines, more than 1,000: move what is pure into the model's files", writePath, total)
	}
}
