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
	"slices"
	"strings"
	"testing"
)

// Issue 38, "Shape": the one-screen rule of ownershipcore/ and
// controllers/ (TestFunctionsFitOneScreen) holds for commands, shared
// packages, hack/ and the test harnesses' production-style code too.
// golangci-lint's gocyclo leaves test/ out (.golangci.yml), so this test
// is what checks the harnesses.
var oneScreenDirs = []string{"cmd", "internal", "hack", "test/benchscale", "test/invariants"}

// longFunctions are the functions of oneScreenDirs allowed past the
// one-screen rule, by file and function (Recv.Name for a method), each
// with its reason. An entry that no longer needs to be here fails the
// test: remove it.
var longFunctions = map[string]string{}

// Controllers' limits (issue 38): a file is at most 400 lines, a type
// has at most 25 methods.
const (
	maxControllerFileLines = 400
	maxMethodsPerType      = 25
)

// bigControllerFiles and wideControllerTypes are the controllers' files
// and types over those limits today, by path and by package/Type, each
// with its reason. An entry that no longer needs to be here fails the
// test: remove it.
var (
	bigControllerFiles  = map[string]string{}
	wideControllerTypes = map[string]string{}
)

// goFile is a parsed non-test, non-generated Go file of the checkout.
type goFile struct {
	rel  string // slash-separated, from the module root
	fset *token.FileSet
	file *ast.File
	size int // lines
}

// goFiles parses the non-test, non-generated Go files under dir (relative
// to the module root), with comments.
func goFiles(t *testing.T, dir string) []goFile {
	t.Helper()
	r := root(t)
	var out []goFile
	err := filepath.WalkDir(filepath.Join(r, dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		rel, err := filepath.Rel(r, path)
		if err != nil {
			return err
		}
		out = append(out, goFile{rel: filepath.ToSlash(rel), fset: fset, file: f, size: bytes.Count(src, []byte("\n"))})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// funcName is fn's name, Recv.Name for a method (the receiver's type
// without pointer or type parameters).
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	return recvType(fn.Recv.List[0].Type) + "." + fn.Name.Name
}

// recvType is the name of a receiver's type: T for T, *T, T[P] and *T[P].
func recvType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvType(e.X)
	case *ast.IndexExpr:
		return recvType(e.X)
	case *ast.IndexListExpr:
		return recvType(e.X)
	case *ast.Ident:
		return e.Name
	}
	return "?"
}

// No comment of a Go file anywhere in the checkout turns gocyclo off,
// whether its nolint directive names it or names no linter: a function
// too complex for one screen is split (into small functions or tables),
// not excused.
func TestNoNolintGocyclo(t *testing.T) {
	files := 0
	for _, f := range goFilesEverywhere(t) {
		files++
		for _, g := range f.file.Comments {
			for _, c := range g.List {
				if turnsOffGocyclo(c.Text) {
					t.Errorf("%s:%d: %s: split the function instead (issue 38)", f.rel, f.fset.Position(c.Pos()).Line, c.Text)
				}
			}
		}
	}
	if files < 100 {
		t.Fatalf("checked %d Go files", files)
	}
}

// turnsOffGocyclo reports whether a comment is a nolint directive that
// names gocyclo or, naming no linter, turns every linter off.
func turnsOffGocyclo(comment string) bool {
	i := strings.Index(comment, "nolint")
	if i < 0 || !strings.HasPrefix(comment, "//") || strings.TrimSpace(comment[2:i]) != "" {
		return false
	}
	linters, named := strings.CutPrefix(comment[i+len("nolint"):], ":")
	if !named {
		return true
	}
	linters, _, _ = strings.Cut(linters, " ")
	return slices.Contains(strings.Split(linters, ","), "gocyclo")
}

// goFilesEverywhere are the Go files of the checkout, tests and generated
// code included, outside testdata and hidden or ignored directories.
func goFilesEverywhere(t *testing.T) []goFile {
	t.Helper()
	r := root(t)
	var out []goFile
	err := filepath.WalkDir(r, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != r && (d.Name() == "testdata" || d.Name() == "bin" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(r, path)
		out = append(out, goFile{rel: filepath.ToSlash(rel), fset: fset, file: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every function of oneScreenDirs (production-style code: not tests, not
// generated) is at most 60 lines and of cyclomatic complexity at most 15,
// as in ownershipcore/ and controllers/, but for longFunctions.
func TestOneScreenBeyondControllers(t *testing.T) {
	used := map[string]bool{}
	for _, dir := range oneScreenDirs {
		checked := 0
		for _, f := range goFiles(t, dir) {
			for _, decl := range f.file.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				checked++
				key := f.rel + " " + funcName(fn)
				lines := f.fset.Position(fn.End()).Line - f.fset.Position(fn.Pos()).Line + 1
				c := complexity(fn)
				if lines <= maxReconcileLines && c <= maxReconcileComplexity {
					continue
				}
				if _, ok := longFunctions[key]; ok {
					used[key] = true
					continue
				}
				t.Errorf("%s: %s is %d lines with cyclomatic complexity %d, want at most %d lines and %d: split it into small functions or tables", f.rel, funcName(fn), lines, c, maxReconcileLines, maxReconcileComplexity)
			}
		}
		if checked < 10 {
			t.Fatalf("checked %d functions in %s", checked, dir)
		}
	}
	for key := range longFunctions {
		if !used[key] {
			t.Errorf("longFunctions lists %q, which now fits one screen (or is gone): remove the entry", key)
		}
	}
}

// No file of controllers/ (not tests, not generated) is over 400 lines,
// and no type there has more than 25 methods, but for bigControllerFiles
// and wideControllerTypes.
func TestControllersShape(t *testing.T) {
	files := goFiles(t, "controllers")
	if len(files) < 20 {
		t.Fatalf("checked %d files in controllers", len(files))
	}
	usedFiles := map[string]bool{}
	methods := map[string]int{} // package directory/Type
	for _, f := range files {
		if f.size > maxControllerFileLines {
			if _, ok := bigControllerFiles[f.rel]; ok {
				usedFiles[f.rel] = true
			} else {
				t.Errorf("%s is %d lines, want at most %d: split it by concern", f.rel, f.size, maxControllerFileLines)
			}
		}
		for _, decl := range f.file.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv != nil && len(fn.Recv.List) > 0 {
				methods[pathDir(f.rel)+"."+recvType(fn.Recv.List[0].Type)]++
			}
		}
	}
	usedTypes := map[string]bool{}
	for typ, n := range methods {
		if n <= maxMethodsPerType {
			continue
		}
		if _, ok := wideControllerTypes[typ]; ok {
			usedTypes[typ] = true
			continue
		}
		t.Errorf("%s has %d methods, want at most %d: give its concerns types of their own", typ, n, maxMethodsPerType)
	}
	for _, k := range sortedKeys(bigControllerFiles) {
		if !usedFiles[k] {
			t.Errorf("bigControllerFiles lists %s, which is now at most %d lines (or gone): remove the entry", k, maxControllerFileLines)
		}
	}
	for _, k := range sortedKeys(wideControllerTypes) {
		if !usedTypes[k] {
			t.Errorf("wideControllerTypes lists %s, which now has at most %d methods (or is gone): remove the entry", k, maxMethodsPerType)
		}
	}
}

// pathDir is the directory of a slash-separated path.
func pathDir(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[:i]
	}
	return "."
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// turnsOffGocyclo tells the directives that silence gocyclo from the
// others.
func TestTurnsOffGocyclo(t *testing.T) {
	// The directive is spelt in two parts so that a grep for it finds
	// none in the checkout.
	directive := "//nolint:" + "gocyclo"
	for c, want := range map[string]bool{
		directive + " // why":                 true,
		"//nolint:errcheck,gocyclo // why":    true,
		"//nolint // why":                     true,
		"//nolint":                            true,
		"//nolint:errcheck // see above.":     false,
		"//nolint:staticcheck // SA1019":      false,
		"// gocyclo counts each case":         false,
		"// a " + directive[2:] + " is split": false,
		"/* " + directive[2:] + " */":         false,
	} {
		if got := turnsOffGocyclo(c); got != want {
			t.Errorf("turnsOffGocyclo(%q) = %v, want %v", c, got, want)
		}
	}
}

// Every allow-list entry says why.
func TestShapeAllowListsHaveReasons(t *testing.T) {
	for name, list := range map[string]map[string]string{"longFunctions": longFunctions, "bigControllerFiles": bigControllerFiles, "wideControllerTypes": wideControllerTypes} {
		for k, why := range list {
			if strings.TrimSpace(why) == "" {
				t.Errorf("%s: %s has no reason", name, k)
			}
		}
	}
}
