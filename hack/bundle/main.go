/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command bundle writes fieldops's OLM bundle from config/ (see
// internal/bundle.Generate) and checks it (internal/bundlecheck):
//
//	go run ./hack/bundle --version 0.1.0 [--image REGISTRY/manager:v0.1.0] [--channels candidate] [--out DIR]
//	go run ./hack/bundle --check [--out DIR]
//
// It replaces bundle/manifests, bundle/metadata and bundle/tests and
// writes bundle.Dockerfile, under the module root or --out, then checks
// what it wrote; `make bundle VERSION=x.y.z` runs it, and `make release`
// with --out dist. With --check it only checks the bundle there (`make
// bundle-validate`).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fieldops/fieldops/internal/bundle"
	"github.com/fieldops/fieldops/internal/bundlecheck"
	"github.com/fieldops/fieldops/internal/localcp"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

func run() error {
	var o bundle.Options
	var channels string
	flag.StringVar(&o.Version, "version", "", "operator version (semver, no leading v); required")
	flag.StringVar(&o.Image, "image", "", "manager image (default "+bundle.DefaultImageRepo+":v<version>)")
	out := flag.String("out", "", "directory to write the bundle under (default: the module root)")
	flag.StringVar(&channels, "channels", "candidate", "comma-separated OLM channels; the first is the default")
	checkOnly := flag.Bool("check", false, "only check the bundle under the module root or --out")
	flag.Parse()
	root, err := localcp.ModuleRoot()
	if err != nil {
		return err
	}
	dest := root
	if *out != "" {
		dest = *out
	}
	if *checkOnly {
		return check(dest)
	}
	if o.Version == "" {
		return fmt.Errorf("--version is required, e.g. make bundle VERSION=0.1.0")
	}
	o.Version = strings.TrimPrefix(o.Version, "v")
	o.Channels = strings.Split(channels, ",")
	o.Root = root
	files, err := bundle.Generate(o)
	if err != nil {
		return err
	}
	for _, d := range []string{"manifests", "metadata", "tests"} {
		if err := os.RemoveAll(filepath.Join(dest, bundle.BundleDir, d)); err != nil {
			return err
		}
	}
	if err := bundle.WriteFiles(dest, files, func(name string) { fmt.Println("wrote", name) }); err != nil {
		return err
	}
	return check(dest)
}

// check prints the problems of the bundle under dest, and fails on one.
func check(dest string) error {
	dir := filepath.Join(dest, bundle.BundleDir)
	if errs := bundlecheck.Validate(dir, filepath.Join(dest, bundle.Dockerfile)); len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintln(os.Stderr, "invalid:", strings.Join(strings.Fields(e.Error()), " "))
		}
		return fmt.Errorf("the bundle in %s is invalid (%d problems)", dir, len(errs))
	}
	fmt.Println(dir + ": valid")
	return nil
}
