package ownershipcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// mergeOwners adds entries to recorded: fields of an entry with the same
// ManagerKey are united, other entries appended.
func mergeOwners(recorded, entries ManagedFields) ManagedFields {
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
// before, and that entry does not own now, is moved into that entry (same
// manager, operation, apiVersion and subresource; recreated if it
// vanished); manager keeps only the rest. A field the previous owner still
// shares with manager (both applied the same value) is left as it is: the
// relinquish that follows leaves it with its owner.
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
		idx := -1
		for i := range out {
			if sameEntry(out[i].ManagerKey, prev.ManagerKey) {
				idx = i
				break
			}
		}
		if idx >= 0 {
			// Fields the previous owner still shares with us are not
			// taken: they need no hand-back (the relinquish that follows
			// leaves them with it).
			back = back.Difference(out[idx].Fields)
		}
		if back.Empty() {
			continue
		}
		moved = moved.Union(back)
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

// ReleasePlan computes the managed fields after manager lets fields go
// without a new owner: its Apply entry (main resource) loses them, no
// other entry changes, values are untouched. It returns the new entries and
// the fields released (those of fields manager owned, with the list items
// and maps of manager that hold them).
func ReleasePlan(current ManagedFields, manager string, fields *fieldpath.Set) (ManagedFields, *fieldpath.Set) {
	ours := current.Applied(manager)
	if ours == nil {
		return current, fieldpath.NewSet()
	}
	released := ours.Fields.Intersection(fields)
	if released.Empty() {
		return current, released
	}
	// A released field stays only with the list items and maps that hold
	// it: those manager owns go too, with an item's key fields, or the
	// relinquish that follows removes them, and the field with them
	// (test/invariants seed 9100650).
	released = released.Union(holders(released, ours.Fields))
	out := make(ManagedFields, len(current))
	for i, e := range current {
		out[i] = Entry{ManagerKey: e.ManagerKey, Time: e.Time, Fields: e.Fields}
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			out[i].Fields = e.Fields.Difference(released)
		}
	}
	return out, released
}

// HandBack moves every field manager still owns on obj back to the entry
// that owned it before (HandBackPlan). See editManagedFields for the
// request, its guards and its retries. It returns the fields moved. See the
// SSA docs, "Transferring ownership".
func (a *Applier) HandBack(ctx context.Context, obj *unstructured.Unstructured, manager string, previous ManagedFields) (*fieldpath.Set, error) {
	moved, _, err := a.HandBackFrom(ctx, obj, nil, manager, previous)
	return moved, err
}

// HandBackFrom is HandBack starting from live, obj as last read (from a
// cache, say; nil: read through APIReader): the first patch is guarded by
// live's UID and resourceVersion, so a stale live costs one refused patch
// and a fresh read, never a wrong edit, and a current one saves the read
// (issue 11: hand-back in three requests). It also returns the object after
// the patch, the apiserver's answer, or nil when nothing was sent.
func (a *Applier) HandBackFrom(ctx context.Context, obj, live *unstructured.Unstructured, manager string, previous ManagedFields) (*fieldpath.Set, *unstructured.Unstructured, error) {
	moved, after, err := a.editManagedFields(ctx, obj, live, manager, func(current ManagedFields) (ManagedFields, *fieldpath.Set) {
		return HandBackPlan(current, manager, previous)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("hand back fields of %s: %w", describe(obj), err)
	}
	return moved, after, nil
}

// Release drops fields from manager's Apply entry on obj without giving
// them to anyone (ReleasePlan): the values stay, unowned, and a later
// empty apply by manager no longer removes them. This is how a FieldPatch
// with deletionPolicy Relinquish or Orphan lets go of fields it took. See
// editManagedFields for the request. It returns the fields released.
func (a *Applier) Release(ctx context.Context, obj *unstructured.Unstructured, manager string, fields *fieldpath.Set) (*fieldpath.Set, error) {
	released, _, err := a.ReleaseFrom(ctx, obj, nil, manager, fields)
	return released, err
}

// ReleaseFrom is Release starting from live, as HandBackFrom.
func (a *Applier) ReleaseFrom(ctx context.Context, obj, live *unstructured.Unstructured, manager string, fields *fieldpath.Set) (*fieldpath.Set, *unstructured.Unstructured, error) {
	released, after, err := a.editManagedFields(ctx, obj, live, manager, func(current ManagedFields) (ManagedFields, *fieldpath.Set) {
		return ReleasePlan(current, manager, fields)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("release fields of %s: %w", describe(obj), err)
	}
	return released, after, nil
}

// editManagedFields rewrites obj's managed fields as plan says, with one
// JSON patch of /metadata/managedFields guarded by a test of
// /metadata/resourceVersion (and of /metadata/uid when obj carries a UID,
// so a replaced object is never edited). On a stale resourceVersion it
// re-reads through APIReader and recomputes; plans are idempotent, so a
// retry after a crash moves nothing twice. An empty plan sends nothing.
// obj needs apiVersion, kind, name and namespace; a missing object is
// returned as the apiserver's NotFound.
func (a *Applier) editManagedFields(ctx context.Context, obj, first *unstructured.Unstructured, manager string, plan func(ManagedFields) (ManagedFields, *fieldpath.Set)) (*fieldpath.Set, *unstructured.Unstructured, error) {
	var changed *fieldpath.Set
	var after *unstructured.Unstructured
	err := retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsInvalid(err)
	}, func() error {
		live := first
		first = nil // a retry reads fresh
		if live == nil || (obj.GetUID() != "" && live.GetUID() != obj.GetUID()) {
			var err error
			if live, err = a.fresh(ctx, obj); err != nil {
				return err
			}
		} else {
			live = live.DeepCopy()
		}
		current, err := Owners(live)
		if err != nil {
			return err
		}
		var next ManagedFields
		next, changed = plan(current)
		if changed.Empty() {
			return nil
		}
		entries, err := next.Encode()
		if err != nil {
			return err
		}
		var value interface{} = entries
		if len(entries) == 0 {
			// An empty list leaves managedFields as they are; one empty
			// entry resets them (SSA docs, "Clearing managedFields").
			value = []map[string]interface{}{{}}
		}
		ops := guards(live)
		ops = append(ops, map[string]interface{}{"op": "replace", "path": "/metadata/managedFields", "value": value})
		patch, err := json.Marshal(ops)
		if err != nil {
			return err
		}
		if err := a.Client.Patch(ctx, live, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(manager)); err != nil {
			return err
		}
		after = live
		return nil
	})
	return changed, after, err
}

// guards are the JSON patch tests that make a patch apply only to the
// object as read: same resourceVersion, same UID.
func guards(live *unstructured.Unstructured) []map[string]interface{} {
	return []map[string]interface{}{
		{"op": "test", "path": "/metadata/uid", "value": string(live.GetUID())},
		{"op": "test", "path": "/metadata/resourceVersion", "value": live.GetResourceVersion()},
	}
}

// fresh reads obj through APIReader. When obj carries a UID and the live
// object has another one (it was deleted and recreated), it returns a
// NotFound: the object fieldops wrote to is gone.
func (a *Applier) fresh(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	if err := a.freshReader().Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		return nil, err
	}
	if uid := obj.GetUID(); uid != "" && live.GetUID() != uid {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: obj.GroupVersionKind().Group, Resource: obj.GetKind()}, obj.GetName())
	}
	return live, nil
}

// Relinquish applies an empty intent under manager: the apiserver removes
// the fields only manager owned and keeps the shared ones, and manager's
// Apply entry goes away (SSA docs, "Field management": a field removed from
// an applied configuration is deleted unless another manager owns it).
// Fields manager took from others and must keep their values are Released
// or handed back first.
//
// The result is checked: the object is read again, and every field only
// manager owned that the apiserver left (seen with CRDs served in two
// versions, where an Update entry of the other version keeps unowned list
// entries) is removed with a patch guarded by resourceVersion and UID;
// Result.Removed lists them. An entry of manager left after that is an
// error: success is never claimed that did not happen.
//
// It sends nothing when manager has no Apply entry on obj, read through
// APIReader. obj needs apiVersion, kind, name and namespace; when it
// carries a UID, an object with another UID is treated as gone (the empty
// apply carries the UID too, so a deleted object is never recreated).
func (a *Applier) Relinquish(ctx context.Context, obj *unstructured.Unstructured, manager string) (Result, error) {
	return a.relinquish(ctx, obj, nil, manager, nil)
}

// RelinquishFrom is Relinquish from live, a copy of obj (an answer of the
// apiserver, a read through APIReader, or a cached copy), instead of a
// read of its own. The empty apply carries live's resourceVersion, so it
// is applied to the very object it was computed from: a copy the object
// moved on from (a stale cache, another writer) costs a refused apply
// (409) and a fresh read, never a field of another manager. Its check
// reads the empty apply's answer, so a relinquish from an up-to-date copy
// costs one request, and one more only when leftovers are removed.
func (a *Applier) RelinquishFrom(ctx context.Context, obj, live *unstructured.Unstructured, manager string) (Result, error) {
	return a.relinquish(ctx, obj, live, manager, nil)
}

func (a *Applier) relinquish(ctx context.Context, obj, live *unstructured.Unstructured, manager string, expect *fieldpath.Set) (Result, error) {
	var res Result
	// A copy that is not the apiserver's current object (a cached one, or
	// one another writer moved on from) costs a refused apply and a
	// fresh read: the empty apply carries its resourceVersion.
	err := retry.OnError(retry.DefaultRetry, isStale, func() error {
		var err error
		res, err = a.relinquishOnce(ctx, obj, live, manager, expect)
		live = nil // a retry reads fresh
		return err
	})
	if err != nil {
		return res, fmt.Errorf("relinquish %s: %w", describe(obj), err)
	}
	return res, nil
}

// staleError is an empty apply refused because the object moved on from
// the copy it was computed from.
type staleError struct{ err error }

func (e staleError) Error() string { return e.err.Error() }
func (e staleError) Unwrap() error { return e.err }

func isStale(err error) bool {
	var s staleError
	return errors.As(err, &s)
}

// relinquishOnce is one attempt of relinquish from live (nil: read fresh).
func (a *Applier) relinquishOnce(ctx context.Context, obj, live *unstructured.Unstructured, manager string, expect *fieldpath.Set) (Result, error) {
	if live == nil || (obj.GetUID() != "" && live.GetUID() != obj.GetUID()) {
		var err error
		live, err = a.fresh(ctx, obj)
		if apierrors.IsNotFound(err) {
			return Result{Action: ActionUnchanged}, nil
		}
		if err != nil {
			return Result{}, err
		}
	}
	owners, err := Owners(live)
	if err != nil {
		return Result{}, err
	}
	ours := owners.Applied(manager)
	if ours == nil {
		return Result{Action: ActionUnchanged, Object: live}, nil
	}
	ref := obj.DeepCopy()
	ref.SetUID(live.GetUID())
	// A list item or map only we own that holds another manager's field
	// would be removed with that field: hand it (and an item's key fields)
	// first to the managers whose fields it holds, so the empty apply
	// leaves it. Released to nobody, it would not be enough: the
	// apiserver's empty apply still removes an item nobody owns when the
	// applier owned a field in it, another manager's too (an env var's
	// value shared with an Update of "ops"; test/invariants seed 2000201).
	others := owners.others(manager)
	if shield := holders(others, ours.Fields); !shield.Empty() {
		var handed *unstructured.Unstructured
		if _, handed, err = a.HandBackFrom(ctx, ref, live, manager, holderOwners(owners, manager, shield)); err != nil {
			return Result{}, err
		}
		if handed == nil || handed.GetResourceVersion() == "" {
			return Result{}, staleError{fmt.Errorf("no answer to the hand-off of %s", describe(obj))}
		}
		live = handed
		ours = &Entry{ManagerKey: ours.ManagerKey, Fields: ours.Fields.Difference(shield)}
	}
	alone := ours.Fields.Difference(others).Leaves()
	if expect != nil {
		alone = alone.Union(expect)
	}
	if otherVersionEntries(live, obj.GetAPIVersion()) && a.sameFieldPaths(ctx, live, obj.GetAPIVersion()) {
		// With entries of several versions the apiserver's empty apply
		// also removes fields owned only by entries of a version other
		// than the last it converts to (structured-merge-diff's
		// addBackOwnedItems restores owned items one version at a time:
		// kubernetes-sigs/structured-merge-diff PR 204; test/invariants
		// seeds 8100545 and 7201807, an Update entry's value inside an
		// item another version's entries hold). The fields ours alone go
		// in one guarded JSON patch (list items whole, emptied maps and
		// lists others own kept), then our entry in one guarded patch of
		// managed fields; values stay. Refused as invalid (a required
		// field), ours stay, unowned, as after a refused empty apply.
		if !alone.Empty() {
			cleaned := live.DeepCopy()
			gone := ours.Fields.Difference(others)
			if expect != nil {
				gone = gone.Union(expect)
			}
			err := a.removeFields(ctx, cleaned, gone, others, manager)
			switch {
			case apierrors.IsConflict(err):
				return Result{}, staleError{err}
			case apierrors.IsInvalid(err):
				kept, rerr := a.Release(ctx, ref, manager, ours.Fields)
				if rerr != nil {
					return Result{}, rerr
				}
				return Result{Action: ActionConfigured, Kept: kept}, nil
			case err != nil:
				return Result{}, err
			}
			live = cleaned
		}
		_, after, err := a.editManagedFields(ctx, ref, live, manager, dropPlan(manager))
		if err != nil {
			return Result{}, err
		}
		if after == nil {
			after = live
		}
		return Result{Action: ActionConfigured, Object: after}, nil
	}
	empty := &unstructured.Unstructured{}
	empty.SetGroupVersionKind(obj.GroupVersionKind())
	empty.SetName(obj.GetName())
	empty.SetNamespace(obj.GetNamespace())
	empty.SetUID(live.GetUID())
	// Computed from live: applied to live only (SSA docs: a
	// resourceVersion in an apply configuration is a precondition).
	empty.SetResourceVersion(live.GetResourceVersion())
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(empty), client.FieldOwner(manager)); err != nil {
		if isUIDMismatch(err) || apierrors.IsNotFound(err) {
			return Result{Action: ActionUnchanged}, nil
		}
		if apierrors.IsConflict(err) { // an empty apply has no field conflicts
			return Result{}, staleError{err}
		}
		if apierrors.IsInvalid(err) {
			// structured-merge-diff leaves a map whose last field the
			// empty apply removes as null, which a custom resource's
			// schema refuses: the same removal, computed locally with
			// that map kept empty, goes in one guarded patch instead.
			current, oerr := Owners(live)
			if oerr != nil {
				return Result{}, oerr
			}
			gb, perr := a.onePatch(ctx, ref, live, current, manager)
			if perr == nil {
				return Result{Action: ActionConfigured, Removed: gb.Removed, Object: gb.Object}, nil
			}
			if !errors.Is(perr, ErrNoOneStep) {
				return Result{}, perr
			}
			// The local result could not be checked (entries of another
			// version, say): the fields we own alone go first, in a
			// guarded JSON patch that keeps emptied maps, and the empty
			// apply is tried again from a fresh read. Which fields are
			// ours alone is known only when the versions of the entries
			// share field paths (sameFieldPaths); else ours stay, unowned.
			if !alone.Empty() && a.sameFieldPaths(ctx, live, obj.GetAPIVersion()) {
				// List items we own alone go whole (not field by field,
				// which would leave an item without its key).
				cleaned := live.DeepCopy()
				rerr := a.removeFields(ctx, cleaned, ours.Fields.Difference(others), others, manager)
				if rerr == nil || apierrors.IsConflict(rerr) {
					return Result{}, staleError{fmt.Errorf("removed the fields of %s alone before its empty apply: %v", manager, rerr)}
				}
				if !apierrors.IsInvalid(rerr) {
					return Result{}, rerr
				}
			}
			// Without our fields the object would be invalid (a required
			// field): they stay, unowned, and the caller says so.
			kept, rerr := a.Release(ctx, ref, manager, ours.Fields)
			if rerr != nil {
				return Result{}, rerr
			}
			return Result{Action: ActionConfigured, Kept: kept}, nil
		}
		return Result{}, err
	}
	res := Result{Action: ActionConfigured, Object: empty}
	removed, after, err := a.removeLeftovers(ctx, obj, empty, live.GetUID(), manager, alone)
	if err != nil {
		return res, err
	}
	res.Removed, res.Object = removed, after
	return res, nil
}

// removeFields removes fields from live in one JSON patch guarded by its
// UID and resourceVersion: each top-level field holding one is replaced by
// its value without them, under manager; live becomes the answer. A map
// they leave empty that a manager of others owns stays, empty (SSA would
// keep it; a CRD refuses it null). The removed fields leave every managed
// fields entry with them.
func (a *Applier) removeFields(ctx context.Context, live *unstructured.Unstructured, fields, others *fieldpath.Set, manager string) error {
	cleaned, err := a.RemoveFields(live, fields)
	if err != nil {
		return err
	}
	emptyNullMaps(cleaned.Object, live.Object)
	fields.Iterate(func(p fieldpath.Path) {
		if len(p) < 2 || !others.Has(p[:len(p)-1]) {
			return
		}
		var names []string
		for _, pe := range p[:len(p)-1] {
			if pe.FieldName == nil {
				return
			}
			names = append(names, *pe.FieldName)
		}
		if _, isMap := unstructuredField(live.Object, names).(map[string]interface{}); !isMap {
			return
		}
		if v, found, _ := unstructured.NestedFieldNoCopy(cleaned.Object, names...); !found || v == nil {
			_ = unstructured.SetNestedField(cleaned.Object, map[string]interface{}{}, names...)
		}
	})
	ops := guards(live)
	for _, top := range topPaths(fields) {
		v, found, _ := unstructured.NestedFieldNoCopy(cleaned.Object, top...)
		ptr := jsonPointer(top...)
		if found {
			ops = append(ops, map[string]interface{}{"op": "replace", "path": ptr, "value": v})
		} else {
			ops = append(ops, map[string]interface{}{"op": "remove", "path": ptr})
		}
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	return a.Client.Patch(ctx, live, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(manager))
}

// unstructuredField is the value at names in obj, or nil.
func unstructuredField(obj map[string]interface{}, names []string) interface{} {
	v, _, _ := unstructured.NestedFieldNoCopy(obj, names...)
	return v
}

// holders returns the paths of ours that hold a path of others: list items
// and maps above another manager's field (removing them would remove that
// field), with the key fields of such list items. Releasing them before an
// empty apply keeps every other manager's field. A holder another manager
// owns too is left out: the empty apply cannot remove it (a container
// item both applied, with our env var in it), so releasing it would cost
// a request for nothing.
func holders(others, ours *fieldpath.Set) *fieldpath.Set {
	out := fieldpath.NewSet()
	others.Iterate(func(p fieldpath.Path) {
		for i := 1; i < len(p); i++ {
			prefix := p[:i]
			if !ours.Has(prefix) || others.Has(prefix) {
				continue
			}
			insertWithKeys(out, prefix, ours)
		}
	})
	return out
}

// insertWithKeys inserts path into out, with, when path is a list item,
// those of its key fields that from holds.
func insertWithKeys(out *fieldpath.Set, path fieldpath.Path, from *fieldpath.Set) {
	out.Insert(path.Copy())
	if last := path[len(path)-1]; last.Key != nil {
		for _, k := range *last.Key {
			name := k.Name
			if kp := append(path.Copy(), fieldpath.PathElement{FieldName: &name}); from.Has(kp) {
				out.Insert(kp)
			}
		}
	}
}

// holderOwners gives each path of shield (see holders) to the entries of
// owners, other than manager's, that own a field below it: the managers
// whose fields the list item or map holds. The key fields of a held list
// item go with it. Every holder has such an owner (holders finds them
// from those fields).
func holderOwners(owners ManagedFields, manager string, shield *fieldpath.Set) ManagedFields {
	var out ManagedFields
	for _, e := range owners {
		if e.Manager == manager {
			continue
		}
		held := fieldpath.NewSet()
		e.Fields.Iterate(func(p fieldpath.Path) {
			for i := 1; i < len(p); i++ {
				prefix := p[:i]
				if !shield.Has(prefix) {
					continue
				}
				insertWithKeys(held, prefix, shield)
			}
		})
		if !held.Empty() {
			out = append(out, Entry{ManagerKey: e.ManagerKey, Time: e.Time, Fields: held})
		}
	}
	return out
}

// others is the union of the fields of every entry but manager's.
func (m ManagedFields) others(manager string) *fieldpath.Set {
	out := fieldpath.NewSet()
	for _, e := range m {
		if e.Manager != manager {
			out = out.Union(e.Fields)
		}
	}
	return out
}

// removeLeftovers looks at the object after the empty apply (applied, the
// apply's answer; read again on a retry) and removes the fields of alone
// that are still there with no owner, then checks that manager has no
// entry left. It returns the fields removed and the object as last seen.
func (a *Applier) removeLeftovers(ctx context.Context, obj, applied *unstructured.Unstructured, uid types.UID, manager string, alone *fieldpath.Set) (*fieldpath.Set, *unstructured.Unstructured, error) {
	removed := fieldpath.NewSet()
	var after *unstructured.Unstructured
	ref := obj.DeepCopy()
	ref.SetUID(uid)
	first := applied
	if first != nil && (first.GetResourceVersion() == "" || first.GetUID() != uid) {
		first = nil
	}
	err := retry.OnError(retry.DefaultRetry, apierrors.IsConflict, func() error {
		live := first
		first = nil // a retry reads fresh
		if live == nil {
			var err error
			live, err = a.fresh(ctx, ref)
			if apierrors.IsNotFound(err) {
				after = nil
				return nil
			}
			if err != nil {
				return err
			}
		}
		after = live
		owners, err := Owners(live)
		if err != nil {
			return err
		}
		if e := owners.Applied(manager); e != nil && !e.Fields.Empty() {
			return fmt.Errorf("field manager %q still owns %d fields after an empty apply", manager, len(FormatSet(e.Fields)))
		}
		tv, err := a.Schema.ToTyped(live)
		if err != nil {
			return err
		}
		present, err := tv.ToFieldSet()
		if err != nil {
			return err
		}
		left := alone.Intersection(present).Difference(owners.others(""))
		if left.Empty() {
			return nil
		}
		if err := a.removeFields(ctx, live, left, owners.others(manager), manager); err != nil {
			return err
		}
		removed = removed.Union(left)
		after = live
		return nil
	})
	return removed, after, err
}

// topPaths returns the distinct subtrees, as field names, that hold the
// paths of set: the top-level field, or the second level under metadata
// (whose other fields a patch must not rewrite).
func topPaths(set *fieldpath.Set) [][]string {
	seen := map[string]bool{}
	var out [][]string
	set.Iterate(func(p fieldpath.Path) {
		var names []string
		for _, pe := range p {
			if pe.FieldName == nil {
				break
			}
			names = append(names, *pe.FieldName)
			if len(names) == 1 && names[0] != "metadata" || len(names) == 2 {
				break
			}
		}
		if len(names) == 0 || names[0] == "metadata" && len(names) < 2 {
			return
		}
		if k := strings.Join(names, "/"); !seen[k] {
			seen[k] = true
			out = append(out, names)
		}
	})
	return out
}
