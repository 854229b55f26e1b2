/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import "github.com/fieldops/fieldops/ownershipcore/strategy"

// IgnorablePaths names fields of an object that fieldops must neither
// set nor repair (strategy.IgnorablePaths).
type IgnorablePaths = strategy.IgnorablePaths
