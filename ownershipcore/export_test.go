package ownershipcore

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// RelinquishExpecting is Relinquish with extra fields expected to leave
// (fields only manager owned, as seen before the empty apply), for tests
// that reproduce the apiserver keeping unowned fields.
func RelinquishExpecting(ctx context.Context, a *Applier, obj *unstructured.Unstructured, manager string, extra *fieldpath.Set) (Result, error) {
	return a.relinquish(ctx, obj, nil, manager, extra)
}

// Unexported for callers, exported for the tables of package
// ownershipcore_test.
var (
	Glob        = glob
	NewContests = newContests
	Holders     = holders
	// DroppedMapKeys: see droppedMapKeys.
	DroppedMapKeys = droppedMapKeys
)
