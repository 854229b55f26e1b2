/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PatchType says how FieldPatchSpec.Patch is read.
// +kubebuilder:validation:Enum=Apply;StrategicMerge;Merge;JSON
type PatchType string

const (
	// PatchTypeApply reads the patch as a partial object, an apply
	// configuration, and sends it with Server-Side Apply.
	PatchTypeApply PatchType = "Apply"
	// PatchTypeStrategicMerge reads the patch as a strategic merge patch.
	PatchTypeStrategicMerge PatchType = "StrategicMerge"
	// PatchTypeMerge reads the patch as a JSON merge patch (RFC 7386).
	PatchTypeMerge PatchType = "Merge"
	// PatchTypeJSON reads the patch as a JSON patch (RFC 6902), a list of
	// operations.
	PatchTypeJSON PatchType = "JSON"
)

// ConflictPolicy says what happens to a field of the intent that another
// field manager owns with a different value (an SSA conflict).
// +kubebuilder:validation:Enum=Force;Fail;Yield;Plugin
type ConflictPolicy string

const (
	// ConflictPolicyForce applies with force: the field changes owner and
	// value (the SSA docs' advice for controllers).
	ConflictPolicyForce ConflictPolicy = "Force"
	// ConflictPolicyFail writes nothing and reports the conflicts.
	ConflictPolicyFail ConflictPolicy = "Fail"
	// ConflictPolicyYield leaves the conflicting fields to their owners and
	// applies the rest of the intent.
	ConflictPolicyYield ConflictPolicy = "Yield"
	// ConflictPolicyPlugin asks the conflict-strategy plugin named by
	// conflictPlugin, per conflict (needs the ExternalPlugins gate). When
	// the plugin fails, conflictPluginFallback decides.
	ConflictPolicyPlugin ConflictPolicy = "Plugin"
)

// ConflictFallbackPolicy decides every conflict when a conflict-strategy
// plugin fails: the built-in policies only, never Plugin again (a type of
// its own, because kubebuilder takes the enum of a field's type over the
// field's own marker).
// +kubebuilder:validation:Enum=Force;Fail;Yield
type ConflictFallbackPolicy string

const (
	// ConflictFallbackForce forces every conflicting field, as
	// ConflictPolicyForce.
	ConflictFallbackForce ConflictFallbackPolicy = "Force"
	// ConflictFallbackFail writes nothing and reports the conflicts, as
	// ConflictPolicyFail. It is the default.
	ConflictFallbackFail ConflictFallbackPolicy = "Fail"
	// ConflictFallbackYield leaves the conflicting fields to their owners,
	// as ConflictPolicyYield.
	ConflictFallbackYield ConflictFallbackPolicy = "Yield"
)

// DeletionPolicy says what deleting a FieldPatch (or dropping a field from
// its patch) does to the fields it wrote. No policy but Restore ever
// changes a value that existed before the patch, and none deletes the
// target.
// +kubebuilder:validation:Enum=HandBack;Relinquish;Orphan;Restore
type DeletionPolicy string

const (
	// DeletionPolicyHandBack moves every field the patch took back to the
	// field manager that owned it before (values stay, as the patch left
	// them), then relinquishes the rest: fields the patch added are
	// removed.
	DeletionPolicyHandBack DeletionPolicy = "HandBack"
	// DeletionPolicyRelinquish lets go of the fields the patch took without
	// giving them to anyone (values stay, unowned), and removes the fields
	// the patch added.
	DeletionPolicyRelinquish DeletionPolicy = "Relinquish"
	// DeletionPolicyOrphan lets go of every field the patch wrote: all
	// values stay, unowned, the added ones included; only the patch's
	// managed fields entry goes.
	DeletionPolicyOrphan DeletionPolicy = "Orphan"
	// DeletionPolicyRestore gives every field the patch took its value from
	// before the patch first wrote it back, with its previous owner, when
	// nobody has written it since; a field another manager wrote since
	// keeps its value and owner. Fields the patch added are removed. The
	// previous values are kept in a Secret the patch owns, never in its
	// status.
	DeletionPolicyRestore DeletionPolicy = "Restore"
)

// TargetReference names the object a FieldPatch changes. Admission refuses
// a reference the apiserver could never serve (a name that is not a valid
// path segment, a namespace that is not a DNS-1123 label, a malformed
// apiVersion or kind), so that no FieldPatch exists whose target requests
// fail forever.
type TargetReference struct {
	// APIVersion of the target, e.g. "apps/v1" or "v1": an optional group
	// (a DNS-1123 subdomain) and "/", then a version (a DNS-1035 label).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[a-z]([-a-z0-9]*[a-z0-9])?$`
	APIVersion string `json:"apiVersion"`
	// Kind of the target, e.g. "DaemonSet": a letter, then letters,
	// digits or "-" (a DNS-1035 label once lower-cased, as the apiserver
	// requires of a CRD's kind).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z]([-A-Za-z0-9]*[A-Za-z0-9])?$`
	Kind string `json:"kind"`
	// Name of the target: at most 253 characters, not "." or "..", and
	// without "/" or "%" (the apiserver's rule for any object name, which
	// is a path segment of its URL).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self != '.' && self != '..'",message="name may not be '.' or '..'"
	// +kubebuilder:validation:XValidation:rule="!self.contains('/') && !self.contains('%')",message="name may not contain '/' or '%'"
	Name string `json:"name"`
	// Namespace of the target, a DNS-1123 label. A FieldPatch may only
	// target its own namespace (empty means its own); a ClusterFieldPatch
	// names the namespace of a namespaced target and leaves it empty for a
	// cluster-scoped one.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// TargetSelector names every object a FieldPatch or ClusterFieldPatch
// changes: the objects of one kind whose labels match LabelSelector (and,
// when Names is set, whose name is one of Names), in the patch's own
// namespace for a FieldPatch, in the namespaces NamespaceSelector matches
// for a ClusterFieldPatch (or every object of a cluster-scoped kind). An
// object that matches later is patched when its watch event comes; one
// that stops matching gets its fields back under spec.deletionPolicy.
// The kind cannot change once set; the selectors and names can.
// +kubebuilder:validation:XValidation:rule="self.apiVersion == oldSelf.apiVersion && self.kind == oldSelf.kind",message="targetSelector.apiVersion and targetSelector.kind are immutable"
type TargetSelector struct {
	// APIVersion of the targets, e.g. "apps/v1" (the form of
	// target.apiVersion).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[a-z]([-a-z0-9]*[a-z0-9])?$`
	APIVersion string `json:"apiVersion"`
	// Kind of the targets, e.g. "DaemonSet" (the form of target.kind).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z]([-A-Za-z0-9]*[A-Za-z0-9])?$`
	Kind string `json:"kind"`
	// LabelSelector selects the targets by their labels (the apiserver's
	// label selector: matchLabels and matchExpressions). Required; `{}`
	// selects every object of the kind in scope.
	LabelSelector *metav1.LabelSelector `json:"labelSelector"`
	// Names, when set, narrows the targets to the objects with these
	// names (that LabelSelector matches too).
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	Names []string `json:"names,omitempty"`
	// NamespaceSelector selects, for a ClusterFieldPatch, the namespaces
	// whose objects of a namespaced kind are targets, by the Namespace's
	// labels (`{}`: every namespace; kubernetes.io/metadata.name matches
	// one by name). Required there for a namespaced kind; refused for a
	// cluster-scoped kind and on a FieldPatch, whose targets are in its
	// own namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// FieldPatchSpec is the intent of a FieldPatch or ClusterFieldPatch.
// +kubebuilder:validation:XValidation:rule="!has(self.conflictPolicy) || self.conflictPolicy != 'Plugin' || (has(self.conflictPlugin) && size(self.conflictPlugin) > 0)",message="conflictPolicy Plugin needs conflictPlugin"
// +kubebuilder:validation:XValidation:rule="!(has(self.expiresAfter) && has(self.expiresAt))",message="expiresAfter and expiresAt are exclusive: set one"
// +kubebuilder:validation:XValidation:rule="has(self.target) != has(self.targetSelector)",message="set exactly one of target (one object, by target.name) and targetSelector (every object it matches)"
// +kubebuilder:validation:XValidation:rule="has(self.targetSelector) == has(oldSelf.targetSelector)",message="a patch cannot switch between target and targetSelector: create a new one"
type FieldPatchSpec struct {
	// Target is the object to patch, by name. It cannot change once set.
	// Exclusive with TargetSelector: set exactly one.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="target is immutable"
	// +optional
	Target TargetReference `json:"target,omitzero"`

	// TargetSelector patches every object it matches, including objects
	// created later, each under the patch's one field manager with its own
	// record of previous owners (status.targets). Exclusive with Target:
	// set exactly one.
	// +optional
	TargetSelector *TargetSelector `json:"targetSelector,omitempty"`

	// Type says how Patch is read. Apply (default) is Server-Side Apply of a
	// partial object; StrategicMerge, Merge and JSON are computed against the
	// live object and the fields they set are then applied with
	// Server-Side Apply, so ownership is tracked the same way.
	// +kubebuilder:default=Apply
	// +optional
	Type PatchType `json:"type,omitempty"`

	// Patch is a partial object (Apply, StrategicMerge, Merge) or a list of
	// RFC 6902 operations (JSON).
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=""
	Patch runtime.RawExtension `json:"patch"`

	// ConflictPolicy says what to do with fields another field manager owns:
	// Force (default), Fail, Yield, or Plugin. Managers named in yieldTo or
	// forceOver are decided by those lists first.
	// +kubebuilder:default=Force
	// +optional
	ConflictPolicy ConflictPolicy `json:"conflictPolicy,omitempty"`

	// ConflictRules (yieldTo, forceOver) decide conflicts with the managers
	// they name before conflictPolicy decides the rest (a plugin is asked
	// only about the rest).
	ConflictRules `json:",inline"`

	// ContestTimeout is how long another field manager may keep taking the
	// patched fields back (status Contested) before the patch gives up:
	// Ready=False and Stalled=True with reason ContestTimeout, naming the
	// manager, so `kubectl wait` and kstatus health checks fail instead of
	// waiting forever. Repairs continue, backed off. Default 5m.
	// +optional
	ContestTimeout *metav1.Duration `json:"contestTimeout,omitempty"`

	// ConflictPlugin names the conflict-strategy plugin (in the manager's
	// --plugin-config) when conflictPolicy is Plugin.
	// +optional
	ConflictPlugin string `json:"conflictPlugin,omitempty"`

	// ConflictPluginFallback decides every conflict when the plugin fails
	// (does not start, times out, dies, or answers malformed): Force, Fail
	// (default) or Yield. Plugin is refused at admission.
	// +optional
	ConflictPluginFallback ConflictFallbackPolicy `json:"conflictPluginFallback,omitempty"`

	// IgnorePlugins name ignorable-paths plugins whose paths are left out of
	// the intent like ignorePaths. A failing plugin adds no paths.
	// +optional
	IgnorePlugins []string `json:"ignorePlugins,omitempty"`

	// DeletionPolicy says what deleting this patch does to the target.
	// +kubebuilder:default=HandBack
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// IgnorePaths are field paths left out of the intent and of drift
	// detection, in the ownership core's path form, e.g.
	// `.spec.replicas` or `.metadata.annotations["example.com/x"]`.
	// +optional
	// +listType=set
	IgnorePaths []string `json:"ignorePaths,omitempty"`

	// Suspend stops reconciling (no writes, no drift repair) until cleared.
	// A suspended patch still expires.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// ExpiresAfter is how long after its creation the patch deletes
	// itself (a duration such as "30m" or "2h"; more than 0): at expiry
	// its deletionPolicy runs, as for a deletion by hand. The time is
	// computed from metadata.creationTimestamp and shown in
	// status.expiresAt; editing ExpiresAfter moves it. Exclusive with
	// ExpiresAt.
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="expiresAfter must be more than 0"
	// +optional
	ExpiresAfter *metav1.Duration `json:"expiresAfter,omitempty"`

	// ExpiresAt is when the patch deletes itself (RFC 3339): at that time
	// its deletionPolicy runs, as for a deletion by hand. A time already
	// past ends the patch at once. Exclusive with ExpiresAfter.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`

	// ServiceAccountName is the ServiceAccount every read and write of the
	// target impersonates, so the patch can do no more than that account
	// may (RBAC, including its escalation checks, judges the account, not
	// the fieldops manager). A FieldPatch's account is in its own
	// namespace. Empty: for a FieldPatch, the manager's
	// --default-service-account (fieldops-tenant), or the manager's own
	// rights in a namespace a cluster administrator listed in
	// --manager-rights-namespaces; for a ClusterFieldPatch, the manager's
	// own rights. Setting or changing it needs the right to impersonate
	// the account (the admission policy fieldops-account-impersonation).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// ServiceAccountNamespace is the namespace of ServiceAccountName, for a
	// ClusterFieldPatch (required there with serviceAccountName). A
	// FieldPatch may only name its own namespace.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	ServiceAccountNamespace string `json:"serviceAccountNamespace,omitempty"`
}

// PreviousOwner is one managed fields entry of the target, as it stood just
// before this patch first wrote to those fields, restricted to them.
//
// Its fields are Fields and Shared together, each listed once, in the
// ownership core's path form. Each item is one member of the field set
// (a list item owned as a whole, the "." of FieldsV1, is one too), e.g.
// `.spec.replicas` or `.spec.template.spec.containers[name="app"].image`;
// the rare member that form cannot name exactly (a list key whose name
// starts with a digit or holds "=", a key value that is a map) is written
// as the FieldsV1 object of that member alone, which starts with "{".
// A record written before fieldsV1 was deprecated holds fieldsV1,
// sharedFieldsV1 and paths instead; it is read as it was, and written in
// the new form at the next change.
type PreviousOwner struct {
	// Manager is the field manager's name.
	Manager string `json:"manager"`
	// Operation is Apply or Update.
	Operation metav1.ManagedFieldsOperationType `json:"operation"`
	// APIVersion the manager used.
	APIVersion string `json:"apiVersion"`
	// Subresource the manager wrote through, empty for the main resource.
	// +optional
	Subresource string `json:"subresource,omitempty"`
	// Via is the field manager of the FieldPatch or ClusterFieldPatch this
	// patch took the fields from, when this owner comes from that patch's
	// own record: the manager owned the fields before that patch took them.
	// Deletion hands the fields to it only if that patch has left the
	// target by then (deleted, so that its field manager holds no entry);
	// while that patch holds an entry, they go back to it. Empty for an
	// owner this patch took the fields from itself.
	// +optional
	Via string `json:"via,omitempty"`
	// Fields the manager owned that this patch took and holds alone, in
	// path form, sorted.
	// +optional
	// +listType=atomic
	Fields []string `json:"fields,omitempty"`
	// Shared are the fields the manager owned that it still co-owned with
	// this patch when fieldops last looked (a field applied with the same
	// value is shared, not taken), in path form, sorted; none of them is
	// in Fields. A shared field the manager then lets go is forgotten:
	// deletion removes it instead of handing it back.
	// +optional
	// +listType=atomic
	Shared []string `json:"shared,omitempty"`
	// FieldsV1 is deprecated: the form of a record written by an earlier
	// release (every field of the owner, shared ones included, in the
	// managed fields' FieldsV1 form). Read when present, instead of Fields
	// and Shared; never written.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	FieldsV1 *metav1.FieldsV1 `json:"fieldsV1,omitempty"`
	// SharedFieldsV1 is deprecated: the shared fields of a record with
	// FieldsV1, in FieldsV1 form. Read with FieldsV1; never written.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	SharedFieldsV1 *metav1.FieldsV1 `json:"sharedFieldsV1,omitempty"`
	// Paths is deprecated: the leaf fields of a record with FieldsV1, in
	// path form, for people. Never read (FieldsV1 holds them), never
	// written.
	// +optional
	Paths []string `json:"paths,omitempty"`
}

// FieldPatchStatus is the observed state of a FieldPatch.
type FieldPatchStatus struct {
	// ObservedGeneration is the generation last reconciled with success.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Reconciling and Stalled (kstatus).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// FieldManager is the field manager this patch applies with.
	// +optional
	FieldManager string `json:"fieldManager,omitempty"`
	// TargetUID is the UID of the target last patched; a new UID (the target
	// was recreated) means previous owners are recorded again.
	// +optional
	TargetUID string `json:"targetUID,omitempty"`
	// ManagedFields lists the paths this patch owns on the target now.
	// +optional
	ManagedFields []string `json:"managedFields,omitempty"`
	// FieldCount is len(ManagedFields), for printing. Defaulted so that
	// kubectl prints 0, not nothing, once the status exists.
	// +kubebuilder:default=0
	// +optional
	FieldCount int `json:"fieldCount,omitempty"`
	// AddedFields are the intent fields recorded with no previous owner,
	// in path form (see PreviousOwner), sorted: the fields the patch added,
	// or whose previous owner let them go since. Deletion removes them.
	// With the fields of PreviousOwners they are the fields whose previous
	// owners were recorded.
	// +optional
	// +listType=atomic
	AddedFields []string `json:"addedFields,omitempty"`
	// RecordedFields is deprecated: the form of a record written by an
	// earlier release (every recorded field, the previous owners' ones
	// included, in FieldsV1 form). Read when present, instead of
	// AddedFields; never written.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +mapType=atomic
	RecordedFields *metav1.FieldsV1 `json:"recordedFields,omitempty"`
	// PreviousOwners are the owners of the patched fields before the first
	// write; deletion hands each field back to its entry. An owner that
	// later removes or lets go of a field is forgotten for it. When an
	// owner is another FieldPatch or ClusterFieldPatch, its own previous
	// owners of those fields are listed too, with via naming it: they get
	// the fields if that patch has left the target first.
	// +optional
	PreviousOwners []PreviousOwner `json:"previousOwners,omitempty"`
	// ContestedBy names the field manager that keeps taking patched fields
	// back, while that lasts.
	// +optional
	ContestedBy string `json:"contestedBy,omitempty"`
	// ContestedSince is when ContestedBy began to contest the patched
	// fields; spec.contestTimeout counts from it.
	// +optional
	ContestedSince *metav1.Time `json:"contestedSince,omitempty"`
	// LastAppliedTime is when this patch last wrote to the target.
	// +optional
	LastAppliedTime *metav1.Time `json:"lastAppliedTime,omitempty"`
	// ExpiresAt is when the patch deletes itself (spec.expiresAt, or
	// metadata.creationTimestamp plus spec.expiresAfter); absent when it
	// does not expire.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`
	// Targets is the state of a patch with spec.targetSelector: counts,
	// the targets not applied, and one record per target it wrote to.
	// The single-target fields above (targetUID, managedFields,
	// addedFields, previousOwners, contestedBy) stay empty then;
	// fieldCount counts the fields owned on every target.
	// +optional
	Targets *TargetsStatus `json:"targets,omitempty"`
}

// MaxNotApplied bounds TargetsStatus.NotApplied.
const MaxNotApplied = 20

// TargetsStatus is the state of a selector patch (spec.targetSelector)
// across its targets.
//
// Size: the record of each target is its name, UID, field count and an
// index into Ledgers, a few fixed-size fields; the records of previous
// owners (Ledgers) are stored once per distinct record, and the targets of
// one chart or one controller have the same previous owners of the same
// fields, so they share one. The status so grows by one small record per
// target, and thousands of targets with a few distinct records stay under
// etcd's limit per object (docs/fieldpatch-selectors.md).
// Neither holds a value of a target: field paths and field managers only
// (deletionPolicy Restore keeps previous values in one Secret per target,
// owned by the patch).
type TargetsStatus struct {
	// Matched is how many objects the selector matches now.
	Matched int32 `json:"matched"`
	// Applied is how many of them hold the patch as the last reconcile
	// left them (applied, or unchanged because they already did).
	Applied int32 `json:"applied"`
	// Contested is how many of them another field manager keeps taking
	// patched fields back on (or another fieldops object took them).
	Contested int32 `json:"contested"`
	// Failed is how many of them the patch could not apply (a conflict
	// under Fail, an invalid patch for that object, a refused write).
	Failed int32 `json:"failed"`
	// Forbidden is how many of them the account the patch acts as may not
	// read or write (RBAC).
	Forbidden int32 `json:"forbidden"`
	// Skipped is how many of them fieldops never patches (its own objects
	// and the objects it manages), each with a note in NotApplied.
	// +optional
	Skipped int32 `json:"skipped,omitempty"`
	// NotApplied lists targets that are not applied, with the reason, at
	// most MaxNotApplied (20) of them, sorted by namespace and name.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	NotApplied []TargetProblem `json:"notApplied,omitempty"`
	// Records are the targets the patch's field manager wrote to, sorted
	// by namespace and name: what deletion, or a target that stops
	// matching, gives back.
	// +optional
	// +listType=atomic
	Records []TargetRecord `json:"records,omitempty"`
	// Ledgers are the distinct records of previous owners, which Records
	// name by index.
	// +optional
	// +listType=atomic
	Ledgers []TargetLedger `json:"ledgers,omitempty"`
}

// TargetProblem is one target a selector patch is not applied to.
type TargetProblem struct {
	// Namespace of the target, empty for a cluster-scoped one.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the target.
	Name string `json:"name"`
	// Reason is the reason the Ready condition would carry for this target
	// alone (Conflict, Contested, Forbidden, ForbiddenTarget, ...; see the
	// troubleshooting guide).
	Reason string `json:"reason"`
	// Message says why, naming fields and field managers, never values.
	// +optional
	Message string `json:"message,omitempty"`
}

// TargetRecord is a selector patch's record of one target it wrote to.
type TargetRecord struct {
	// Namespace of the target, empty for a cluster-scoped one.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the target.
	Name string `json:"name"`
	// UID of the target: a recreated target (a new UID) is a new target.
	UID string `json:"uid"`
	// Fields is how many fields the patch's field manager owns on it.
	// +optional
	Fields int32 `json:"fields,omitempty"`
	// Ledger is the index in TargetsStatus.Ledgers of the record of
	// previous owners of this target's fields; absent: none recorded.
	// +optional
	Ledger *int32 `json:"ledger,omitempty"`
	// ContestedBy names the field manager that keeps taking patched fields
	// of this target back, while that lasts.
	// +optional
	ContestedBy string `json:"contestedBy,omitempty"`
	// ContestedSince is when ContestedBy began; spec.contestTimeout counts
	// from it.
	// +optional
	ContestedSince *metav1.Time `json:"contestedSince,omitempty"`
}

// TargetLedger is one record of previous owners (status.addedFields and
// status.previousOwners of a single-target patch), shared by every target
// of a selector patch whose record is the same.
type TargetLedger struct {
	// AddedFields are the intent fields recorded with no previous owner
	// (see FieldPatchStatus.AddedFields).
	// +optional
	// +listType=atomic
	AddedFields []string `json:"addedFields,omitempty"`
	// RecordedFields is deprecated (see FieldPatchStatus.RecordedFields):
	// read when present, never written.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +mapType=atomic
	RecordedFields *metav1.FieldsV1 `json:"recordedFields,omitempty"`
	// PreviousOwners are the owners of those fields before the patch
	// first wrote them (see FieldPatchStatus.PreviousOwners).
	// +optional
	// +listType=atomic
	PreviousOwners []PreviousOwner `json:"previousOwners,omitempty"`
}

// FieldPatch changes fields of an object in its own namespace that it does
// not own, tracks them by field manager, repairs drift on them and hands
// them back on delete.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=fieldops,shortName=fp
// +kubebuilder:printcolumn:name="Target-Kind",type=string,JSONPath=`.spec.target.kind`,description="The kind of the patched object."
// +kubebuilder:printcolumn:name="Target-Name",type=string,JSONPath=`.spec.target.name`,description="The name of the patched object, in the patch's namespace."
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.targets.matched`,priority=1,description="With targetSelector: how many objects the selector matches."
// +kubebuilder:printcolumn:name="Applied",type=integer,JSONPath=`.status.targets.applied`,priority=1,description="With targetSelector: how many matched objects hold the patch."
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="The Ready condition's status."
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="The Ready condition's reason: why the patch is or is not applied."
// +kubebuilder:printcolumn:name="Fields",type=integer,JSONPath=`.status.fieldCount`,description="How many fields the patch's field manager owns on the target."
// +kubebuilder:printcolumn:name="Expires",type=string,JSONPath=`.status.expiresAt`,description="When the patch deletes itself and its deletionPolicy runs (kubectl fieldops status shows the time left); empty when it does not expire."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FieldPatch struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FieldPatchSpec   `json:"spec"`
	Status FieldPatchStatus `json:"status,omitempty"`
}

// FieldPatchList is a list of FieldPatch.
//
// +kubebuilder:object:root=true
type FieldPatchList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FieldPatch `json:"items"`
}

// ClusterFieldPatch is a FieldPatch that may target an object in any
// namespace, or a cluster-scoped object.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=fieldops,shortName=cfp
// +kubebuilder:printcolumn:name="Target-Kind",type=string,JSONPath=`.spec.target.kind`,description="The kind of the patched object."
// +kubebuilder:printcolumn:name="Target-Namespace",type=string,JSONPath=`.spec.target.namespace`,description="The namespace of the patched object; empty for a cluster-scoped one."
// +kubebuilder:printcolumn:name="Target-Name",type=string,JSONPath=`.spec.target.name`,description="The name of the patched object."
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.targets.matched`,priority=1,description="With targetSelector: how many objects the selector matches."
// +kubebuilder:printcolumn:name="Applied",type=integer,JSONPath=`.status.targets.applied`,priority=1,description="With targetSelector: how many matched objects hold the patch."
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="The Ready condition's status."
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="The Ready condition's reason: why the patch is or is not applied."
// +kubebuilder:printcolumn:name="Fields",type=integer,JSONPath=`.status.fieldCount`,description="How many fields the patch's field manager owns on the target."
// +kubebuilder:printcolumn:name="Expires",type=string,JSONPath=`.status.expiresAt`,description="When the patch deletes itself and its deletionPolicy runs (kubectl fieldops status shows the time left); empty when it does not expire."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterFieldPatch struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FieldPatchSpec   `json:"spec"`
	Status FieldPatchStatus `json:"status,omitempty"`
}

// ClusterFieldPatchList is a list of ClusterFieldPatch.
//
// +kubebuilder:object:root=true
type ClusterFieldPatchList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterFieldPatch `json:"items"`
}

func init() {
	SchemeBuilder.Register(&FieldPatch{}, &FieldPatchList{}, &ClusterFieldPatch{}, &ClusterFieldPatchList{})
}
