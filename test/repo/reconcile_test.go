/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package repo

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// Limits of every Reconcile, reconcile* function and phase in controllers/
// (issue 14: one screen each).
const (
	maxReconcileLines      = 60 // from func to its closing brace
	maxReconcileComplexity = 15 // cyclomatic, as gocyclo counts it
)

// Issue 14 part 4: every Reconcile, every reconcile* function and every
// phase (a function returning a skeleton.Step) in controllers/ fits one
// screen: at most 60 lines and cyclomatic complexity 15.
func TestReconcilesFitOneScreen(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(filepath.Join(root(t), "controllers"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || !reconcileOrPhase(fn) {
				continue
			}
			checked++
			rel, _ := filepath.Rel(root(t), path)
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if lines > maxReconcileLines {
				t.Errorf("%s: %s is %d lines, want at most %d", rel, fn.Name.Name, lines, maxReconcileLines)
			}
			if c := complexity(fn); c > maxReconcileComplexity {
				t.Errorf("%s: %s has cyclomatic complexity %d, want at most %d", rel, fn.Name.Name, c, maxReconcileComplexity)
			}
			t.Logf("%s %s: %d lines, complexity %d", rel, fn.Name.Name, lines, complexity(fn))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 3 {
		t.Fatalf("checked %d functions; the controllers have at least three Reconcile", checked)
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
