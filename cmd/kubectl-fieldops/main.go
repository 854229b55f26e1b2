/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command kubectl-fieldops is the kubectl plugin of fieldops: put it on
// PATH and run `kubectl fieldops`.
//
//	kubectl fieldops owners (TYPE/NAME... | TYPE NAME... | TYPE -l SELECTOR | -f FILE [--local])
//	                        [-n NS] [--manager NAME] [-o json|yaml] [--color auto|always|never] [--time age|rfc3339|none]
//	kubectl fieldops status [-n NS | -A] [-l SELECTOR] [-o json|yaml] [--color auto|always|never]
//	kubectl fieldops plan -f FILE [-o json|yaml]
//	kubectl fieldops check-crd NEW-CRD.yaml [-o json|yaml]
//
// owners prints an object's YAML with the field manager, operation and age
// of the managed fields entry owning each line (the view kubectl-blame
// gives, from ownershipcore/blame); status lists FieldPatches,
// ClusterFieldPatches, ManagedWorkloads and PodSets with their readiness
// and contested fields; check-crd reports what a change of a CRD's list
// and map types would break in the stored objects (internal/crdcheck);
// plan shows what a FieldPatch or ManagedWorkload would do, with the
// controllers' own intent code and a server-side dry run.
// Kubeconfig flags are kubectl's (k8s.io/cli-runtime).
//
// Linked or copied as kubectl_complete-fieldops on PATH, the binary
// completes `kubectl fieldops` for kubectl's shell completion.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func main() {
	cmd := NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	cmd.SetArgs(completionArgs(os.Args[0], os.Args[1:]))
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
