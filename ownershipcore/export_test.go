/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

// Unexported for callers, exported for the tables of package
// ownershipcore_test.
var (
	Glob        = glob
	NewContests = newContests
	Holders     = holders
)
