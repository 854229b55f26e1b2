/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package notes makes the text fieldops reports to users fit where it goes:
// event notes and condition messages are cleaned of Go internals and values
// (redact.Text) and bounded to what the apiserver accepts,
// so that a long failure (300 conflicting fields) is still reported instead
// of being rejected.
package notes

import (
	"fmt"
	"unicode/utf8"

	"github.com/fieldops/fieldops/ownershipcore/redact"
)

const (
	// MaxEventNote is the longest note, in bytes, the apiserver accepts in
	// an events.k8s.io/v1 Event (NoteLengthLimit in
	// k8s.io/kubernetes/pkg/apis/core/validation/events.go). A longer one
	// is refused ("Server rejected event (will not retry!)") and the
	// event is lost.
	MaxEventNote = 1024
	// MaxConditionMessage is the longest message of a metav1.Condition
	// (its OpenAPI maxLength, 32768), counted here in bytes, which is
	// stricter than the characters OpenAPI counts.
	MaxConditionMessage = 32768
)

// Marker ends a truncated text.
const Marker = " … (truncated)"

// Event formats an event note (fmt.Sprintf(format, args...)), cleans it
// with redact.Text and bounds it to MaxEventNote bytes.
// Use it as the note of every event fieldops records:
//
//	recorder.Eventf(obj, nil, typ, reason, action, "%s", notes.Event(format, args...))
func Event(format string, args ...interface{}) string {
	return Truncate(redact.Text(fmt.Sprintf(format, args...)), MaxEventNote)
}

// Condition cleans a condition message with redact.Text and
// bounds it to MaxConditionMessage bytes.
func Condition(msg string) string {
	return Truncate(redact.Text(msg), MaxConditionMessage)
}

// Truncate returns s when it has at most max bytes, else its longest
// prefix that ends on a rune boundary and leaves room for Marker, followed
// by Marker: at most max bytes in all. A max below len(Marker) gives a
// prefix of s of at most max bytes, without Marker.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	if max < len(Marker) {
		return runePrefix(s, max)
	}
	return runePrefix(s, max-len(Marker)) + Marker
}

// runePrefix is the longest prefix of s of at most n bytes that does not
// split a rune.
func runePrefix(s string, n int) string {
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
