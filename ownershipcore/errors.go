/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ErrInvalidIntent is wrapped by the errors of intents that can never be
// applied as they are: a list-map key given twice, a value of the wrong
// type. Only a change of the intent (the spec that produced it) can fix
// such an error, so callers report it and do not retry. Applier.Apply
// returns it, wrapped with the structured-merge-diff error that says why,
// when the apiserver's field manager run locally
// (managedfields.FieldManager.Apply) refuses the intent: nothing is sent.
// A field the schema does not declare is not refused locally (the
// apiserver's schema may be newer); IsTerminal covers the apiserver's
// answers of that kind and the others.
var ErrInvalidIntent = errors.New("invalid intent")

// IsTerminal reports whether err says that the intent itself is wrong, so
// that retrying the same intent can never succeed:
//
//   - it wraps ErrInvalidIntent (the local field manager refused it);
//   - it is the apiserver's 422 Invalid or 400 BadRequest
//     (apierrors.IsInvalid, apierrors.IsBadRequest);
//   - it is the apiserver's 500 for an apply patch it could not type
//     (k8s.io/apiserver handlers/patch.go passes the field manager's plain
//     error through as a 500 with reason Unknown: "failed to create typed
//     patch object (…): .spec…: duplicate entries for key [name=\"X\"]"),
//     or for an object it could not convert into its Go type ("failed to
//     convert new object (…) to proper version: unable to convert
//     unstructured object to apps/v1, Kind=Deployment: cannot convert
//     float64 to int32" for replicas: 1.5; "cannot unmarshal number 1.5
//     into Go struct field … of type int32" when decoding).
//
// Conflicts, a kind that is not served (ErrUnknownKind), Forbidden and
// every other failure are not terminal: the world may change.
func IsTerminal(err error) bool {
	if err == nil || apierrors.IsConflict(err) || errors.Is(err, ErrUnknownKind) {
		return false
	}
	if errors.Is(err, ErrInvalidIntent) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code == 500 {
		return rejectsObject(status.Status().Message)
	}
	return false
}

// rejectsObject reports whether an apiserver message says that the object
// sent does not fit its schema or its Go type. Only the text can say so:
// the apiserver turns the field manager's plain error into a 500 with
// reason Unknown and no details (apierrors.ErrorToAPIStatus), so there is
// no metav1.StatusCause to read.
func rejectsObject(msg string) bool {
	for _, s := range []string{
		"failed to create typed patch object",
		"duplicate entries for key",
		"cannot unmarshal",
		"field not declared in schema",
		// runtime.DefaultUnstructuredConverter into the Go type of a
		// built-in kind (scheme.go): "cannot convert float64 to int32".
		"unable to convert unstructured object to",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// invalidIntent returns the error of the local field manager's refusal of
// intent wrapped with ErrInvalidIntent, or nil when err is not about the
// intent, or may be the schema's (the live object did not convert, a
// field the cached schema does not declare).
//
// The field manager (structuredmerge.go in
// k8s.io/apimachinery/pkg/util/managedfields/internal) reports an intent
// that does not fit the schema as "failed to create typed patch object";
// before calling that final, the intent is converted again with ToTyped
// (which re-reads a schema document older than rereadAge when a field is
// not declared). A field still not declared is left to the apiserver,
// whose schema may be newer than any document read here: one request,
// whose refusal IsTerminal recognises. ToTyped allows duplicate list-map
// keys, as the apiserver does for stored objects; an apply patch may not
// have them. err is matched by its text: the field manager formats the
// structured-merge-diff error with %v, so no typed.ValidationErrors
// survives in it.
func (a *Applier) invalidIntent(intent *unstructured.Unstructured, err error) error {
	if err == nil || !strings.Contains(err.Error(), "failed to create typed patch object") {
		return nil
	}
	if _, terr := a.Schema.ToTyped(intent); terr != nil {
		if errors.Is(terr, ErrUnknownKind) || isUndeclaredField(terr) {
			// The apiserver's schema may be newer than the one just
			// read (it republishes a CRD's OpenAPI a moment after the
			// change): it decides.
			return nil
		}
		return fmt.Errorf("%w: %w", ErrInvalidIntent, terr)
	}
	if strings.Contains(err.Error(), "duplicate entries for key") {
		return fmt.Errorf("%w: %w", ErrInvalidIntent, err)
	}
	// The schema just re-read accepts the intent: the field manager had
	// the old one. Let the apiserver decide.
	return nil
}
