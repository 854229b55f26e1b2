/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"text/template"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"
)

// krewPlugin is the part of krew's Plugin manifest (index/v1alpha2) the
// test checks.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			Sha256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// The krew manifest, rendered as krew-release-bot renders it for a tag,
// is a valid krew Plugin for this binary: krew's name and version rules,
// one platform per release archive `make kubectl-fieldops-dist` builds.
func TestKrewManifest(t *testing.T) {
	const tag = "v1.2.3"
	src, err := os.ReadFile("../../deploy/krew/fieldops.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// krew-release-bot's addURIAndSha: the URI with the tag, and the
	// archive's sha256 (a stand-in here).
	funcs := template.FuncMap{"addURIAndSha": func(uri, tag string) string {
		return fmt.Sprintf("uri: %s\n    sha256: %s", strings.ReplaceAll(uri, "{{ .TagName }}", tag), strings.Repeat("ab", 32))
	}}
	tmpl, err := template.New("krew").Funcs(funcs).Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, map[string]string{"TagName": tag}); err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(b.Bytes(), &p); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" {
		t.Errorf("apiVersion %q kind %q", p.APIVersion, p.Kind)
	}
	// kubectl runs kubectl-NAME for `kubectl NAME`.
	if p.Metadata.Name != "fieldops" {
		t.Errorf("name %q: kubectl-fieldops is run as kubectl fieldops", p.Metadata.Name)
	}
	if p.Spec.Version != tag {
		t.Errorf("version %q, want %q", p.Spec.Version, tag)
	}
	if p.Spec.ShortDescription == "" || strings.Contains(p.Spec.ShortDescription, "\n") || p.Spec.Description == "" || p.Spec.Homepage == "" {
		t.Errorf("krew needs a one-line shortDescription, a description and a homepage: %+v", p.Spec)
	}
	// The description names every command of the plugin.
	for _, c := range NewCommand(genericiooptions.IOStreams{}).Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(c.Name()) + `\s`).MatchString(p.Spec.Description) {
			t.Errorf("the krew description does not name the command %s:\n%s", c.Name(), p.Spec.Description)
		}
	}
	archive := regexp.MustCompile(`^https://github\.com/fieldops/fieldops/releases/download/` + tag + `/kubectl-fieldops_` + tag + `_([a-z]+)_([a-z0-9]+)\.tar\.gz$`)
	seen := map[string]bool{}
	for _, pl := range p.Spec.Platforms {
		os, arch := pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]
		m := archive.FindStringSubmatch(pl.URI)
		if m == nil || m[1] != os || m[2] != arch {
			t.Errorf("%s/%s: uri %q is not the archive make kubectl-fieldops-dist builds for it", os, arch, pl.URI)
		}
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(pl.Sha256) {
			t.Errorf("%s/%s: sha256 %q", os, arch, pl.Sha256)
		}
		want := "kubectl-fieldops"
		if os == "windows" {
			want += ".exe"
		}
		if pl.Bin != want {
			t.Errorf("%s/%s: bin %q, want %q", os, arch, pl.Bin, want)
		}
		seen[os+"/"+arch] = true
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	platforms := regexp.MustCompile(`(?m)^KUBECTL_FIELDOPS_PLATFORMS \?= (.*)$`).FindSubmatch(makefile)
	if platforms == nil {
		t.Fatal("Makefile: no KUBECTL_FIELDOPS_PLATFORMS")
	}
	built := strings.Fields(string(platforms[1]))
	for _, p := range built {
		if !seen[p] {
			t.Errorf("the Makefile builds %s, the manifest does not list it", p)
		}
	}
	if len(seen) != len(built) {
		t.Errorf("the manifest lists %d platforms, the Makefile builds %d", len(seen), len(built))
	}
}
