/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

// RBAC of the FieldPatch controllers. Targets are arbitrary kinds, so the
// manager may get, list, watch and patch any resource: that is what it
// exists for. It never creates, updates (PUT) or deletes a target.

// +kubebuilder:rbac:groups=fieldops.dev,resources=fieldpatches;clusterfieldpatches,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=fieldops.dev,resources=fieldpatches/status;clusterfieldpatches/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fieldops.dev,resources=fieldpatches/finalizers;clusterfieldpatches/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=*,resources=*,verbs=get;list;watch;patch
// Impersonation of the ServiceAccount a FieldPatch or ManagedWorkload names
// (spec.serviceAccountName): RBAC then judges that account.
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate
