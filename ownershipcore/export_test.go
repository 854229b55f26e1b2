package ownershipcore

// Unexported for callers, exported for the tables of package
// ownershipcore_test.
var (
	Glob        = glob
	NewContests = newContests
	Holders     = holders
)
