/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package podset

// +kubebuilder:rbac:groups=fieldops.dev,resources=podsets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=fieldops.dev,resources=podsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fieldops.dev,resources=podsets/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
