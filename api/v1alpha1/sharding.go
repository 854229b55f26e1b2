/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

// ShardLabel is the label that assigns a FieldPatch, ClusterFieldPatch,
// ManagedWorkload or PodSet to a shard: the manager started with
// --watch-label-selector=sharding.fieldops.dev/key=<shard> reconciles the
// objects whose label has that value, and no other manager does. It is
// Flux's convention (sharding.fluxcd.io/key) under fieldops's group.
const ShardLabel = "sharding.fieldops.dev/key"

// UnshardedSelector is the --watch-label-selector of the main instance
// once shards exist: it reconciles every object that names no shard.
const UnshardedSelector = "!" + ShardLabel
