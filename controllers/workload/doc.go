/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package workload reconciles ManagedWorkloads: each object of
// spec.resources is applied with Server-Side Apply under the workload's own
// field manager ("fieldops-workload/<namespace>/<name>"), so third parties'
// fields (a mutating webhook's annotations, a cost tool's labels) are left
// alone and objects shared with other workloads lose only this workload's
// fields when it goes. With the ServerSideApply feature gate off it takes
// the legacy path (read, JSON diff, JSON patch), the behaviour that gate
// retires; turning the gate on migrates ownership with
// ownershipcore.UpgradeManagers.
//
// The controller holds no ownership logic: managed fields, SSA, migration
// and relinquishing are the ownership core's.
package workload
