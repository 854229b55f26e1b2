/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"fmt"
	"io"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/resource"
)

// readManifests reads the objects of -f as kubectl reads them (files,
// directories with -R, URLs; - reads in), without contacting the server
// (cli-runtime's resource builder, local), List kinds flattened, in
// order: what plan and check-crd take.
func readManifests(flags *genericclioptions.ConfigFlags, in io.Reader, files resource.FilenameOptions) ([]*unstructured.Unstructured, error) {
	stdin := slices.Contains(files.Filenames, "-")
	files.Filenames = slices.DeleteFunc(files.Filenames, func(f string) bool { return f == "-" })
	b := resource.NewBuilder(flags).Unstructured().Local().FilenameParam(false, &files)
	if stdin {
		b = b.Stream(in, "STDIN")
	}
	infos, err := b.Flatten().Do().Infos()
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(infos))
	for _, info := range infos {
		u, ok := info.Object.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("%s: unexpected object type %T", info.Source, info.Object)
		}
		out = append(out, u)
	}
	return out, nil
}
