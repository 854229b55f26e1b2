/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package feature defines the fieldops feature gates, set with
// --feature-gates=Name=bool,... as in Kubernetes components
// (k8s.io/component-base/featuregate).
package feature

import (
	"k8s.io/component-base/featuregate"
)

const (
	// ServerSideApply (Beta, on): ManagedWorkload applies with Server-Side
	// Apply under one field manager per workload. Off: the legacy
	// read-diff-JSON-patch path, the behaviour being migrated away from.
	ServerSideApply featuregate.Feature = "ServerSideApply"

	// InPlacePodMetadata (Beta, on): PodSet applies label and annotation
	// changes to running pods in place. Off: every change recreates pods.
	InPlacePodMetadata featuregate.Feature = "InPlacePodMetadata"

	// ExternalPlugins (Alpha, off): conflict strategies and ignorable paths
	// from out-of-process plugins (hashicorp/go-plugin).
	ExternalPlugins featuregate.Feature = "ExternalPlugins"
)

// Specs are every gate's default and stage.
var Specs = map[featuregate.Feature]featuregate.FeatureSpec{
	ServerSideApply:    {Default: true, PreRelease: featuregate.Beta},
	InPlacePodMetadata: {Default: true, PreRelease: featuregate.Beta},
	ExternalPlugins:    {Default: false, PreRelease: featuregate.Alpha},
}

// Gates is the process-wide gate set; the manager binds it to
// --feature-gates.
var Gates featuregate.MutableFeatureGate = New()

// New returns a fresh gate set with Specs, for tests and embedders.
func New() featuregate.MutableFeatureGate {
	g := featuregate.NewFeatureGate()
	if err := g.Add(Specs); err != nil {
		panic(err) // Specs is a constant table; a failure is a programming error.
	}
	return g
}
