/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package targetcache

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// A shared watch keeps each object as the JSON the apiserver sent: its
// list and watch decode only the metadata the reflector needs (name,
// namespace, UID, resourceVersion), never the whole object into a map
// that would be encoded again. A read decodes a fresh copy (decode).

// rawObject is one object of a shared watch: its JSON and its metadata.
type rawObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	raw []byte // the JSON as the apiserver sent it
}

func (o *rawObject) DeepCopyObject() runtime.Object {
	c := *o
	o.DeepCopyInto(&c.ObjectMeta)
	return &c // raw is never written to: shared
}

// rawList is a list of a shared watch.
type rawList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []rawObject
}

func (l *rawList) DeepCopyObject() runtime.Object {
	c := &rawList{TypeMeta: l.TypeMeta, Items: make([]rawObject, len(l.Items))}
	l.DeepCopyInto(&c.ListMeta)
	for i := range l.Items {
		c.Items[i] = *l.Items[i].DeepCopyObject().(*rawObject)
	}
	return c
}

// rawMeta is the metadata read from an object's JSON.
type rawMeta struct {
	Metadata struct {
		Name            string    `json:"name"`
		Namespace       string    `json:"namespace"`
		UID             types.UID `json:"uid"`
		ResourceVersion string    `json:"resourceVersion"`
	} `json:"metadata"`
}

func newRawObject(raw []byte) (*rawObject, error) {
	var m rawMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	o := &rawObject{raw: raw}
	o.Name, o.Namespace, o.UID, o.ResourceVersion = m.Metadata.Name, m.Metadata.Namespace, m.Metadata.UID, m.Metadata.ResourceVersion
	return o, nil
}

// decode decodes raw, the JSON of an object of kind gvk, into a new
// object. List items come without apiVersion and kind: they are set.
func decode(raw []byte, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	m := map[string]interface{}{}
	if err := utiljson.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// rawClient lists and watches the objects of one resource in one
// namespace ("" for all, or a cluster-scoped kind) as rawObjects.
type rawClient struct {
	rest rest.Interface
	path string // the collection's path
}

// newRawClient returns the client of resource gvr in namespace.
func newRawClient(rc rest.Interface, gvr schema.GroupVersionResource, namespace string) *rawClient {
	path := "/apis/" + gvr.Group + "/" + gvr.Version
	if gvr.Group == "" {
		path = "/api/" + gvr.Version
	}
	if namespace != "" {
		path += "/namespaces/" + namespace
	}
	return &rawClient{rest: rc, path: path + "/" + gvr.Resource}
}

// IsWatchListSemanticsUnSupported: the reflector lists, then watches
// (a watch-list stream's bookmarks carry annotations rawObject leaves
// out).
func (c *rawClient) IsWatchListSemanticsUnSupported() bool { return true }

// metaScheme knows metav1.Status: the error of a refused request is an
// APIStatus (Forbidden, Gone...).
var metaScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}()

func (c *rawClient) request(opts metav1.ListOptions) *rest.Request {
	return c.rest.Get().AbsPath(c.path).SpecificallyVersionedParams(&opts, metav1.ParameterCodec, metav1.SchemeGroupVersion)
}

// list lists the collection as a stream: each item is kept as its own
// JSON as it is decoded, so a list of N objects is never held a second
// time as one body.
func (c *rawClient) list(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	stream, err := c.request(opts).Stream(ctx) // an APIStatus when the apiserver sent one
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	out, err := decodeList(json.NewDecoder(stream))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", c.path, err)
	}
	return out, nil
}

// decodeList decodes a list ({"metadata": ..., "items": [...], ...}) from
// dec, one item at a time.
func decodeList(dec *json.Decoder) (*rawList, error) {
	out := &rawList{}
	if err := wantDelim(dec, '{'); err != nil {
		return nil, err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch key {
		case "metadata":
			if err := dec.Decode(&out.ListMeta); err != nil {
				return nil, err
			}
		case "items":
			if err := decodeItems(dec, out); err != nil {
				return nil, err
			}
		default: // apiVersion, kind
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
		}
	}
	return out, wantDelim(dec, '}')
}

// decodeItems decodes the items of a list (an array, or null) into out.
func decodeItems(dec *json.Decoder, out *rawList) error {
	tok, err := dec.Token()
	if err != nil || tok == nil { // null: no items
		return err
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("items: %v, want an array", tok)
	}
	for dec.More() {
		var it json.RawMessage
		if err := dec.Decode(&it); err != nil {
			return err
		}
		o, err := newRawObject(it)
		if err != nil {
			return err
		}
		out.Items = append(out.Items, *o)
	}
	return wantDelim(dec, ']')
}

func wantDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("%v, want %v", tok, d)
	}
	return nil
}

func (c *rawClient) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	stream, err := c.request(opts).Stream(ctx)
	if err != nil {
		return nil, err
	}
	return watch.NewStreamWatcher(&rawDecoder{body: stream, dec: json.NewDecoder(stream)}, &rawReporter{}), nil
}

// rawDecoder decodes the events of a JSON watch stream.
type rawDecoder struct {
	body io.ReadCloser
	dec  *json.Decoder
}

func (d *rawDecoder) Decode() (watch.EventType, runtime.Object, error) {
	var ev struct {
		Type   watch.EventType `json:"type"`
		Object json.RawMessage `json:"object"`
	}
	if err := d.dec.Decode(&ev); err != nil {
		return "", nil, err
	}
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		o, err := newRawObject(ev.Object)
		return ev.Type, o, err
	case watch.Error:
		st := &metav1.Status{}
		if err := json.Unmarshal(ev.Object, st); err != nil {
			return "", nil, err
		}
		return ev.Type, st, nil
	}
	return "", nil, fmt.Errorf("watch: unknown event type %q", ev.Type)
}

func (d *rawDecoder) Close() { _ = d.body.Close() }

// rawReporter turns a stream's decoding error into an error event.
type rawReporter struct{}

func (rawReporter) AsObject(err error) runtime.Object {
	return &metav1.Status{Status: metav1.StatusFailure, Message: err.Error(), Reason: metav1.StatusReasonUnknown, Code: http.StatusInternalServerError}
}

// newRESTClient is the client of raw requests made from cfg and hc.
func newRESTClient(cfg *rest.Config, hc *http.Client) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{}
	c.APIPath = "/"
	c.NegotiatedSerializer = serializer.NewCodecFactory(metaScheme).WithoutConversion()
	c.AcceptContentTypes = "application/json"
	c.ContentType = "application/json"
	if strings.TrimSpace(c.UserAgent) == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientForConfigAndClient(c, hc)
}
