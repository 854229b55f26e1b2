/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fieldops/fieldops/ownershipcore"
)

// postrenderer decides each rendered object against its live copy.
type postrenderer struct {
	client  client.Client
	mapper  meta.RESTMapper
	applier *ownershipcore.Applier
	// namespace is the release's: the namespace Helm applies an object
	// without one into.
	namespace string
	manager   string
	yieldTo   map[string]bool
	// keepLiveValues gives the yielded fields their live values instead
	// of leaving them out (--keep-live-values, for Helm 3), except a
	// Secret's (keepsLiveValues).
	keepLiveValues bool
}

// splitDocuments splits a YAML stream before each document marker line
// ("---" alone or followed by blanks, YAML 1.2 section 9.1.2); each part
// keeps its bytes, so that the parts joined are the stream.
func splitDocuments(in []byte) [][]byte {
	var docs [][]byte
	start := 0
	for i := 0; i < len(in); {
		next := len(in)
		if nl := bytes.IndexByte(in[i:], '\n'); nl >= 0 {
			next = i + nl + 1
		}
		if i > start && isDocumentMarker(in[i:next]) {
			docs = append(docs, in[start:i])
			start = i
		}
		i = next
	}
	if start < len(in) {
		docs = append(docs, in[start:])
	}
	return docs
}

// isDocumentMarker reports whether line (with its line break) starts a
// YAML document: "---" followed by nothing, a blank or a comment.
func isDocumentMarker(line []byte) bool {
	rest, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("---"))
	return ok && (len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t')
}

// splitMarker splits doc into its marker line (empty when it has none)
// and its content.
func splitMarker(doc []byte) (marker, body []byte) {
	next := len(doc)
	if nl := bytes.IndexByte(doc, '\n'); nl >= 0 {
		next = nl + 1
	}
	if isDocumentMarker(doc[:next]) {
		return doc[:next], doc[next:]
	}
	return nil, doc
}

// leadingComments is the comment and blank lines body starts with (the
// "# Source: chart/templates/x.yaml" Helm writes before each object).
func leadingComments(body []byte) []byte {
	n := 0
	for n < len(body) {
		end := len(body)
		if nl := bytes.IndexByte(body[n:], '\n'); nl >= 0 {
			end = n + nl + 1
		}
		line := bytes.TrimSpace(body[n:end])
		if len(line) > 0 && line[0] != '#' {
			break
		}
		n = end
	}
	return body[:n]
}

// decodeObject is the Kubernetes object of a document's content, or nil
// when it holds none (comments only, not an object, not YAML: Helm
// judges those as it would without a post-renderer). Numbers decode as
// the apiserver's answers do (integers as int64).
func decodeObject(body []byte) *unstructured.Unstructured {
	j, err := yaml.YAMLToJSON(body)
	if err != nil || len(bytes.TrimSpace(j)) == 0 || string(j) == "null" {
		return nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil || u.GetKind() == "" || u.GetName() == "" {
		return nil
	}
	return u
}

// document returns doc as Helm should apply it, and the note for
// standard error: doc itself when its object is not on the cluster or
// nothing of it is left to another manager; else the object without the
// yielded fields (or with their live values), after doc's marker line
// and leading comments.
func (r *postrenderer) document(ctx context.Context, doc []byte) ([]byte, string, error) {
	marker, body := splitMarker(doc)
	obj := decodeObject(body)
	if obj == nil {
		return doc, "", nil
	}
	live, ref, err := r.get(ctx, obj)
	if err != nil || live == nil {
		return doc, "", err
	}
	out, yielded, err := r.applier.YieldFields(live, obj, r.manager, r.yieldsTo)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", ref, err)
	}
	if len(yielded) == 0 {
		return doc, "", nil
	}
	note := yieldNote(ref, yielded)
	switch {
	case r.keepsLiveValues(obj):
		if out, err = r.applier.WithLiveValues(live, obj, yielded); err != nil {
			return nil, "", fmt.Errorf("%s: %w", ref, err)
		}
	case r.keepLiveValues:
		note += ref + ": " + secretNotKept + "\n"
	}
	b, err := yaml.Marshal(out.Object)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", ref, err)
	}
	return bytes.Join([][]byte{marker, leadingComments(body), b}, nil), note, nil
}

// secretNotKept is the note of a Secret whose yielded fields
// --keep-live-values leaves out: it names no value.
const secretNotKept = "--keep-live-values gives a Secret no live values (Helm records the manifests in the release): the fields above are left out"

// keepsLiveValues reports whether the yielded fields of obj get their
// live values: with --keep-live-values, for any object but a Secret. A
// Secret's live values would go into the manifests Helm records in the
// release (a Secret of the release's namespace by default, or a
// ConfigMap or an SQL table, and what helm get manifest prints): whoever
// may read the release would read them, though they need not be allowed
// to read the Secret. Its yielded fields are left out, as without the
// flag.
func (r *postrenderer) keepsLiveValues(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return r.keepLiveValues && (gvk.Group != "" || gvk.Kind != "Secret")
}

// get reads obj's live copy with one GET: nil when it does not exist,
// or when its kind is not served (a CRD the same release installs). It
// returns obj's reference for messages ("Deployment web/app").
func (r *postrenderer) get(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, string, error) {
	gvk := obj.GroupVersionKind()
	key := client.ObjectKey{Name: obj.GetName()}
	ref := gvk.Kind + " " + key.Name
	mapping, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return nil, ref, nil
	}
	if err != nil {
		return nil, ref, fmt.Errorf("%s: %w", ref, err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		key.Namespace = obj.GetNamespace()
		if key.Namespace == "" {
			key.Namespace = r.namespace
		}
		ref = gvk.Kind + " " + key.Namespace + "/" + key.Name
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	err = r.client.Get(ctx, key, live)
	if apierrors.IsNotFound(err) {
		return nil, ref, nil
	}
	if err != nil {
		return nil, ref, fmt.Errorf("read %s: %w", ref, err)
	}
	return live, ref, nil
}

// yieldNote is one line per manager: the object, the manager (and the
// fieldops object behind it) and the paths left to it. Paths only,
// never values: a Secret's data must not reach a CI log.
func yieldNote(ref string, yielded []ownershipcore.Yielded) string {
	var b strings.Builder
	for _, y := range yielded {
		fmt.Fprintf(&b, "%s: left to %s: %s\n", ref, ownershipcore.DescribeManager(y.Manager), strings.Join(ownershipcore.FormatSet(y.Fields), ", "))
	}
	return b.String()
}
