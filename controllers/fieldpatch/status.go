/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/conditions"
	"github.com/fieldops/fieldops/internal/patchtarget"
)

// Condition types (kstatus).
const (
	ConditionReady       = conditions.Ready
	ConditionReconciling = conditions.Reconciling
	ConditionStalled     = conditions.Stalled
)

// Reasons carried by the conditions and events. Each is documented in the
// README's troubleshooting table.
const (
	ReasonApplied              = "Applied"
	ReasonSuspended            = "Suspended"
	ReasonTargetNotFound       = "TargetNotFound"
	ReasonUnknownKind          = patchtarget.ReasonUnknownKind
	ReasonInvalidTarget        = patchtarget.ReasonInvalidTarget
	ReasonCrossNamespaceTarget = patchtarget.ReasonCrossNamespaceTarget
	ReasonForbiddenTarget      = patchtarget.ReasonForbiddenTarget
	ReasonInvalidPatch         = "InvalidPatch"
	ReasonInvalidIgnorePath    = "InvalidIgnorePath"
	ReasonConflict             = "Conflict"
	ReasonContested            = "Contested"
	// ReasonContestTimeout: Contested for longer than spec.contestTimeout;
	// Stalled, naming the contesting field manager.
	ReasonContestTimeout    = "ContestTimeout"
	ReasonApplyFailed       = "ApplyFailed"
	ReasonDriftRepaired     = "DriftRepaired"
	ReasonHandedBack        = "HandedBack"
	ReasonRestored          = "Restored"
	ReasonChangedSince      = "ChangedSince"
	ReasonRelinquished      = "Relinquished"
	ReasonDeleteFailed      = "DeleteFailed"
	ReasonPluginUnavailable = "PluginUnavailable"
	ReasonPluginFailed      = "PluginFailed"
	// ReasonForbidden: the account the patch acts as
	// (spec.serviceAccountName) may not read or write the target; the
	// message names the verb, resource and account. Retried every 30 s.
	ReasonForbidden = "Forbidden"
	// ReasonTargetsNotApplied: some targets of a selector patch are not
	// applied (status.targets.notApplied says which and why).
	ReasonTargetsNotApplied = "TargetsNotApplied"
	// ReasonListingTargets: a selector patch waits for the first list of
	// its targets.
	ReasonListingTargets = "ListingTargets"
)

func setReady(st *v1alpha1.FieldPatchStatus, gen int64, message string) {
	conditions.SetReady(&st.Conditions, gen, ReasonApplied, message)
}

func setStalled(st *v1alpha1.FieldPatchStatus, gen int64, reason, message string) {
	conditions.SetStalled(&st.Conditions, gen, reason, message)
}

func setWaiting(st *v1alpha1.FieldPatchStatus, gen int64, reason, message string) {
	conditions.SetWaiting(&st.Conditions, gen, reason, message)
}

func set(st *v1alpha1.FieldPatchStatus, gen int64, typ string, status metav1.ConditionStatus, reason, message string) {
	conditions.Set(&st.Conditions, gen, typ, status, reason, message)
}
