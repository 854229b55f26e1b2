/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Unexported for callers, exported for the tables of package
// ownershipcore_test.
var (
	Glob        = glob
	NewContests = newContests
	Holders     = holders
	// RestoreOnly is the first write of a LetGo with Restore alone (the
	// apply of the previous values), as a crash right after it leaves it.
	RestoreOnly = (*Applier).restore
)

// SetBeforeDelete sets the hook Delete calls between its decision and its
// request (nil: none) and returns a func that unsets it.
func SetBeforeDelete(f func(ctx context.Context, live *unstructured.Unstructured)) func() {
	beforeDelete = f
	return func() { beforeDelete = nil }
}
