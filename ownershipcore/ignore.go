package ownershipcore

import "github.com/fieldops/fieldops/ownershipcore/strategy"

// IgnorablePaths names fields of an object that fieldops must neither
// set nor repair (strategy.IgnorablePaths).
type IgnorablePaths = strategy.IgnorablePaths
