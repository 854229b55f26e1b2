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
	// RestoreOnly is the first write of a LetGo with Restore alone (the
	// apply of the previous values), as a crash right after it leaves it.
	RestoreOnly = (*Applier).restore
)
