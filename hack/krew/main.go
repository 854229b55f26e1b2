/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command krew fills the krew plugin manifest deploy/krew/fieldops.yaml
// for a release, as krew-release-bot does on a tag: {{ .TagName }} is the
// tag, and each addURIAndSha is the archive's download URI and the
// SHA-256 of that archive in --dist (built by make kubectl-fieldops-dist).
//
//	go run ./hack/krew --tag v0.2.0 --dist dist > dist/.krew.yaml
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/fieldops/fieldops/internal/localcp"
)

func main() {
	tag := flag.String("tag", "", "the release tag, vX.Y.Z; required")
	dist := flag.String("dist", "dist", "directory holding the release archives")
	flag.Parse()
	if err := run(*tag, *dist); err != nil {
		fmt.Fprintln(os.Stderr, "krew:", err)
		os.Exit(1)
	}
}

func run(tag, dist string) error {
	if !strings.HasPrefix(tag, "v") {
		return fmt.Errorf("--tag %q: want vX.Y.Z", tag)
	}
	root, err := localcp.ModuleRoot()
	if err != nil {
		return err
	}
	src, err := os.ReadFile(filepath.Join(root, "deploy", "krew", "fieldops.yaml"))
	if err != nil {
		return err
	}
	funcs := template.FuncMap{"addURIAndSha": func(uri, tag string) (string, error) {
		uri = strings.ReplaceAll(uri, "{{ .TagName }}", tag)
		b, err := os.ReadFile(filepath.Join(dist, path.Base(uri)))
		if err != nil {
			return "", fmt.Errorf("the manifest names %s: %w", uri, err)
		}
		sum := sha256.Sum256(b)
		return fmt.Sprintf("uri: %s\n    sha256: %s", uri, hex.EncodeToString(sum[:])), nil
	}}
	tmpl, err := template.New("krew").Funcs(funcs).Option("missingkey=error").Parse(string(src))
	if err != nil {
		return err
	}
	return tmpl.Execute(os.Stdout, map[string]string{"TagName": tag})
}
