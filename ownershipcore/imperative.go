/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"context"
	"encoding/json"
	"fmt"

	"gomodules.xyz/jsonpatch/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Create creates obj with an imperative request by manager, as a
// client-side tool does: the apiserver records every field it sets in
// manager's Update entry (SSA docs, "Field management": a create or an
// update, unlike an apply, is recorded with operation Update). A create
// needs no guard: the apiserver refuses it when the name is taken (409
// AlreadyExists). obj is replaced by the apiserver's answer.
func (a *Applier) Create(ctx context.Context, obj *unstructured.Unstructured, manager string) error {
	if err := a.Client.Create(ctx, obj, client.FieldOwner(manager)); err != nil {
		return fmt.Errorf("create %s: %w", describe(obj), err)
	}
	return nil
}

// Patch sends ops (RFC 6902 operations on live) in one JSON patch by
// manager, guarded by tests of live's UID and resourceVersion (the guards
// of Commit): an imperative update, whose managed fields the apiserver
// computes as for any client-side write (the fields the patch changes
// become manager's, in its Update entry). Unlike Commit it sets no managed
// fields and predicts nothing: it is the write of a path that keeps
// client-side behaviour (a ManagedWorkload with the ServerSideApply gate
// off). It returns the apiserver's answer; ErrStale (wrapped) when live
// is no longer the stored object (changed, replaced or deleted).
func (a *Applier) Patch(ctx context.Context, live *unstructured.Unstructured, ops []jsonpatch.Operation, manager string) (*unstructured.Unstructured, error) {
	body := make([]jsonpatch.Operation, 0, len(ops)+2)
	for _, g := range guards(live) {
		body = append(body, jsonpatch.Operation{Operation: g["op"].(string), Path: g["path"].(string), Value: g["value"]})
	}
	// A slice of Operation, so that its MarshalJSON (pointer receiver)
	// sends an add or replace of null as "value": null.
	patch, err := json.Marshal(append(body, ops...))
	if err != nil {
		return nil, err
	}
	answer := live.DeepCopy()
	if err := a.Client.Patch(ctx, answer, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(manager)); err != nil {
		if apierrors.IsNotFound(err) || isTestFailed(err) || apierrors.IsConflict(err) {
			return nil, fmt.Errorf("patch %s: %w: %v", describe(live), ErrStale, err)
		}
		return nil, fmt.Errorf("patch %s: %w", describe(live), err)
	}
	return answer, nil
}
