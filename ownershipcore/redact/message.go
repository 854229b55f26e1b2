/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package redact

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// Message is the text of err for status conditions, events and logs:
// readable, and without any value of the object it is about. Controllers
// pass every error through it before reporting it (a target's
// values, such as a Secret's data copied by a JSON patch, never reach
// status, events or logs).
//
// It rewrites:
//
//   - structured-merge-diff validation errors (typed.ValidationErrors, from
//     ownershipcore.Schema.ToTyped, FieldSet and the local field manager): each becomes
//     "<path>: expected <type>, got <kind>", e.g. ".spec.x: expected
//     string, got integer" for "expected string, got
//     &value.valueUnstructured{Value:5}"; several are joined with "; ";
//   - the apiserver's Invalid answers (metav1.StatusCause Field, Type,
//     Message): "<Kind> \"name\" is invalid: <field>: <reason>: <detail>",
//     the rejected value left out ("Invalid value (omitted): must be …");
//   - the same shapes where they survive only as text (an error formatted
//     with %v, a 500 whose message carries the field manager's error), by
//     Text.
//
// A nil err gives "".
func Message(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	var verrs typed.ValidationErrors
	if errors.As(err, &verrs) && len(verrs) > 0 {
		msg = strings.Replace(msg, verrs.Error(), formatValidationErrors(verrs), 1)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if raw, ok := status.(error); ok {
			if safe, ok := invalidStatusMessage(status.Status()); ok {
				msg = strings.Replace(msg, raw.Error(), safe, 1)
			}
		}
	}
	return Text(msg)
}

// formatValidationErrors renders structured-merge-diff's validation errors
// one per path, their values left out, sorted: structured-merge-diff lists
// them in map order, and a message that changes on every reconcile would
// rewrite status and repeat events.
func formatValidationErrors(errs typed.ValidationErrors) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		m := sanitizeSMD(e.ErrorMessage, true)
		if e.Path != "" {
			m = e.Path + ": " + m
		}
		parts[i] = m
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// invalidStatusMessage rebuilds the message of an Invalid status from its
// details: kind, name, and per cause the field and the reason, without the
// rejected value. ok is false for other statuses or without causes.
func invalidStatusMessage(s metav1.Status) (string, bool) {
	if s.Reason != metav1.StatusReasonInvalid || s.Details == nil || len(s.Details.Causes) == 0 {
		return "", false
	}
	kind := s.Details.Kind
	if s.Details.Group != "" {
		kind += "." + s.Details.Group
	}
	causes := make([]string, len(s.Details.Causes))
	for i, c := range s.Details.Causes {
		m := causeMessage(c)
		if c.Field != "" {
			m = c.Field + ": " + m
		}
		causes[i] = m
	}
	return fmt.Sprintf("%s %q is invalid: %s", kind, s.Details.Name, strings.Join(causes, "; ")), true
}

// causeTypes are the words field.ErrorType.String gives each cause type
// (k8s.io/apimachinery/pkg/util/validation/field/errors.go): a cause's
// message is "<words>[: <value>][: <detail>]".
var causeTypes = map[metav1.CauseType]string{
	metav1.CauseTypeFieldValueNotFound:     "Not found",
	metav1.CauseTypeFieldValueRequired:     "Required value",
	metav1.CauseTypeFieldValueDuplicate:    "Duplicate value",
	metav1.CauseTypeFieldValueInvalid:      "Invalid value",
	metav1.CauseTypeFieldValueNotSupported: "Unsupported value",
	metav1.CauseTypeForbidden:              "Forbidden",
	metav1.CauseTypeTooLong:                "Too long",
	metav1.CauseTypeTooMany:                "Too many",
	metav1.CauseTypeTypeInvalid:            "Invalid value",
	metav1.CauseType("FieldValueTooShort"): "Too short",
	metav1.CauseType("FieldValueTooFew"):   "Too few",
	metav1.CauseTypeInternal:               "Internal error",
}

// causeMessage is a cause's message without the value.
func causeMessage(c metav1.StatusCause) string {
	words, known := causeTypes[c.Type]
	if !known || !strings.HasPrefix(c.Message, words) {
		return Text(c.Message)
	}
	rest := strings.TrimPrefix(c.Message, words)
	if !strings.HasPrefix(rest, ": ") {
		return Text(c.Message)
	}
	rest = rest[2:]
	if !looksLikeValue(rest) {
		// No value (field.Error with an omitted value): rest is the detail.
		return words + ": " + Text(rest)
	}
	n, ok := scanValue(rest)
	if !ok {
		return words + omitted
	}
	rest = rest[n:]
	if strings.HasPrefix(rest, ": ") {
		return words + omitted + ": " + Text(rest[2:])
	}
	return words + omitted
}
