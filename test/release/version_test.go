/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// make release takes a SemVer 2.0.0 version (a pre-release such as
// v0.3.0-rc.1 too) and refuses anything else at once, before it builds a
// tool (make release-version is its first prerequisite).
func TestReleaseVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		ok      bool
	}{
		{"v0.3.0", true},
		{"0.3.0", true},
		{"v0.3.0-rc.1", true},
		{"v1.0.0-alpha.beta-2", true},
		{"v1.2.3+build.5", true},
		{"v0.3", false},
		{"v01.2.3", false},
		{"v0.3.0-", false},
		{"latest", false},
		{"", false},
	} {
		out, err := exec.Command("make", "-s", "-C", moduleRoot(t), "release-version", "VERSION="+tc.version).CombinedOutput()
		if (err == nil) != tc.ok {
			t.Errorf("make release-version VERSION=%q: %v, want ok=%v\n%s", tc.version, err, tc.ok, out)
		}
		if !tc.ok && !strings.Contains(string(out), "make release VERSION=vX.Y.Z") {
			t.Errorf("VERSION=%q refused without saying what a version is: %s", tc.version, out)
		}
	}
}

// The release workflow runs on pre-release tags too, uploads every
// checksum file make release writes, and has krew-release-bot open the
// krew-index pull request the krew manifest's template promises (for a
// release, not a pre-release).
func TestReleaseWorkflow(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), ".github", "workflows", "release.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	wf := string(b)
	for _, want := range []string{
		"'v[0-9]+.[0-9]+.[0-9]+-*'",
		" SHA256SUMS SHA256SUMS-all ",
		"uses: rajatjindal/krew-release-bot@v",
		"krew_template_file: deploy/krew/fieldops.yaml",
		"if: ${{ !contains(github.ref_name, '-') }}",
		"--prerelease",
	} {
		if !strings.Contains(wf, want) {
			t.Errorf("release.yaml lacks %q", want)
		}
	}
	mk, err := os.ReadFile(filepath.Join(moduleRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sums := range []string{"> SHA256SUMS\n", "> SHA256SUMS-all\n"} {
		if !strings.Contains(string(mk), sums) {
			t.Errorf("the Makefile no longer writes %q: check what release.yaml uploads", strings.TrimSpace(sums))
		}
	}
}
