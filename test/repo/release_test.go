/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package repo

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The license the source headers name is the one in LICENSE, and the
// other release files exist.
func TestReleaseFiles(t *testing.T) {
	if h := read(t, "hack/boilerplate.go.txt"); !strings.Contains(h, "Apache License, Version 2.0") {
		t.Fatalf("hack/boilerplate.go.txt no longer names Apache-2.0: update this test and LICENSE together")
	}
	license := read(t, "LICENSE")
	for _, want := range []string{"Apache License", "Version 2.0, January 2004", "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION", "END OF TERMS AND CONDITIONS", "APPENDIX: How to apply the Apache License to your work."} {
		if !strings.Contains(license, want) {
			t.Errorf("LICENSE lacks %q: it is not the full Apache-2.0 text", want)
		}
	}
	for _, f := range []string{"CONTRIBUTING.md", "SECURITY.md", "CHANGELOG.md"} {
		if len(strings.TrimSpace(read(t, f))) == 0 {
			t.Errorf("%s is empty", f)
		}
	}
}

var (
	releaseHeading = regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$`)
	anyHeading     = regexp.MustCompile(`(?m)^## .*$`)
	// The ways the docs name a fieldops release: a kustomize ref, an image
	// tag of a fieldops image, make bundle's VERSION, a kustomize newTag.
	versionRefs = []*regexp.Regexp{
		regexp.MustCompile(`github\.com/fieldops/fieldops/\S*\?ref=v(\d+\.\d+\.\d+)`),
		regexp.MustCompile(`fieldops[\w.-]*:v(\d+\.\d+\.\d+)`),
		regexp.MustCompile(`\bVERSION=(\d+\.\d+\.\d+)`),
		regexp.MustCompile(`newTag: v(\d+\.\d+\.\d+)`),
	}
)

// latestRelease is the first "## [x.y.z] - date" of CHANGELOG.md, after
// checking the file keeps Keep a Changelog's shape.
func latestRelease(t *testing.T) string {
	t.Helper()
	cl := read(t, "CHANGELOG.md")
	headings := anyHeading.FindAllString(cl, -1)
	if len(headings) == 0 || headings[0] != "## [Unreleased]" {
		t.Fatalf("CHANGELOG.md: the first section must be ## [Unreleased], got %q", headings)
	}
	releases := releaseHeading.FindAllStringSubmatch(cl, -1)
	if len(releases) == 0 {
		t.Fatal("CHANGELOG.md has no release section (## [x.y.z] - YYYY-MM-DD)")
	}
	if len(releases) != len(headings)-1 {
		t.Errorf("CHANGELOG.md: every section after Unreleased must read ## [x.y.z] - YYYY-MM-DD: %q", headings[1:])
	}
	for i, r := range releases {
		if i > 0 && r[2] > releases[i-1][2] {
			t.Errorf("CHANGELOG.md: %s (%s) is listed after the older %s (%s)", r[1], r[2], releases[i-1][1], releases[i-1][2])
		}
		link := "[" + r[1] + "]: https://github.com/fieldops/fieldops/"
		if !strings.Contains(cl, link) {
			t.Errorf("CHANGELOG.md has no link %s...", link)
		}
	}
	if !strings.Contains(cl, "[Unreleased]: https://github.com/fieldops/fieldops/compare/v"+releases[0][1]+"...HEAD") {
		t.Errorf("CHANGELOG.md: the [Unreleased] link must compare v%s...HEAD", releases[0][1])
	}
	return releases[0][1]
}

// The version the docs install, the OLM bundle's version and the latest
// release of CHANGELOG.md are one.
func TestVersionsAgree(t *testing.T) {
	v := latestRelease(t)

	var csv struct {
		Metadata struct {
			Name        string            `json:"name"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Version string `json:"version"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(read(t, "bundle/manifests/fieldops.clusterserviceversion.yaml")), &csv); err != nil {
		t.Fatal(err)
	}
	if csv.Spec.Version != v || csv.Metadata.Name != "fieldops.v"+v {
		t.Errorf("the bundle's CSV is %s version %s; CHANGELOG.md's latest release is %s (make bundle VERSION=%s)", csv.Metadata.Name, csv.Spec.Version, v, v)
	}
	if img := csv.Metadata.Annotations["containerImage"]; !strings.HasSuffix(img, ":v"+v) {
		t.Errorf("the CSV's containerImage %q is not tagged v%s", img, v)
	}

	docs, _ := filepath.Glob(filepath.Join(root(t), "docs", "*.md"))
	docs = append(docs, filepath.Join(root(t), "README.md"), filepath.Join(root(t), "bundle", "README.md"), filepath.Join(root(t), "plugins", "README.md"))
	found := 0
	for _, f := range docs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root(t), f)
		for _, re := range versionRefs {
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				found++
				if m[1] != v {
					t.Errorf("%s names %q: the latest release in CHANGELOG.md is %s", rel, m[0], v)
				}
			}
		}
	}
	if found == 0 {
		t.Error("no doc names a fieldops version: the patterns of this test are out of date")
	}
}
