package workload

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/watch"
)

// object is one entry of spec.resources, parsed.
type object struct {
	index int
	// intent is the object with its namespace defaulted; nil when the entry
	// could not be parsed.
	intent *unstructured.Unstructured
	// key is watch.Key of the object; empty when it has no identity.
	key        string
	namespaced bool
	// err is why the object is not applied (reason, message, retry).
	err *objectError
}

// objectError is a problem with one object: it is reported in its
// inventory entry and as an event, and the other objects go on.
type objectError struct {
	Reason  string
	Message string
	// Retry says a later attempt may succeed without a spec change.
	Retry bool
}

func (e *objectError) Error() string { return e.Message }

func objErr(reason string, retry bool, format string, args ...interface{}) *objectError {
	return &objectError{Reason: reason, Retry: retry, Message: fmt.Sprintf(format, args...)}
}

// parseObjects reads spec.resources: identity checked, namespace defaulted
// to the workload's for namespaced kinds, duplicates refused (the first
// wins). mapper tells namespaced kinds from cluster-scoped ones.
func parseObjects(mw *v1alpha1.ManagedWorkload, mapper meta.RESTMapper) []*object {
	out := make([]*object, 0, len(mw.Spec.Resources))
	seen := map[string]int{}
	for i, raw := range mw.Spec.Resources {
		o := &object{index: i}
		out = append(out, o)
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw.Raw); err != nil {
			o.err = objErr(ReasonInvalidObject, false, "resources[%d]: %v", i, err)
			continue
		}
		gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
		if err != nil || u.GetKind() == "" {
			o.err = objErr(ReasonInvalidObject, false, "resources[%d]: apiVersion %q and kind %q do not name a kind", i, u.GetAPIVersion(), u.GetKind())
			continue
		}
		o.intent = u
		gvk := gv.WithKind(u.GetKind())
		if u.GetName() == "" {
			o.err = objErr(ReasonInvalidObject, false, "resources[%d] (%s): metadata.name is required (generateName cannot be applied)", i, gvk.Kind)
			continue
		}
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			if meta.IsNoMatchError(err) {
				o.err = objErr(ReasonUnknownKind, true, "resources[%d]: kind %s is not served by the apiserver", i, gvk)
			} else {
				o.err = objErr(ReasonUnknownKind, true, "resources[%d]: %v", i, err)
			}
			continue
		}
		o.namespaced = mapping.Scope.Name() == meta.RESTScopeNameNamespace
		switch {
		case o.namespaced && u.GetNamespace() == "":
			u.SetNamespace(mw.Namespace)
		case !o.namespaced && u.GetNamespace() != "":
			o.err = objErr(ReasonInvalidObject, false, "resources[%d]: %s is cluster-scoped; remove metadata.namespace", i, gvk.Kind)
			continue
		}
		o.key = watch.Key(gvk.GroupKind(), u.GetNamespace(), u.GetName())
		if first, dup := seen[o.key]; dup {
			o.err = objErr(ReasonDuplicateObject, false, "resources[%d]: %s %s is already resources[%d]", i, gvk.Kind, refName(u.GetNamespace(), u.GetName()), first)
			continue
		}
		seen[o.key] = i
	}
	return out
}

// Resource is one entry of spec.resources as the controller reads it.
type Resource struct {
	// Index is the entry's position in spec.resources.
	Index int
	// Intent is the object with its namespace defaulted; nil when the
	// entry could not be parsed.
	Intent *unstructured.Unstructured
	// Err is why the controller would not apply the entry (an unknown
	// kind, no name, a duplicate, ...); nil otherwise.
	Err error
}

// Resources returns the entries of mw's spec.resources parsed and in the
// order the controller applies them (namespaces, CRDs, other
// cluster-scoped objects, namespaced objects), for kubectl fieldops plan.
func Resources(mw *v1alpha1.ManagedWorkload, mapper meta.RESTMapper) []Resource {
	var out []Resource
	for _, o := range applyOrder(parseObjects(mw, mapper)) {
		r := Resource{Index: o.index, Intent: o.intent}
		if o.err != nil {
			r.Err = o.err
		}
		out = append(out, r)
	}
	return out
}

// rank orders applies: namespaces, then CRDs, then other cluster-scoped
// objects, then namespaced ones (which may need all of those). Deletion
// runs in the reverse order.
func rank(apiVersion, kind string, namespaced bool) int {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	switch {
	case gv.Group == "" && kind == "Namespace":
		return 0
	case gv.Group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition":
		return 1
	case !namespaced:
		return 2
	default:
		return 3
	}
}

// applyOrder sorts objects by rank, stable on their index.
func applyOrder(objs []*object) []*object {
	out := append([]*object(nil), objs...)
	sort.SliceStable(out, func(i, j int) bool {
		return objRank(out[i]) < objRank(out[j])
	})
	return out
}

func objRank(o *object) int {
	if o.intent == nil {
		return 4
	}
	return rank(o.intent.GetAPIVersion(), o.intent.GetKind(), o.namespaced)
}

// indexKeys are the watch keys spec.resources may refer to, for the field
// index that maps events back to workloads. Without a RESTMapper at index
// time, an object without a namespace yields both its cluster-scoped key
// and its key in the workload's namespace.
func indexKeys(mw *v1alpha1.ManagedWorkload) []string {
	var keys []string
	for _, raw := range mw.Spec.Resources {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw.Raw); err != nil || u.GetName() == "" {
			continue
		}
		gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
		if err != nil {
			continue
		}
		gk := gv.WithKind(u.GetKind()).GroupKind()
		if ns := u.GetNamespace(); ns != "" {
			keys = append(keys, watch.Key(gk, ns, u.GetName()))
			continue
		}
		keys = append(keys, watch.Key(gk, "", u.GetName()), watch.Key(gk, mw.Namespace, u.GetName()))
	}
	return keys
}

func refName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
