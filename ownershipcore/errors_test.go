/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// unknown500 is the apiserver's answer to a plain (not metav1.Status)
// error, as the patch handler passes on the field manager's: 500, reason
// Unknown, no details.
func unknown500(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonUnknown, Message: msg}}
}

func TestIsTerminal(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	gk := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("connection refused"), false},
		{fmt.Errorf("apply: %w: %w", ErrInvalidIntent, errors.New("x")), true},
		{fmt.Errorf("apply: %w", ErrUnknownKind), false},
		{apierrors.NewConflict(gr, "web", errors.New("conflict")), false},
		{apierrors.NewForbidden(gr, "web", errors.New("rbac")), false},
		{apierrors.NewInternalError(errors.New("etcd timeout")), false},
		{apierrors.NewInternalError(errors.New("failed to create typed patch object (a/b; apps/v1, Kind=Deployment): x")), true},
		{apierrors.NewServiceUnavailable("later"), false},
		{apierrors.NewTimeoutError("slow", 1), false},
		{apierrors.NewBadRequest("bad"), true},
		{fmt.Errorf("apply: %w", apierrors.NewBadRequest("error decoding patch: json: cannot unmarshal number 1.5 into Go struct field")), true},
		{apierrors.NewInvalid(gk, "web", field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), -1, "must be greater than or equal to 0")}), true},
		{fmt.Errorf("apply: %w", apierrors.NewInvalid(gk, "web", field.ErrorList{field.Required(field.NewPath("spec", "selector"), "")})), true},
		{unknown500("failed to create typed patch object (ns/w; example.com/v1, Kind=Widget): .env: duplicate entries for key [name=\"A\"]"), true},
		{unknown500(".spec.replicaz: field not declared in schema"), true},
		{unknown500("failed to convert new object (ns/web; apps/v1, Kind=Deployment) to proper version: unable to convert unstructured object to apps/v1, Kind=Deployment: cannot convert float64 to int32"), true},
		{unknown500("json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"), true},
		{unknown500("etcdserver: request timed out"), false},
	} {
		if got := IsTerminal(tc.err); got != tc.want {
			t.Errorf("IsTerminal(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
