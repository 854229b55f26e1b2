/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command chart writes the generated files of the Helm chart
// charts/fieldops from config/ (see internal/chartgen.Generate):
//
//	go run ./hack/chart --version 0.2.0
//	go run ./hack/chart --version 0.2.0 --package dist
//
// `make chart` runs it with the Makefile's VERSION. With --package it
// writes nothing into the chart: it lints the chart (helm lint --strict)
// and packages it as DIR/fieldops-VERSION.tgz (helm package) with that
// version and appVersion vVERSION, as `make release` does.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/fieldops/fieldops/internal/chartgen"
	"github.com/fieldops/fieldops/internal/localcp"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

func run() error {
	var o chartgen.Options
	flag.StringVar(&o.Version, "version", "", "chart and operator version (semver); required")
	pkg := flag.String("package", "", "lint and package the chart into this directory instead of generating it")
	flag.Parse()
	if o.Version == "" {
		return fmt.Errorf("--version is required, e.g. make chart VERSION=0.2.0")
	}
	o.Version = strings.TrimPrefix(o.Version, "v")
	root, err := localcp.ModuleRoot()
	if err != nil {
		return err
	}
	o.Root = root
	if *pkg != "" {
		return packageChart(filepath.Join(root, chartgen.ChartDir), o.Version, *pkg)
	}
	files, err := chartgen.Generate(o)
	if err != nil {
		return err
	}
	return chartgen.Write(root, files)
}

// packageChart lints the chart in dir and writes it, at version and
// appVersion "v"+version, to out/fieldops-<version>.tgz.
func packageChart(dir, version, out string) error {
	l := action.NewLint()
	l.Strict = true
	res := l.Run([]string{dir}, nil)
	for _, err := range res.Errors {
		fmt.Fprintln(os.Stderr, "helm lint:", err)
	}
	if len(res.Errors) > 0 {
		return fmt.Errorf("helm lint --strict %s failed", dir)
	}
	c, err := loader.Load(dir)
	if err != nil {
		return err
	}
	c.Metadata.Version = version
	c.Metadata.AppVersion = "v" + version
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	name, err := chartutil.Save(c, out)
	if err != nil {
		return err
	}
	fmt.Println("wrote", name)
	return nil
}
