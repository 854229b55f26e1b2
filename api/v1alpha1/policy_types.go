/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

// ManagerSelector selects field managers of the target by name and,
// optionally, operation: the managers a conflict policy names (yieldTo,
// forceOver).
type ManagerSelector struct {
	// Manager is a field manager's name, or a glob over the whole name:
	// `*` matches any run of characters ('/' included), `?` one character;
	// there is no escape and no character class. Examples:
	// "kube-controller-manager" (the HorizontalPodAutoscaler's writes of
	// spec.replicas through the scale subresource), "vpa-*", "keda-*".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Manager string `json:"manager"`
	// Operation restricts the match to the manager's Apply or Update
	// entries; empty matches both.
	// +kubebuilder:validation:Enum=Apply;Update
	// +optional
	Operation string `json:"operation,omitempty"`
}

// ConflictRules name field managers that a conflict policy treats apart
// from everyone else: fields they own are yielded to them, or forced over
// them, whatever conflictPolicy says for other managers. YieldTo is
// checked first. A field a yieldTo manager takes later is theirs, not
// drift: it is not repaired.
type ConflictRules struct {
	// YieldTo are managers whose fields are always left to them: a
	// conflicting field leaves the intent, and a field of ours they take
	// is not repaired.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	YieldTo []ManagerSelector `json:"yieldTo,omitempty"`
	// ForceOver are managers whose conflicting fields are always taken
	// (applied with force), even when conflictPolicy is Fail or Yield.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	ForceOver []ManagerSelector `json:"forceOver,omitempty"`
}
