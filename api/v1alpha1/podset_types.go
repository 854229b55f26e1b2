/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PodSetTemplate is the pod every ordinal runs: its labels and annotations
// (applied to running pods in place) and its spec (a change recreates pods).
type PodSetTemplate struct {
	// Metadata holds the pods' labels and annotations.
	// +optional
	Metadata PodSetTemplateMetadata `json:"metadata,omitempty"`
	// Spec is a core/v1 PodSpec. It is validated by the apiserver when a pod
	// is created: a spec it rejects is reported as PodRejected.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Spec corev1.PodSpec `json:"spec"`
}

// PodSetTemplateMetadata are the template's labels and annotations.
type PodSetTemplateMetadata struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PodSetUpdateStrategy bounds pod restarts.
type PodSetUpdateStrategy struct {
	// MaxUnavailable is how many pods may be unready at once while pods are
	// recreated for a spec change: a number, or a percentage of replicas
	// (rounded down, at least 1). Default 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// PodSetSpec is the intent of a PodSet.
type PodSetSpec struct {
	// Replicas is the number of pods, named <podset>-0 … <podset>-(n-1).
	// A negative value is reported as InvalidSpec and changes nothing.
	// +kubebuilder:default=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Selector must match the template's labels.
	Selector *metav1.LabelSelector `json:"selector"`
	// Template is the pod every ordinal runs.
	Template PodSetTemplate `json:"template"`
	// UpdateStrategy bounds restarts for spec changes.
	// +optional
	UpdateStrategy PodSetUpdateStrategy `json:"updateStrategy,omitempty"`
}

// PodSetStatus is the observed state of a PodSet.
type PodSetStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are kstatus conditions: Ready, Reconciling, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Replicas is the number of pods that exist.
	// +kubebuilder:default=0
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the number of pods with the Ready condition.
	// +kubebuilder:default=0
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// UpdatedReplicas is the number of pods at updateRevision whose labels
	// and annotations follow the template.
	// +kubebuilder:default=0
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// CurrentRevision is the revision (a hash of template.spec) the pods
	// run; it becomes UpdateRevision once every pod is updated.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`
	// UpdateRevision is the revision of the current template.spec.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
	// Selector is spec.selector as a string, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`
}

// PodSet runs pods directly, like a StatefulSet without volume claims:
// a change of the template's labels or annotations is applied to the
// running pods in place (Server-Side Apply under the PodSet's field
// manager); only a change of template.spec recreates pods, at most
// maxUnavailable at a time.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:categories=fieldops,shortName=ps
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.updateRevision`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="The Ready condition's reason."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PodSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodSetSpec   `json:"spec,omitempty"`
	Status PodSetStatus `json:"status,omitempty"`
}

// PodSetList is a list of PodSets.
// +kubebuilder:object:root=true
type PodSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodSet `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PodSet{}, &PodSetList{})
}
