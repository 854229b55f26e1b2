/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package packed

import (
	"encoding/json"
	"fmt"
	"unique"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Ptr is a pointer to a typed API object T (e.g. *v1alpha1.FieldPatch)
// that embeds metav1.ObjectMeta.
type Ptr[T any] interface {
	*T
	client.Object
}

// Kind packs the objects of one typed kind T in an informer cache (its
// Transform) and lends them to readers that only look (Lend).
type Kind[T any, P Ptr[T]] struct {
	// Codec compresses the objects' JSON.
	Codec *Codec
	// Conditions returns where obj's status conditions live: their Ready
	// and Stalled summary stays unpacked, for readers that count objects
	// by state (Reader).
	Conditions func(obj P) *[]metav1.Condition
	// NewList returns an empty list of the kind (e.g.
	// &v1alpha1.FieldPatchList{}): the lists Lend fills.
	NewList func() client.ObjectList
}

// Object is an object of kind T held packed: its type and object
// metadata as decoded (without what the cache's earlier transform
// dropped), the rest of its JSON (spec, status) compressed, and the
// Ready and Stalled conditions' summary. It is a client.Object whose
// DeepCopyObject returns the object unpacked, a P: the informer cache's
// Get and List, which copy every object they return, hand out P as if
// the cache held it, while the informer's event handlers, predicates and
// indexers see an Object with the metadata they read.
type Object[T any, P Ptr[T]] struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	kind *Kind[T, P]
	body []byte // compressed JSON of the object without its metadata
	// ready is the Ready condition's status ("" without one), reason
	// its reason; stalled is true when Stalled is True.
	ready, reason string
	stalled       bool
}

// DeepCopyObject returns the object unpacked (see Unpack).
func (o *Object[T, P]) DeepCopyObject() runtime.Object { return o.Unpack() }

// Unpack returns a new P equal to the object that was packed (after the
// cache's earlier transform). It panics if the body does not decode,
// which cannot happen to bytes Pack produced: a reconcile deciding on a
// part of the object (a FieldPatch without its record of previous
// owners) would be wrong, and a panic in a reconcile is recovered and
// retried.
func (o *Object[T, P]) Unpack() P {
	out := P(new(T))
	raw, err := o.kind.Codec.Inflate(o.body)
	if err == nil {
		err = json.Unmarshal(raw, out)
	}
	if err != nil {
		panic(fmt.Sprintf("packed: unpack %s %s/%s: %v", o.GroupVersionKind().Kind, o.Namespace, o.Name, err))
	}
	o.ObjectMeta.DeepCopyInto(objectMeta(out))
	out.GetObjectKind().SetGroupVersionKind(o.GroupVersionKind())
	return out
}

// objectMeta is the metav1.ObjectMeta obj embeds.
func objectMeta(obj client.Object) *metav1.ObjectMeta {
	return obj.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta)
}

// Pack returns obj packed; obj is not changed. An object that does not
// encode (which no typed API object does) is returned as it is: a cache
// holding it whole still answers right.
func (k *Kind[T, P]) Pack(obj P) runtime.Object {
	om, gvk := objectMeta(obj), obj.GetObjectKind().GroupVersionKind()
	kept := *om
	*om = metav1.ObjectMeta{}
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	raw, err := json.Marshal(obj)
	*om = kept
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	if err != nil {
		return obj
	}
	p := &Object[T, P]{ObjectMeta: kept, kind: k, body: k.Codec.Deflate(raw)}
	p.SetGroupVersionKind(gvk)
	conds := *k.Conditions(obj)
	if c := meta.FindStatusCondition(conds, "Ready"); c != nil {
		// Few distinct values: held once for all objects.
		p.ready, p.reason = unique.Make(string(c.Status)).Value(), unique.Make(c.Reason).Value()
	}
	p.stalled = meta.IsStatusConditionTrue(conds, "Stalled")
	return p
}

// Transform returns the cache transform of the kind: strip (nil: none)
// and then Pack. Objects of other types pass through strip only; an
// object already packed is returned as it is.
func (k *Kind[T, P]) Transform(strip toolscache.TransformFunc) toolscache.TransformFunc {
	return func(in any) (any, error) {
		if _, ok := in.(*Object[T, P]); ok {
			return in, nil
		}
		out := in
		if strip != nil {
			var err error
			if out, err = strip(in); err != nil {
				return out, err
			}
		}
		if obj, ok := out.(P); ok {
			return k.Pack(obj), nil
		}
		return out, nil
	}
}

// lent returns a P that looks like the object to a reader that only
// reads its metadata and its Ready and Stalled conditions' status and
// reason: the metadata shared with the cache (never to be written), the
// two conditions rebuilt from the summary, nothing else.
func (o *Object[T, P]) lent() P {
	out := P(new(T))
	*objectMeta(out) = o.ObjectMeta
	out.GetObjectKind().SetGroupVersionKind(o.GroupVersionKind())
	var conds []metav1.Condition
	if o.ready != "" {
		conds = append(conds, metav1.Condition{Type: "Ready", Status: metav1.ConditionStatus(o.ready), Reason: o.reason})
	}
	if o.stalled {
		conds = append(conds, metav1.Condition{Type: "Stalled", Status: metav1.ConditionTrue})
	}
	*o.kind.Conditions(out) = conds
	return out
}
