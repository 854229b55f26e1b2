/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload

// RBAC of the ManagedWorkload controller. A workload's objects are of any
// kind, so the manager may create, patch and delete any resource (prune);
// grant ManagedWorkload itself only to platform administrators, as it acts
// with the manager's rights.

// +kubebuilder:rbac:groups=fieldops.dev,resources=managedworkloads,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=fieldops.dev,resources=managedworkloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fieldops.dev,resources=managedworkloads/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=*,resources=*,verbs=get;list;watch;create;patch;delete
