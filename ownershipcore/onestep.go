package ownershipcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// ErrNoOneStep is returned by GiveBackFrom when it sent nothing because
// the give-back cannot be done in one request (see GiveBackFrom): the
// caller gives back in two steps (HandBackFrom or ReleaseFrom, then
// RelinquishFrom).
var ErrNoOneStep = errors.New("the give-back needs two steps")

// GiveBack is what GiveBackFrom did.
type GiveBack struct {
	// Moved are the fields plan moved (handed back or released).
	Moved *fieldpath.Set
	// Removed are the fields manager owned alone, removed with their
	// values.
	Removed *fieldpath.Set
	// Object is the apiserver's answer.
	Object *unstructured.Unstructured
}

// GiveBackFrom gives fields back and relinquishes the rest in one request
// (issue 11): plan rewrites the managed fields (HandBackPlan moves the
// fields manager took to their previous owners; ReleasePlan leaves them
// without an owner), then every field manager owns alone is removed, as
// an empty apply by manager would remove it (SSA docs, "Field management"),
// and manager's entry goes. What the empty apply would leave is computed
// locally with the apiserver's own field manager code from live (an
// up-to-date copy: the cache, or an answer), and sent as one JSON patch
// guarded by live's UID and resourceVersion that sets the new managed
// fields and removes those values (the apiserver keeps managed fields a
// request sets; a removed field leaves every set).
//
// It sends nothing and returns ErrNoOneStep when plan moves nothing (a
// relinquish alone is one request already), when manager would own a list
// item or map that holds another manager's field (see holders), when the
// local result is not exactly "the fields of manager alone removed, no
// other change", or when the apiserver refuses the patch (a stale copy, an
// object invalid without those fields): the two-step path handles all of
// these. An entry of manager the apiserver made from the patch (a removed
// field it defaulted again counts as an Update of manager's) is dropped in
// one more guarded patch; the defaulted value stays, as after an empty
// apply.
func (a *Applier) GiveBackFrom(ctx context.Context, obj, live *unstructured.Unstructured, manager string, plan func(ManagedFields) (ManagedFields, *fieldpath.Set)) (GiveBack, error) {
	if live == nil || live.GetResourceVersion() == "" || (obj.GetUID() != "" && live.GetUID() != obj.GetUID()) {
		return GiveBack{}, ErrNoOneStep
	}
	current, err := Owners(live)
	if err != nil {
		return GiveBack{}, err
	}
	next, moved := plan(current)
	if moved.Empty() || next.Applied(manager) == nil {
		return GiveBack{}, ErrNoOneStep
	}
	gb, err := a.onePatch(ctx, obj, live, next, manager)
	if err != nil {
		return gb, err
	}
	gb.Moved = moved
	return gb, nil
}

// onePatch sets live's managed fields to next and removes every field
// manager owns alone in next, as an empty apply by manager would, in one
// JSON patch guarded by live's UID and resourceVersion (see GiveBackFrom).
// It returns ErrNoOneStep, having sent nothing or a refused patch, when
// that cannot be done safely in one request. Moved is left empty.
func (a *Applier) onePatch(ctx context.Context, obj, live *unstructured.Unstructured, next ManagedFields, manager string) (GiveBack, error) {
	ours := next.Applied(manager)
	if ours == nil {
		return GiveBack{}, ErrNoOneStep
	}
	others := next.others(manager)
	if !holders(others, ours.Fields).Empty() {
		return GiveBack{}, ErrNoOneStep
	}
	out, alone, err := a.relinquished(live, next, manager)
	if err != nil {
		return GiveBack{}, fmt.Errorf("%w: %v", ErrNoOneStep, err)
	}
	ops, err := transformOps(live, out)
	if err != nil {
		return GiveBack{}, err
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return GiveBack{}, err
	}
	answer := live.DeepCopy()
	if err := a.Client.Patch(ctx, answer, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(manager)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			return GiveBack{}, fmt.Errorf("%w: %v", ErrNoOneStep, err)
		}
		if apierrors.IsNotFound(err) {
			return GiveBack{Moved: fieldpath.NewSet(), Removed: fieldpath.NewSet()}, nil
		}
		return GiveBack{}, fmt.Errorf("give back fields of %s: %w", describe(obj), err)
	}
	gb := GiveBack{Moved: fieldpath.NewSet(), Removed: alone, Object: answer}
	if HasManager(answer, manager) {
		// An entry of manager the apiserver made (a removed field it
		// defaulted again is an Update of ours): drop it, values stay.
		if _, answer, err = a.editManagedFields(ctx, obj, answer, manager, dropPlan(manager)); err != nil {
			return gb, fmt.Errorf("give back fields of %s: %w", describe(obj), err)
		}
		if answer != nil {
			gb.Object = answer
		}
	}
	// A removed field the apiserver defaulted again stays, as after an
	// empty apply; no leftover check is needed: the patch names every
	// field it removes, and the apiserver keeps nothing of it.
	return gb, nil
}

// relinquished computes, with the apiserver's field manager code, the
// object an empty apply by manager leaves when live's managed fields are
// entries: the fields manager owns alone removed, its entry gone. It
// checks the result: nothing but those fields removed, no value changed,
// every other entry as it was. It returns the object and the fields
// removed.
func (a *Applier) relinquished(live *unstructured.Unstructured, entries ManagedFields, manager string) (*unstructured.Unstructured, *fieldpath.Set, error) {
	encoded, err := entries.Encode()
	if err != nil {
		return nil, nil, err
	}
	staged := live.DeepCopy()
	staged.SetManagedFields(encoded)
	fm, err := a.Schema.FieldManager(live.GroupVersionKind())
	if err != nil {
		return nil, nil, err
	}
	empty := &unstructured.Unstructured{}
	empty.SetGroupVersionKind(live.GroupVersionKind())
	empty.SetName(live.GetName())
	empty.SetNamespace(live.GetNamespace())
	res, err := fm.Apply(staged, empty, manager, false)
	if err != nil {
		return nil, nil, err
	}
	out, ok := res.(*unstructured.Unstructured)
	if !ok {
		return nil, nil, fmt.Errorf("field manager returned %T", res)
	}
	// structured-merge-diff leaves a map whose last field it removed as
	// null, which a CRD's schema refuses (the apiserver's own empty apply
	// fails the same way): the map stays, empty.
	emptyNullMaps(out.Object, live.Object)
	after, err := Owners(out)
	if err != nil {
		return nil, nil, err
	}
	if HasManager(out, manager) {
		return nil, nil, fmt.Errorf("field manager %q keeps an entry", manager)
	}
	// The other entries stay as they are (the field manager may order
	// them anew).
	want := map[ManagerKey]*fieldpath.Set{}
	for _, e := range entries {
		if e.Manager != manager && !e.Fields.Empty() {
			want[e.ManagerKey] = e.Fields
		}
	}
	if len(want) != len(after) {
		return nil, nil, errors.New("the other entries changed")
	}
	for _, e := range after {
		if w, ok := want[e.ManagerKey]; !ok || !w.Equals(e.Fields) {
			return nil, nil, errors.New("the other entries changed")
		}
	}
	lt, err := a.Schema.ToTyped(&unstructured.Unstructured{Object: WithoutManagedFields(live.Object)})
	if err != nil {
		return nil, nil, err
	}
	ot, err := a.Schema.ToTyped(&unstructured.Unstructured{Object: WithoutManagedFields(out.Object)})
	if err != nil {
		return nil, nil, err
	}
	others := entries.others(manager)
	alone := entries.Applied(manager).Fields.Difference(others)
	// What may go: the fields of manager alone, and the lists and maps
	// above them they leave empty (an env list whose only item goes),
	// unless another manager owns that list or map (then it stays, empty).
	allowed := alone.Copy()
	alone.Iterate(func(p fieldpath.Path) {
		for i := 1; i < len(p); i++ {
			if prefix := p[:i]; !others.Has(prefix) {
				allowed.Insert(prefix.Copy())
			}
		}
	})
	// What goes, from the fields present before and after (Compare
	// misses a map left null where it held fields); a map emptied by the
	// removal is a path of its own after, a parent before.
	before, err := lt.ToFieldSet()
	if err != nil {
		return nil, nil, err
	}
	kept, err := ot.ToFieldSet()
	if err != nil {
		return nil, nil, err
	}
	gone := before.Difference(kept)
	if left := alone.Leaves().Difference(gone); !left.Empty() {
		return nil, nil, fmt.Errorf("the empty apply would keep fields of the manager alone: %v", left)
	}
	if !gone.Difference(allowed).Empty() || !kept.Difference(withParents(before)).Empty() {
		return nil, nil, fmt.Errorf("the empty apply would change more than the fields of the manager alone (gone besides them %v)", gone.Difference(allowed))
	}
	// And no value changes.
	cmp, err := lt.Compare(ot)
	if err != nil {
		return nil, nil, err
	}
	if !cmp.Added.Empty() || !cmp.Modified.Empty() {
		return nil, nil, fmt.Errorf("the empty apply would change values (added %v, modified %v)", cmp.Added, cmp.Modified)
	}
	// JSON patch would write a null as it is.
	if hasNull(WithoutManagedFields(out.Object)) {
		return nil, nil, errors.New("the empty apply would leave a null")
	}
	return out, gone, nil
}

// emptyNullMaps sets every null in out where before holds a map or a list
// to an empty one of the same kind (see nullMaps).
func emptyNullMaps(out, before map[string]interface{}) {
	nullMaps(out, before, "", func(parent map[string]interface{}, key, _ string, was interface{}) {
		if _, isList := was.([]interface{}); isList {
			parent[key] = []interface{}{}
			return
		}
		parent[key] = map[string]interface{}{}
	})
}

// emptiedMaps returns JSON patch operations (RFC 6902) that remove, from
// live, every key of each map that merged (the local result of an apply
// to live) leaves null: the keys the apply removes, all of them. Metadata
// and status are left out.
func emptiedMaps(live, merged map[string]interface{}) []map[string]interface{} {
	var ops []map[string]interface{}
	nullMaps(merged, live, "", func(_ map[string]interface{}, _, path string, was interface{}) {
		if strings.HasPrefix(path, "/metadata/") || strings.HasPrefix(path, "/status/") {
			return
		}
		if items, isList := was.([]interface{}); isList {
			// Last item first: each removal keeps the indexes before it.
			for i := len(items) - 1; i >= 0; i-- {
				ops = append(ops, map[string]interface{}{"op": "remove", "path": fmt.Sprintf("%s/%d", path, i)})
			}
			return
		}
		m, _ := was.(map[string]interface{})
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			ops = append(ops, map[string]interface{}{"op": "remove", "path": path + jsonPointer(n)})
		}
	})
	return ops
}

// nullMaps calls fn for every null in out where before holds a map or a
// list (structured-merge-diff leaves one so when its last key or item is
// removed, and a custom resource's schema refuses it: kubernetes/kubernetes
// issue 103011), with the map holding it in out, its key, its JSON pointer
// (prefix is out's) and before's map or list, in key order. It walks maps
// by key and lists of the same length by index (the lists and maps out and
// before share; a list that lost items is not walked).
func nullMaps(out, before map[string]interface{}, prefix string, fn func(parent map[string]interface{}, key, path string, was interface{})) {
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := prefix + jsonPointer(k)
		switch bv := before[k].(type) {
		case map[string]interface{}:
			if out[k] == nil {
				fn(out, k, path, bv)
			} else if ov, ok := out[k].(map[string]interface{}); ok {
				nullMaps(ov, bv, path, fn)
			}
		case []interface{}:
			if out[k] == nil {
				fn(out, k, path, bv)
				continue
			}
			ov, ok := out[k].([]interface{})
			if !ok || len(ov) != len(bv) {
				continue
			}
			for i := range ov {
				om, ok1 := ov[i].(map[string]interface{})
				bm, ok2 := bv[i].(map[string]interface{})
				if ok1 && ok2 {
					nullMaps(om, bm, fmt.Sprintf("%s/%d", path, i), fn)
				}
			}
		}
	}
}

// droppedMapKeys are the remove operations (RFC 6902) for the keys of maps
// on live that the apply of a new intent (its field set intent) by
// manager leaves empty: every key of the map is a field manager owns alone
// (no other entry, of any version, owns it) and intent no longer holds,
// while the map itself is another manager's. It is emptiedMaps worked out
// from ownership instead of the local result, for when that result cannot
// tell: with the map's owner an entry of another version, the local
// decision leaves the entry out and drops the map instead of leaving it
// null. Only maps reached through fields (no list item) are looked at;
// metadata and status are left alone. Keys come sorted.
func droppedMapKeys(live *unstructured.Unstructured, intent *fieldpath.Set, manager string) []map[string]interface{} {
	owners, err := Owners(live)
	if err != nil {
		return nil
	}
	ours := owners.Applied(manager)
	if ours == nil {
		return nil
	}
	dropped := ours.Fields.Difference(intent).Difference(owners.others(manager))
	type emptied struct{ names, keys []string } // a map's path, its dropped keys
	parents := map[string]*emptied{}            // by the map's JSON pointer
	dropped.Iterate(func(p fieldpath.Path) {
		names := make([]string, 0, len(p))
		for _, pe := range p {
			if pe.FieldName == nil {
				return
			}
			names = append(names, *pe.FieldName)
		}
		if len(names) < 2 || names[0] == "metadata" || names[0] == "status" {
			return
		}
		ptr := jsonPointer(names[:len(names)-1]...)
		if parents[ptr] == nil {
			parents[ptr] = &emptied{names: names[:len(names)-1]}
		}
		parents[ptr].keys = append(parents[ptr].keys, names[len(names)-1])
	})
	order := make([]string, 0, len(parents))
	for ptr := range parents {
		order = append(order, ptr)
	}
	sort.Strings(order)
	var ops []map[string]interface{}
	for _, ptr := range order {
		e := parents[ptr]
		m, found, err := unstructured.NestedMap(live.Object, e.names...)
		if err != nil || !found || len(m) != len(e.keys) {
			continue
		}
		all := true
		for _, k := range e.keys {
			_, ok := m[k]
			all = all && ok
		}
		if !all {
			continue
		}
		sort.Strings(e.keys)
		for _, k := range e.keys {
			ops = append(ops, map[string]interface{}{"op": "remove", "path": ptr + jsonPointer(k)})
		}
	}
	return ops
}

// ownedAlone reports whether every path the remove operations ops name is
// a field manager owns on live and no other entry does (of any version).
// A path through a list item (an index) is never: its item cannot be
// named from the index alone.
func ownedAlone(live *unstructured.Unstructured, manager string, ops []map[string]interface{}) bool {
	owners, err := Owners(live)
	if err != nil {
		return false
	}
	ours := owners.Applied(manager)
	if ours == nil {
		return false
	}
	others := owners.others(manager)
	unescape := strings.NewReplacer("~1", "/", "~0", "~")
	for _, op := range ops {
		ptr, _ := op["path"].(string)
		var p fieldpath.Path
		for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
			if _, err := strconv.Atoi(seg); err == nil {
				return false
			}
			name := unescape.Replace(seg)
			p = append(p, fieldpath.PathElement{FieldName: &name})
		}
		if !ours.Fields.Has(p) || others.Has(p) {
			return false
		}
	}
	return true
}

// removeEmptied sends ops (see emptiedMaps) as one JSON patch guarded by
// live's UID and resourceVersion, under manager, and returns the answer.
// It removes only fields manager's apply removes anyway (it owned them
// alone), without leaving their map null.
func (a *Applier) removeEmptied(ctx context.Context, live *unstructured.Unstructured, ops []map[string]interface{}, manager string) (*unstructured.Unstructured, error) {
	patch, err := json.Marshal(append(guards(live), ops...))
	if err != nil {
		return nil, err
	}
	answer := live.DeepCopy()
	if err := a.Client.Patch(ctx, answer, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(manager)); err != nil {
		return nil, fmt.Errorf("remove the last keys of maps the apply would leave null: %w", err)
	}
	return answer, nil
}

// hasNull reports whether v holds a null (nil) value anywhere below it,
// status left out.
func hasNull(v interface{}) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]interface{}:
		for k, e := range t {
			if k == "status" {
				continue
			}
			if hasNull(e) {
				return true
			}
		}
	case []interface{}:
		for _, e := range t {
			if hasNull(e) {
				return true
			}
		}
	}
	return false
}

// dropPlan removes every entry of manager; values stay.
func dropPlan(manager string) func(ManagedFields) (ManagedFields, *fieldpath.Set) {
	return func(current ManagedFields) (ManagedFields, *fieldpath.Set) {
		dropped := fieldpath.NewSet()
		var out ManagedFields
		for _, e := range current {
			if e.Manager == manager {
				dropped = dropped.Union(e.Fields)
				continue
			}
			out = append(out, e)
		}
		return out, dropped
	}
}

// jsonPointer is the JSON pointer (RFC 6901) of the field names.
func jsonPointer(names ...string) string {
	ptr := ""
	for _, n := range names {
		ptr += "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(n)
	}
	return ptr
}

// transformOps are the JSON patch operations (RFC 6902) that turn live into
// out, guarded by live's UID and resourceVersion: each top-level field and
// each field of metadata that differs is replaced, added or removed whole,
// managedFields included (an empty list is sent as one empty entry, which
// resets them: SSA docs, "Clearing managedFields"). Server-set metadata
// (resourceVersion, generation, uid, creationTimestamp) is left alone.
func transformOps(live, out *unstructured.Unstructured) ([]map[string]interface{}, error) {
	ops := guards(live)
	diff := func(prefix string, a, b map[string]interface{}, skip map[string]bool) {
		keys := map[string]bool{}
		for k := range a {
			keys[k] = true
		}
		for k := range b {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			if !skip[k] {
				sorted = append(sorted, k)
			}
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			va, ina := a[k]
			vb, inb := b[k]
			path := prefix + jsonPointer(k)
			switch {
			case ina && !inb:
				ops = append(ops, map[string]interface{}{"op": "remove", "path": path})
			case !ina && inb:
				ops = append(ops, map[string]interface{}{"op": "add", "path": path, "value": vb})
			case !equality.Semantic.DeepEqual(va, vb):
				ops = append(ops, map[string]interface{}{"op": "replace", "path": path, "value": vb})
			}
		}
	}
	diff("", live.Object, out.Object, map[string]bool{"apiVersion": true, "kind": true, "metadata": true, "status": true})
	lm, _ := live.Object["metadata"].(map[string]interface{})
	om, _ := out.Object["metadata"].(map[string]interface{})
	if lm == nil || om == nil {
		return nil, fmt.Errorf("%s: no metadata", describe(live))
	}
	diff("/metadata", lm, om, map[string]bool{"managedFields": true, "resourceVersion": true, "generation": true, "uid": true, "creationTimestamp": true, "name": true, "namespace": true})
	var entries interface{} = []interface{}{map[string]interface{}{}}
	if mf, ok := om["managedFields"].([]interface{}); ok && len(mf) > 0 {
		entries = mf
	}
	ops = append(ops, map[string]interface{}{"op": "replace", "path": "/metadata/managedFields", "value": entries})
	return ops, nil
}
