/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// The legacy path, taken when the ServerSideApply gate is off: what
// operators did before Server-Side Apply (Strimzi's ResourceDiff, and many
// more). Read the live object, compute a JSON patch (RFC 6902) from it to
// the desired object, leave out a built-in list of ignorable paths, and
// send the patch under the workload's field manager (an Update entry).
//
// Known limits, the reasons the ServerSideApply gate exists:
//   - The workload claims the whole of metadata.labels and
//     metadata.annotations: a label or annotation another actor adds is
//     removed. A mutating webhook that adds them back on every write
//     (Kyverno's policies.kyverno.io/last-applied-patches, Strimzi issue
//     #6938) makes the path loop; it rechecks every legacyRecheck.
//   - A field the apiserver defaults is not in the desired object, so
//     removals outside metadata are ignored: a field the workload stops
//     setting stays, with its last value.
//   - There is no shared-object semantics: a relinquished object keeps the
//     values this workload set.

// legacyPath is the legacy path's diff and write. fields is the
// manager's Applier, whose schema removes the ignored fields from both
// sides of the diff; the writes go through the Applier each call is given
// (the workload's account's).
type legacyPath struct{ fields *ownershipcore.Applier }

// legacyServerFields are metadata fields the apiserver or other
// controllers own; the diff never touches them.
var legacyServerFields = []string{"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences", "finalizers", "generateName"}

// legacyComparable strips what the legacy diff ignores: server fields,
// status, and ignore (removed with the schema, so list items are matched
// by their keys).
func (lp legacyPath) legacyComparable(u *unstructured.Unstructured, ignore *fieldset.Set) (*unstructured.Unstructured, error) {
	out := u.DeepCopy()
	for _, f := range legacyServerFields {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	delete(out.Object, "status")
	if ignore != nil && !ignore.Empty() {
		return lp.fields.RemoveFields(out, ignore)
	}
	return out, nil
}

// legacyOps returns the JSON patch from live to desired, restricted as the
// legacy path does: every operation under metadata.labels and
// metadata.annotations; elsewhere in metadata none; outside metadata no
// removals (the apiserver's defaults).
func (lp legacyPath) legacyOps(live, desired *unstructured.Unstructured, ignore *fieldset.Set) ([]jsonpatch.Operation, error) {
	l, err := lp.legacyComparable(live, ignore)
	if err != nil {
		return nil, err
	}
	d, err := lp.legacyComparable(desired, ignore)
	if err != nil {
		return nil, err
	}
	lb, err := json.Marshal(l.Object)
	if err != nil {
		return nil, err
	}
	db, err := json.Marshal(d.Object)
	if err != nil {
		return nil, err
	}
	ops, err := jsonpatch.CreatePatch(lb, db)
	if err != nil {
		return nil, fmt.Errorf("json diff of %s %s: %w", live.GetKind(), live.GetName(), err)
	}
	return filterLegacyOps(ops), nil
}

// filterLegacyOps keeps the operations the legacy path sends.
func filterLegacyOps(ops []jsonpatch.Operation) []jsonpatch.Operation {
	var out []jsonpatch.Operation
	for _, op := range ops {
		switch {
		case op.Path == "/metadata/labels" || strings.HasPrefix(op.Path, "/metadata/labels/"),
			op.Path == "/metadata/annotations" || strings.HasPrefix(op.Path, "/metadata/annotations/"):
			out = append(out, op)
		case op.Path == "/metadata" || strings.HasPrefix(op.Path, "/metadata/"):
		case op.Operation == "remove":
		default:
			out = append(out, op)
		}
	}
	return out
}

// applyLegacy creates the object, or patches it when the diff is not
// empty; ignoreFor gives the paths to leave out, for the live object (or
// desired, when there is none). It returns the action, the object after the write, and the paths
// that still differ after the patch (a loop in the making).
func (lp legacyPath) applyLegacy(ctx context.Context, applier *ownershipcore.Applier, desired *unstructured.Unstructured, manager string, ignoreFor func(*unstructured.Unstructured) *fieldset.Set) (ownershipcore.Action, *unstructured.Unstructured, []string, error) {
	live, err := applier.Get(ctx, desired)
	if err != nil {
		return "", nil, nil, err
	}
	subject := live
	if subject == nil {
		subject = desired
	}
	ignore := ignoreFor(subject)
	if live == nil {
		obj, err := lp.legacyComparable(desired, ignore)
		if err != nil {
			return "", nil, nil, err
		}
		if err := applier.Create(ctx, obj, manager); err != nil {
			return "", nil, nil, err
		}
		return ownershipcore.ActionCreated, obj, nil, nil
	}
	ops, err := lp.legacyOps(live, desired, ignore)
	if err != nil || len(ops) == 0 {
		return ownershipcore.ActionUnchanged, live, nil, err
	}
	if live, err = applier.Patch(ctx, live, ops, manager); err != nil {
		return "", nil, nil, err
	}
	rest, err := lp.legacyOps(live, desired, ignore)
	if err != nil {
		return "", nil, nil, err
	}
	var paths []string
	for _, op := range rest {
		paths = append(paths, op.Operation+" "+op.Path)
	}
	return ownershipcore.ActionConfigured, live, paths, nil
}
