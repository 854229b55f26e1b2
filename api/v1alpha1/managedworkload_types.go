/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// WorkloadConflictPolicy says what a ManagedWorkload does with a field of
// its intent that another field manager owns with a different value.
// +kubebuilder:validation:Enum=Force;Fail;Yield
type WorkloadConflictPolicy string

const (
	// WorkloadConflictPolicyForce applies with force, as the SSA docs
	// recommend for controllers: the workload's intent wins.
	WorkloadConflictPolicyForce WorkloadConflictPolicy = "Force"
	// WorkloadConflictPolicyFail writes nothing to that object and reports
	// the conflicts in its inventory entry.
	WorkloadConflictPolicyFail WorkloadConflictPolicy = "Fail"
	// WorkloadConflictPolicyYield leaves conflicting fields to their
	// owners: they leave the intent, and a field of ours another manager
	// takes later is theirs (not repaired).
	WorkloadConflictPolicyYield WorkloadConflictPolicy = "Yield"
)

// ManagedWorkloadSpec is the intent of a ManagedWorkload.
type ManagedWorkloadSpec struct {
	// Resources are the workload's objects, full or partial: each is an
	// apply configuration (apiVersion, kind, metadata.name, and the fields
	// this workload manages) applied with Server-Side Apply under the
	// workload's own field manager. A namespaced object without
	// metadata.namespace goes to the workload's namespace. Namespaces and
	// other cluster-scoped objects are applied first.
	// +kubebuilder:validation:MaxItems=500
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:items:XEmbeddedResource
	// +optional
	Resources []runtime.RawExtension `json:"resources,omitempty"`

	// Prune deletes an object that leaves Resources (or every object, when
	// the workload is deleted) if no other field manager owns any of its
	// fields outside metadata and status. Otherwise, and always when false,
	// the object is relinquished: only this workload's fields leave it.
	// +kubebuilder:default=true
	// +optional
	Prune *bool `json:"prune,omitempty"`

	// IgnorePaths are field paths, in the ownership core's path form
	// (".spec.replicas", ".metadata.annotations[\"example.com/x\"]",
	// ".spec.containers[name=\"app\"].image"), left out of every object's
	// intent: the workload neither sets nor repairs them.
	// +optional
	IgnorePaths []string `json:"ignorePaths,omitempty"`

	// IgnorePlugins name ignorable-paths plugins (in the manager's
	// --plugin-config; ExternalPlugins gate) whose paths are left out of
	// every object's intent and of the legacy diff, like ignorePaths. A
	// failing plugin adds no paths and is reported.
	// +optional
	IgnorePlugins []string `json:"ignorePlugins,omitempty"`

	// ConflictPolicy decides SSA conflicts: Force (default, as the SSA docs
	// recommend for controllers), Fail or Yield. Managers named in yieldTo
	// or forceOver are decided by those lists first.
	// +kubebuilder:default=Force
	// +optional
	ConflictPolicy WorkloadConflictPolicy `json:"conflictPolicy,omitempty"`

	// ConflictRules (yieldTo, forceOver) decide conflicts with the managers
	// they name before conflictPolicy decides the rest. Example: yieldTo
	// kube-controller-manager leaves spec.replicas to a
	// HorizontalPodAutoscaler.
	ConflictRules `json:",inline"`

	// Wait makes Ready wait until every applied object is healthy (kstatus
	// Current: a Deployment rolled out, a Job complete, …), as Flux's
	// health checks do. Default true. False: Ready means applied.
	// +kubebuilder:default=true
	// +optional
	Wait *bool `json:"wait,omitempty"`

	// Timeout is how long objects may take to become healthy after the
	// workload's spec changed or an object was last changed by the
	// workload, before Ready=False and Stalled=True with reason
	// HealthCheckTimeout. Default 5m.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// AdoptClientSideApply migrates, on the workload's first apply to an
	// object last written with client-side `kubectl apply` (it has the
	// kubectl.kubernetes.io/last-applied-configuration annotation), the
	// managed fields of kubectl-client-side-apply, before-first-apply and
	// legacyFieldManagers into the workload's own entry (client-go
	// csaupgrade, as `kubectl apply --server-side` does), so that fields
	// the workload's intent leaves out are removed by the apiserver, and
	// drops the stale annotation. Fields of other managers are untouched.
	// Default true. See the SSA docs, "Upgrading from client-side apply to
	// server-side apply", and kubernetes#99003.
	// +kubebuilder:default=true
	// +optional
	AdoptClientSideApply *bool `json:"adoptClientSideApply,omitempty"`

	// LegacyFieldManagers are field managers an earlier, pre-SSA version of
	// the operator wrote these objects with (Update operations). When
	// Server-Side Apply takes over, their fields move into the workload's
	// Apply entry (client-go csaupgrade) so that the first apply drops
	// nothing. The workload's own manager is always migrated.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	LegacyFieldManagers []string `json:"legacyFieldManagers,omitempty"`

	// Suspend stops applying; deletion still prunes.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// ServiceAccountName is the ServiceAccount, in the workload's namespace,
	// that every read, write and deletion of the workload's objects
	// impersonates: the workload can create and change only what that
	// account may. Empty: the manager's --default-service-account
	// (fieldops-tenant), or the manager's own rights in a namespace a
	// cluster administrator listed in --manager-rights-namespaces. Setting
	// or changing it needs the right to impersonate the account (the
	// admission policy fieldops-account-impersonation).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// InventoryEntry is one object of a ManagedWorkload as last reconciled.
type InventoryEntry struct {
	// Index is the object's position in spec.resources; -1 for an object
	// that left the spec and is waiting to be pruned.
	Index int `json:"index"`
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// UID of the live object, once applied.
	// +optional
	UID types.UID `json:"uid,omitempty"`
	// Action is what the last reconcile did: Created, Configured,
	// Unchanged, Conflicted, Migrated (legacy ownership moved to the
	// workload's Apply entry; applied next), or Failed. A reconcile that
	// finds nothing to change leaves Created or Configured as they are
	// (what the last write did), so it writes no status.
	// +optional
	Action string `json:"action,omitempty"`
	// OwnedFields is the number of leaf fields the workload's field manager
	// owns on the object.
	// +optional
	OwnedFields int `json:"ownedFields,omitempty"`
	// Reason is set when the object could not be applied (see the
	// troubleshooting table in the README).
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message explains Reason.
	// +optional
	Message string `json:"message,omitempty"`
	// Health is the object's kstatus: Current (healthy), InProgress,
	// Failed, Terminating, NotFound or Unknown. Empty when not applied.
	// +optional
	Health string `json:"health,omitempty"`
	// HealthMessage explains Health (kstatus's message, e.g. "Deployment
	// is available. Replicas: 2").
	// +optional
	HealthMessage string `json:"healthMessage,omitempty"`
}

// ManagedWorkloadStatus is the observed state of a ManagedWorkload.
type ManagedWorkloadStatus struct {
	// ObservedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are kstatus conditions: Ready, Reconciling, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// FieldManager is the workload's field manager.
	// +optional
	FieldManager string `json:"fieldManager,omitempty"`
	// LastAppliedTime is when the workload last created or changed one of
	// its objects, or its spec changed: the health timeout counts from it.
	// +optional
	LastAppliedTime *metav1.Time `json:"lastAppliedTime,omitempty"`
	// Mode is the path the last reconcile took: ServerSideApply, or Legacy
	// (read, JSON diff, JSON patch) when the ServerSideApply gate is off.
	// +optional
	Mode string `json:"mode,omitempty"`
	// Inventory lists every object of the workload.
	// +optional
	Inventory []InventoryEntry `json:"inventory,omitempty"`
	// Applied counts the inventory's objects that are applied.
	// +kubebuilder:default=0
	// +optional
	Applied int `json:"applied,omitempty"`
	// Failed counts the inventory's objects that could not be applied.
	// +kubebuilder:default=0
	// +optional
	Failed int `json:"failed,omitempty"`
}

// ManagedWorkload is a set of objects the operator owns, applied with
// Server-Side Apply under one field manager per workload: third parties'
// fields are left alone, and objects shared with other workloads lose only
// this workload's fields when it goes.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=fieldops,shortName=mw
// +kubebuilder:printcolumn:name="Applied",type=integer,JSONPath=`.status.applied`,description="Objects of the inventory that are applied."
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`,description="Objects of the inventory that could not be applied (see each entry's reason)."
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.status.mode`,priority=1,description="ServerSideApply, or Legacy when the ServerSideApply gate is off."
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="The Ready condition's status."
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="The Ready condition's reason."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ManagedWorkload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ManagedWorkloadSpec   `json:"spec,omitempty"`
	Status ManagedWorkloadStatus `json:"status,omitempty"`
}

// ManagedWorkloadList is a list of ManagedWorkloads.
// +kubebuilder:object:root=true
type ManagedWorkloadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManagedWorkload `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ManagedWorkload{}, &ManagedWorkloadList{})
}
