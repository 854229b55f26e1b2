/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package release

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/fieldops/fieldops/internal/bundle"
	"github.com/fieldops/fieldops/internal/bundlecheck"
)

// The images a release builds (make release: IMAGE_REPO/manager and
// IMAGE_REPO/example-plugins at vVERSION) are the ones config/, the chart,
// the bundle and the docs name; no placeholder image is left.
func TestImagesAgree(t *testing.T) {
	root := moduleRoot(t)
	b, err := bundlecheck.Load(filepath.Join(root, bundle.BundleDir), filepath.Join(root, bundle.Dockerfile))
	if err != nil {
		t.Fatal(err)
	}
	v := "v" + b.CSV.Spec.Version.String()
	manager := "ghcr.io/fieldops/manager:" + v
	plugins := "ghcr.io/fieldops/example-plugins:" + v
	if img := b.CSV.Annotations["containerImage"]; img != manager {
		t.Errorf("the CSV's containerImage is %q, want %q", img, manager)
	}
	objs, err := bundle.Render(filepath.Join(root, "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	if c := managerContainer(t, find(objs, "Deployment", "fieldops-controller-manager")); c["image"] != manager {
		t.Errorf("config/default runs %v, want %s", c["image"], manager)
	}
	if c := managerContainer(t, find(renderChart(t, nil, "v1.30.0"), "Deployment", "fieldops-controller-manager")); c["image"] != manager {
		t.Errorf("the chart runs %v, want %s", c["image"], manager)
	}
	patch, err := os.ReadFile(filepath.Join(root, "config", "plugins", "manager_plugins_patch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(patch), "image: "+plugins+"\n") {
		t.Errorf("config/plugins does not copy the plugins from %s", plugins)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"IMAGE_REPO ?= ghcr.io/fieldops\n", "IMG ?= $(IMAGE_REPO)/manager:v$(VERSION)\n", "PLUGINS_IMG ?= $(IMAGE_REPO)/example-plugins:v$(VERSION)\n"} {
		if !strings.Contains(string(makefile), want) {
			t.Errorf("Makefile lacks %q: the images make release builds moved", want)
		}
	}

	// Every fieldops image the docs and config/ name is one of them.
	named := regexp.MustCompile(`(?:ghcr\.io/)?fieldops/(?:manager|example-plugins|fieldops)[\w.-]*(?::\w[\w.-]*)?`)
	produced := regexp.MustCompile(`^ghcr\.io/fieldops/(manager|example-plugins)(:v(\d+\.\d+\.\d+|X\.Y\.Z|x\.y\.z))?$`)
	var files []string
	for _, g := range []string{"docs/*.md", "*.md", "bundle/README.md", "plugins/README.md", "config/*/*.yaml", "charts/fieldops/values.yaml"} {
		m, _ := filepath.Glob(filepath.Join(root, g))
		files = append(files, m...)
	}
	var bad []string
	for _, f := range files {
		if strings.HasSuffix(f, "CHANGELOG.md") {
			continue // names the placeholders it replaced
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range named.FindAllString(string(b), -1) {
			if strings.HasPrefix(m, "fieldops/fieldops") {
				continue // the repository
			}
			if !produced.MatchString(m) || (strings.Contains(m, ":v") && !strings.HasSuffix(m, ":"+v) && !strings.HasSuffix(strings.ToLower(m), ":vx.y.z")) {
				rel, _ := filepath.Rel(root, f)
				bad = append(bad, rel+": "+m)
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("names an image a release does not produce: %s", b)
	}
}
