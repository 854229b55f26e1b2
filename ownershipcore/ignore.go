package ownershipcore

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// IgnorablePaths names fields of an object that fieldops must neither set
// nor repair (a service mesh's sidecar annotations, a policy engine's
// annotations): they are removed from the intent (ApplyOptions.Ignore) and
// from the legacy diff. Built-in: StaticPaths; plugins implement it too.
// An error leaves the caller with its own paths only.
type IgnorablePaths interface {
	Paths(ctx context.Context, obj *unstructured.Unstructured) (*fieldpath.Set, error)
}

// StaticPaths ignores the same paths on every object (spec.ignorePaths).
type StaticPaths struct {
	Set *fieldpath.Set
}

var _ IgnorablePaths = StaticPaths{}

// Paths implements IgnorablePaths.
func (s StaticPaths) Paths(context.Context, *unstructured.Unstructured) (*fieldpath.Set, error) {
	if s.Set == nil {
		return fieldpath.NewSet(), nil
	}
	return s.Set, nil
}
