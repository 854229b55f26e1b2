/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/ownershipcore"
)

// outcome is what an apply of an intent to a target version, for a
// FieldPatch generation, came to after conflicts (a ConflictError, or
// conflicts yielded or forced with nothing left to write).
type outcome struct {
	rv     string
	gen    int64
	intent string
	res    ownershipcore.Result
	err    error
}

// intentKey is the intent's JSON (an intent the JSON encoder refuses has
// none: it never matches).
func intentKey(intent *unstructured.Unstructured) string {
	b, err := json.Marshal(intent.Object)
	if err != nil {
		return "!" + err.Error()
	}
	return string(b)
}
