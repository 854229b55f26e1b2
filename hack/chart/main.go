/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command chart writes the generated files of the Helm chart
// charts/fieldops from config/ (see internal/chartgen.Generate):
//
//	go run ./hack/chart --version 0.2.0
//
// `make chart` runs it with the Makefile's VERSION.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

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
	files, err := chartgen.Generate(o)
	if err != nil {
		return err
	}
	return chartgen.Write(root, files)
}
