/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package gitops tests the recipes of docs/gitops.md: a FieldPatch on
// an object Flux or Argo CD applies, and fieldops objects delivered by
// them. Flux is github.com/fluxcd/pkg/ssa driven with the options
// kustomize-controller gives it; Argo CD is kubectl's server-side apply
// (k8s.io/kubectl/pkg/cmd/apply) set up as gitops-engine sets it up. It
// is a module of its own so that the main go.mod never requires
// fluxcd/pkg.
package gitops
