// Package watch starts one informer per GroupVersionKind on demand, the
// first time a controller needs it, and maps its events back to the
// controller's objects through a field index of object keys.
package watch

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Key is the index key of an object: "<group>/<kind>/<namespace>/<name>".
// The version is left out, so every version of a kind maps the same.
func Key(gk schema.GroupKind, namespace, name string) string {
	return fmt.Sprintf("%s/%s/%s/%s", gk.Group, gk.Kind, namespace, name)
}

// Watches starts informers on Cache and adds them to Controller.
type Watches struct {
	Controller controller.Controller
	Cache      cache.Cache
	// List is the controller's object list type (e.g. &FooList{}), whose
	// items are indexed by Index with the Keys of the objects they refer to.
	List  client.ObjectList
	Index string

	mu      sync.Mutex
	started map[schema.GroupVersionKind]bool
}

// Ensure watches gvk unless it is watched already. Events on an object are
// mapped to every List item whose Index holds the object's Key.
// A nil *Watches watches nothing (a reconciler driven directly, in tests).
func (w *Watches) Ensure(gvk schema.GroupVersionKind) error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started[gvk] {
		return nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	src := source.Kind(w.Cache, client.Object(obj), handler.EnqueueRequestsFromMapFunc(
		func(ctx context.Context, o client.Object) []reconcile.Request {
			return w.requests(ctx, Key(gvk.GroupKind(), o.GetNamespace(), o.GetName()))
		}))
	if err := w.Controller.Watch(src); err != nil {
		return fmt.Errorf("watch %s: %w", gvk, err)
	}
	if w.started == nil {
		w.started = map[schema.GroupVersionKind]bool{}
	}
	w.started[gvk] = true
	return nil
}

func (w *Watches) requests(ctx context.Context, key string) []reconcile.Request {
	l := w.List.DeepCopyObject().(client.ObjectList)
	if err := w.Cache.List(ctx, l, client.MatchingFields{w.Index: key}); err != nil {
		return nil
	}
	var out []reconcile.Request
	_ = meta.EachListItem(l, func(o runtime.Object) error {
		co := o.(client.Object)
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: co.GetNamespace(), Name: co.GetName()}})
		return nil
	})
	return out
}
