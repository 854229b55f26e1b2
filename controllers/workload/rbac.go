/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload

// RBAC of the ManagedWorkload controller. A workload's objects are of any
// kind, and they are created and deleted as the workload's account
// (spec.serviceAccountName, or --default-service-account of its
// namespace), never with the manager's rights: the manager itself may
// read, watch and patch any resource (shared with the FieldPatch
// controllers), but create and delete nothing. A cluster administrator
// who lets namespaces' workloads act with the manager's rights
// (--manager-rights-namespaces, config/manager-rights) grants create and
// delete there too.

// +kubebuilder:rbac:groups=fieldops.dev,resources=managedworkloads,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=fieldops.dev,resources=managedworkloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fieldops.dev,resources=managedworkloads/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=*,resources=*,verbs=get;list;watch;patch
