package fieldpatch

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fieldops/fieldops/api/v1alpha1"
)

// Condition types (kstatus).
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// Reasons carried by the conditions and events. Each is documented in the
// README's troubleshooting table.
const (
	ReasonApplied              = "Applied"
	ReasonSuspended            = "Suspended"
	ReasonTargetNotFound       = "TargetNotFound"
	ReasonUnknownKind          = "UnknownKind"
	ReasonInvalidTarget        = "InvalidTarget"
	ReasonCrossNamespaceTarget = "CrossNamespaceTarget"
	ReasonForbiddenTarget      = "ForbiddenTarget"
	ReasonInvalidPatch         = "InvalidPatch"
	ReasonInvalidIgnorePath    = "InvalidIgnorePath"
	ReasonConflict             = "Conflict"
	ReasonContested            = "Contested"
	ReasonApplyFailed          = "ApplyFailed"
	ReasonDriftRepaired        = "DriftRepaired"
	ReasonHandedBack           = "HandedBack"
	ReasonRelinquished         = "Relinquished"
	ReasonDeleteFailed         = "DeleteFailed"
)

// setReady marks the patch applied and settled.
func setReady(st *v1alpha1.FieldPatchStatus, gen int64, message string) {
	set(st, gen, ConditionReady, metav1.ConditionTrue, ReasonApplied, message)
	meta.RemoveStatusCondition(&st.Conditions, ConditionReconciling)
	meta.RemoveStatusCondition(&st.Conditions, ConditionStalled)
}

// setStalled marks an error a retry will not fix until the spec or the
// world changes: Ready=False and Stalled=True with the same reason.
func setStalled(st *v1alpha1.FieldPatchStatus, gen int64, reason, message string) {
	set(st, gen, ConditionReady, metav1.ConditionFalse, reason, message)
	set(st, gen, ConditionStalled, metav1.ConditionTrue, reason, message)
	meta.RemoveStatusCondition(&st.Conditions, ConditionReconciling)
}

// setWaiting marks progress that waits on something (a missing target, a
// backoff, a transient error): Ready=False and Reconciling=True.
func setWaiting(st *v1alpha1.FieldPatchStatus, gen int64, reason, message string) {
	set(st, gen, ConditionReady, metav1.ConditionFalse, reason, message)
	set(st, gen, ConditionReconciling, metav1.ConditionTrue, reason, message)
	meta.RemoveStatusCondition(&st.Conditions, ConditionStalled)
}

func set(st *v1alpha1.FieldPatchStatus, gen int64, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: gen,
	})
}
