/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package repo

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldops/fieldops/internal/localcp"
)

// maxTrackedSize is the largest file git may track outside test data: a
// build output (an 84 MB kubectl-fieldops binary was once committed) or a
// dump is always bigger, sources and manifests are far smaller.
const maxTrackedSize = 1 << 20

// testData holds upstream manifests kept byte for byte (see its
// SOURCES.md); they may be big.
const testData = "test/testdata/"

// root is the module root, the top of the checkout.
func root(t *testing.T) string {
	t.Helper()
	r, err := localcp.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// git runs git in the checkout, skipping the test when there is no git or
// no repository (a source tarball).
func git(t *testing.T, args ...string) []byte {
	t.Helper()
	dir := root(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		t.Skip("not a git checkout")
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// trackedFiles are the paths in git's index (committed or staged).
func trackedFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, p := range bytes.Split(git(t, "ls-files", "-z"), []byte{0}) {
		if len(p) > 0 {
			out = append(out, string(p))
		}
	}
	if len(out) == 0 {
		t.Fatal("git ls-files lists nothing")
	}
	return out
}

// No tracked file outside test/testdata is over 1 MB.
func TestNoLargeTrackedFiles(t *testing.T) {
	dir := root(t)
	for _, p := range trackedFiles(t) {
		if strings.HasPrefix(p, testData) {
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, p))
		if err != nil {
			continue // deleted in the work tree, not yet in the index
		}
		if fi.Size() > maxTrackedSize {
			t.Errorf("%s is tracked and %.1f MB (over 1 MB): build outputs belong in bin/ (ignored), large test inputs in %s with their source in SOURCES.md", p, float64(fi.Size())/(1<<20), testData)
		}
	}
}

// Build outputs are ignored and documentation is not (a `cover*` pattern
// once hid docs/coverage.md).
func TestGitignore(t *testing.T) {
	ignored := func(path string) bool {
		t.Helper()
		dir := root(t)
		if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
			t.Skip("not a git checkout")
		}
		cmd := exec.Command("git", "check-ignore", "--no-index", "-q", path)
		cmd.Dir = dir
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
			return false
		}
		if err != nil {
			t.Fatalf("git check-ignore %s: %v", path, err)
		}
		return true
	}
	for _, p := range []string{"bin", "kubectl-fieldops", "manager", "cover.out", "coverage.html", "controllers/fieldpatch/fieldpatch.test"} {
		if !ignored(p) {
			t.Errorf("%s is not ignored by .gitignore", p)
		}
	}
	for _, p := range []string{"docs/coverage.md", "docs/manager.md", "cmd/manager/main.go", "cmd/kubectl-fieldops/main.go", "test/testdata/SOURCES.md", "config/manager/manager.yaml"} {
		if ignored(p) {
			t.Errorf("%s is ignored by .gitignore", p)
		}
	}
}
