/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command kubectl-fieldops is the kubectl plugin of fieldops: put it on
// PATH and run `kubectl fieldops`.
//
//	kubectl fieldops owners (TYPE/NAME... | TYPE NAME... | TYPE -l SELECTOR | -f FILE [--local])
//	                        [-n NS] [--manager NAME] [-o FORMAT] [--color auto|always|never] [--time age|rfc3339|none]
//	kubectl fieldops status [-n NS | -A] [-l SELECTOR] [-o wide|FORMAT] [--color auto|always|never]
//	kubectl fieldops plan -f FILE [-o FORMAT]
//	kubectl fieldops check-crd -f NEW-CRD.yaml [-o FORMAT]
//	kubectl fieldops helm-postrender [-n NS] [--yield-to MANAGER]... [--field-manager NAME] < MANIFESTS
//	kubectl fieldops version [-o json|yaml]
//
// FORMAT is json or yaml (the command's documents) or one of kubectl's
// printers through k8s.io/cli-runtime: name, jsonpath=..., go-template=...
// An empty result prints "No resources found" on standard error and
// succeeds, as kubectl get does.
//
// owners prints an object's YAML with the field manager, operation and age
// of the managed fields entry owning each line (the view kubectl-blame
// gives, from ownershipcore/blame); status lists FieldPatches,
// ClusterFieldPatches, ManagedWorkloads and PodSets with their readiness
// and contested fields; check-crd reports what a change of a CRD's list
// and map types would break in the stored objects (internal/crdcheck);
// plan shows what a FieldPatch or ManagedWorkload would do, with the
// controllers' own intent code and a server-side dry run (other objects
// of its files are skipped); helm-postrender is a Helm post-renderer
// that leaves out of a release's manifests the fields FieldPatches hold
// on the live objects (docs/gitops.md#helm); version prints the plugin's
// release.
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
