/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import "sigs.k8s.io/controller-runtime/pkg/client"

// Patcher is what FieldPatch and ClusterFieldPatch have in common, so that
// one controller serves both.
// +kubebuilder:object:generate=false
type Patcher interface {
	client.Object
	// PatchSpec returns the spec, for reading.
	PatchSpec() *FieldPatchSpec
	// PatchStatus returns the status, for reading and writing.
	PatchStatus() *FieldPatchStatus
	// TargetNamespace is the namespace the target is looked up in: the
	// patch's own namespace for a FieldPatch whose target names none.
	TargetNamespace() string
}

var (
	_ Patcher = &FieldPatch{}
	_ Patcher = &ClusterFieldPatch{}
)

// PatchSpec implements Patcher.
func (p *FieldPatch) PatchSpec() *FieldPatchSpec { return &p.Spec }

// PatchStatus implements Patcher.
func (p *FieldPatch) PatchStatus() *FieldPatchStatus { return &p.Status }

// TargetNamespace implements Patcher.
func (p *FieldPatch) TargetNamespace() string {
	if p.Spec.Target.Namespace == "" {
		return p.Namespace
	}
	return p.Spec.Target.Namespace
}

// PatchSpec implements Patcher.
func (p *ClusterFieldPatch) PatchSpec() *FieldPatchSpec { return &p.Spec }

// PatchStatus implements Patcher.
func (p *ClusterFieldPatch) PatchStatus() *FieldPatchStatus { return &p.Status }

// TargetNamespace implements Patcher.
func (p *ClusterFieldPatch) TargetNamespace() string { return p.Spec.Target.Namespace }
