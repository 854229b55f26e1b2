package ownershipcore

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// PreviousOwners returns, for every managed fields entry of live other than
// manager's, the fields of intent it owns: what must be recorded before
// manager first writes them, so that HandBack can return them.
func PreviousOwners(live *unstructured.Unstructured, intent *fieldpath.Set, manager string) (ManagedFields, error) {
	owners, err := Owners(live)
	if err != nil {
		return nil, err
	}
	return owners.OwnersOf(intent, manager), nil
}

// MergeOwners adds entries to recorded: fields of an entry with the same
// ManagerKey are united, other entries appended.
func MergeOwners(recorded, entries ManagedFields) ManagedFields {
	out := append(ManagedFields{}, recorded...)
	for _, e := range entries {
		found := false
		for i := range out {
			if out[i].ManagerKey == e.ManagerKey {
				out[i].Fields = out[i].Fields.Union(e.Fields)
				found = true
				break
			}
		}
		if !found {
			out = append(out, e)
		}
	}
	return out
}

// HandBackPlan computes the managed fields after handing back: each field
// manager still owns (Apply, main resource) that an entry of previous owned
// before is moved into that entry (same manager, operation, apiVersion and
// subresource; recreated if it vanished); manager keeps only the rest.
// Values are untouched. It returns the new entries and the moved fields;
// nothing to move returns an empty set.
func HandBackPlan(current ManagedFields, manager string, previous ManagedFields) (ManagedFields, *fieldpath.Set) {
	moved := fieldpath.NewSet()
	ours := current.Applied(manager)
	if ours == nil {
		return current, moved
	}
	out := make(ManagedFields, len(current))
	for i, e := range current {
		out[i] = Entry{ManagerKey: e.ManagerKey, Time: e.Time, Fields: e.Fields.Copy()}
	}
	oursIdx := -1
	for i := range out {
		if out[i].Manager == manager && out[i].Operation == metav1.ManagedFieldsOperationApply && out[i].Subresource == "" {
			oursIdx = i
		}
	}
	for _, prev := range previous {
		back := ours.Fields.Intersection(prev.Fields)
		if back.Empty() {
			continue
		}
		moved = moved.Union(back)
		idx := -1
		for i := range out {
			if sameEntry(out[i].ManagerKey, prev.ManagerKey) {
				idx = i
				break
			}
		}
		if idx < 0 {
			out = append(out, Entry{ManagerKey: prev.ManagerKey, Time: prev.Time, Fields: fieldpath.NewSet()})
			idx = len(out) - 1
		}
		out[idx].Fields = out[idx].Fields.Union(back)
	}
	out[oursIdx].Fields = out[oursIdx].Fields.Difference(moved)
	return out, moved
}

// sameEntry matches entries as the apiserver keys them: manager, operation
// and subresource, plus apiVersion for Update entries.
func sameEntry(a, b ManagerKey) bool {
	if a.Manager != b.Manager || a.Operation != b.Operation || a.Subresource != b.Subresource {
		return false
	}
	return a.Operation == metav1.ManagedFieldsOperationApply || a.APIVersion == b.APIVersion
}

// HandBack moves every field manager still owns on obj back to the entry
// that owned it before (HandBackPlan), with one JSON patch of
// /metadata/managedFields guarded by a test of /metadata/resourceVersion.
// On a stale resourceVersion it re-reads through APIReader and recomputes; the
// operation is idempotent, so a retry after a crash hands nothing back
// twice. obj needs apiVersion, kind, name and namespace. It returns the
// fields moved. See the SSA docs, "Transferring ownership".
func (a *Applier) HandBack(ctx context.Context, obj *unstructured.Unstructured, manager string, previous ManagedFields) (*fieldpath.Set, error) {
	var moved *fieldpath.Set
	err := retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsInvalid(err)
	}, func() error {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(obj.GroupVersionKind())
		if err := a.fresh().Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
			return err
		}
		current, err := Owners(live)
		if err != nil {
			return err
		}
		var next ManagedFields
		next, moved = HandBackPlan(current, manager, previous)
		if moved.Empty() {
			return nil
		}
		entries, err := next.Encode()
		if err != nil {
			return err
		}
		patch, err := json.Marshal([]map[string]interface{}{
			{"op": "test", "path": "/metadata/resourceVersion", "value": live.GetResourceVersion()},
			{"op": "replace", "path": "/metadata/managedFields", "value": entries},
		})
		if err != nil {
			return err
		}
		return a.Client.Patch(ctx, live, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(manager))
	})
	if err != nil {
		return nil, fmt.Errorf("hand back fields of %s: %w", describe(obj), err)
	}
	return moved, nil
}

// Relinquish applies an empty intent under manager: the apiserver removes
// the fields only manager owned and keeps the shared ones, and manager's
// Apply entry goes away (SSA docs, "Field management": a field removed from
// an applied configuration is deleted unless another manager owns it). It
// sends nothing when manager has no Apply entry on obj, read through
// APIReader. obj needs
// apiVersion, kind, name and namespace.
func (a *Applier) Relinquish(ctx context.Context, obj *unstructured.Unstructured, manager string) (Result, error) {
	live, err := a.get(ctx, a.fresh(), obj)
	if err != nil || live == nil {
		return Result{Action: ActionUnchanged, Object: live}, err
	}
	owners, err := Owners(live)
	if err != nil {
		return Result{}, err
	}
	if owners.Applied(manager) == nil {
		return Result{Action: ActionUnchanged, Object: live}, nil
	}
	empty := &unstructured.Unstructured{}
	empty.SetGroupVersionKind(obj.GroupVersionKind())
	empty.SetName(obj.GetName())
	empty.SetNamespace(obj.GetNamespace())
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(empty), client.FieldOwner(manager)); err != nil {
		return Result{}, fmt.Errorf("relinquish %s: %w", describe(obj), err)
	}
	return Result{Action: ActionConfigured, Object: empty}, nil
}
