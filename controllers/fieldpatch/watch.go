package fieldpatch

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// targetIndex is the field index of FieldPatches by target:
// "<group>/<kind>/<namespace>/<name>".
const targetIndex = "fieldops.dev/target"

func targetKey(gk schema.GroupKind, namespace, name string) string {
	return fmt.Sprintf("%s/%s/%s/%s", gk.Group, gk.Kind, namespace, name)
}

// watches starts one informer per target kind on demand (the first time a
// patch needs it) and maps its events to the patches of that object.
type watches struct {
	mu      sync.Mutex
	started map[schema.GroupVersionKind]bool
	ctrl    controller.Controller
	cache   cache.Cache
	list    func(ctx context.Context, key string) ([]types.NamespacedName, error)
}

func (w *watches) ensure(gvk schema.GroupVersionKind) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started[gvk] {
		return nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	src := source.Kind(w.cache, client.Object(obj), handler.EnqueueRequestsFromMapFunc(
		func(ctx context.Context, o client.Object) []reconcile.Request {
			names, err := w.list(ctx, targetKey(gvk.GroupKind(), o.GetNamespace(), o.GetName()))
			if err != nil {
				return nil
			}
			reqs := make([]reconcile.Request, len(names))
			for i, n := range names {
				reqs[i] = reconcile.Request{NamespacedName: n}
			}
			return reqs
		}))
	if err := w.ctrl.Watch(src); err != nil {
		return fmt.Errorf("watch %s: %w", gvk, err)
	}
	w.started[gvk] = true
	return nil
}
