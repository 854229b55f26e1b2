/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchintent

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// A patch with deletionPolicy Restore keeps the previous values of the
// fields it forced (ownershipcore.Model.PreviousValues) in a Secret it
// owns, never in its status; the controller writes it and kubectl fieldops
// plan --delete reads it.
const (
	// PreviousValuesKey is the Secret's key of the previous values: a
	// partial object of the target's kind, as JSON.
	PreviousValuesKey = "values.json"
	// PreviousTargetKey is the Secret's key of the UID of the target the
	// values are of.
	PreviousTargetKey = "targetUID"
)

// PreviousValuesName is the name of the Secret of the patch with patchUID
// (in the patch's namespace; for a ClusterFieldPatch, the manager's).
func PreviousValuesName(patchUID types.UID) string { return "fieldops-previous-" + string(patchUID) }

// PreviousValuesTargetName is the name of the Secret of a selector
// patch's (spec.targetSelector) previous values of the target with
// targetUID: one Secret per target, in the same namespace as
// PreviousValuesName.
func PreviousValuesTargetName(patchUID, targetUID types.UID) string {
	return PreviousValuesName(patchUID) + "-" + string(targetUID)
}

// DecodePreviousValues reads the previous values of secret for the target
// with targetUID: nil when it holds none, or those of another target
// (deleted and recreated under the same name). Errors: the values do not
// decode (the message names the Secret, never a value).
func DecodePreviousValues(secret *corev1.Secret, targetUID string) (*unstructured.Unstructured, error) {
	raw := secret.Data[PreviousValuesKey]
	if len(raw) == 0 || string(secret.Data[PreviousTargetKey]) != targetUID {
		return nil, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("the previous values in Secret %s/%s (%s) do not decode", secret.Namespace, secret.Name, PreviousValuesKey)
	}
	return u, nil
}
