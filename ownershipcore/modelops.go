/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Model computes the operations of the ownership core as pure functions of
// a State, with the apiserver's own field manager code
// (managedfields.NewDefaultFieldManager) over Schema's types. It sends
// nothing; Applier.Commit writes a state.
type Model struct {
	// Schema gives the types (list and map semantics) of the objects.
	Schema *Schema
}

// Model is the model over the Applier's schema.
func (a *Applier) Model() Model { return Model{Schema: a.Schema} }

// Apply is Server-Side Apply of intent (a partial object of s's kind and
// version) by manager, with or without force, as the apiserver computes it.
// A conflict is returned as the apiserver's 409 (apierrors.IsConflict); an
// invalid intent as the field manager's error.
func (m Model) Apply(s State, intent *unstructured.Unstructured, manager string, force bool) (State, error) {
	return m.run(s, manager, true, func(obj runtime.Object, _ func(*unstructured.Unstructured) error) (runtime.Object, error) {
		fm, err := m.Schema.FieldManager(s.Object.GroupVersionKind())
		if err != nil {
			return nil, err
		}
		return fm.Apply(obj, intent.DeepCopy(), manager, force)
	})
}

// Update is an update of the object to next's content by manager (an
// imperative write: a patch or a PUT), as the apiserver records it: the
// fields it changes become manager's (Update entry), taken from whoever
// owned them. When next carries managed fields, they replace the state's
// first, as the apiserver lets a request set them (SSA docs, "Using Update
// to change managed fields").
func (m Model) Update(s State, next *unstructured.Unstructured, manager string) (State, error) {
	return m.run(s, manager, false, func(obj runtime.Object, relabel func(*unstructured.Unstructured) error) (runtime.Object, error) {
		fm, err := m.Schema.FieldManager(s.Object.GroupVersionKind())
		if err != nil {
			return nil, err
		}
		in := next.DeepCopy()
		if err := relabel(in); err != nil {
			return nil, err
		}
		return fm.Update(obj, in, manager)
	})
}

// run runs one operation of the field manager over s's encoded object
// (op may relabel an object of its own with relabel). Entries of another
// version whose paths agree with the object's (s.SamePaths) are given the
// object's version for the operation and their own back after it: the
// apiserver converts them with an identity conversion too (CRD conversion
// strategy None).
func (m Model) run(s State, manager string, applying bool, op func(obj runtime.Object, relabel func(*unstructured.Unstructured) error) (runtime.Object, error)) (State, error) {
	if err := s.comparable(); err != nil {
		return State{}, err
	}
	obj, err := s.Encoded()
	if err != nil {
		return State{}, err
	}
	version := s.Object.GetAPIVersion()
	restore := map[ManagerKey]string{}
	relabel := func(u *unstructured.Unstructured) error { return relabelEntries(u, version, restore) }
	if err := relabel(obj); err != nil {
		return State{}, err
	}
	if s.setAside && len(obj.GetManagedFields()) == 0 {
		// With no managed fields at all the field manager takes the
		// object for one never applied and gives every field to an
		// invented "before-first-apply" manager: an entry that owns
		// nothing stands in for those set aside (and is dropped from the
		// result, as every empty entry is).
		obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "fieldops-other-versions", Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: version, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1("{}")}})
	}
	res, err := op(obj, relabel)
	if err != nil {
		return State{}, err
	}
	out, ok := res.(*unstructured.Unstructured)
	if !ok {
		return State{}, fmt.Errorf("field manager returned %T", res)
	}
	owners, err := Owners(out)
	if err != nil {
		return State{}, err
	}
	restoreEntries(owners, version, manager, applying, restore)
	return State{Object: out, Owners: owners, SamePaths: s.SamePaths, setAside: s.setAside}, nil
}

// restoreEntries gives the entries relabelEntries relabelled their own
// version and manager back, in place.
func restoreEntries(owners ManagedFields, version, manager string, applying bool, restore map[ManagerKey]string) {
	for i, e := range owners {
		key := e.ManagerKey
		key.APIVersion = version
		// An apply moves manager's Apply entry to the object's version;
		// every other entry keeps its own.
		ownApply := applying && e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply
		if v, ok := restore[key]; ok && !ownApply && e.Subresource == "" {
			owners[i].APIVersion = v
		}
		if name, v, ok := strings.Cut(e.Manager, otherVersion); ok {
			owners[i].Manager, owners[i].APIVersion = name, v
		}
	}
}

// otherVersion separates, during one operation, the manager of an Update
// entry of another version from that version in the manager's name: the
// apiserver keys Update entries by apiVersion too, so each is a manager of
// its own (an update makes an entry of its own version, which takes the
// fields it changes from the writer's entries of other versions too).
const otherVersion = "\x00"

// relabelEntries gives u's entries of the main resource in another version
// than version that version, noting an Apply entry's own in restore and
// naming an Update entry's into its manager's (otherVersion). Two entries
// that would then share a key are unpredictable.
func relabelEntries(u *unstructured.Unstructured, version string, restore map[ManagerKey]string) error {
	entries := u.GetManagedFields()
	changed := false
	seen := map[ManagerKey]bool{}
	for i, e := range entries {
		if e.Subresource == "" && e.APIVersion != "" && e.APIVersion != version {
			if e.Operation == metav1.ManagedFieldsOperationUpdate {
				entries[i].Manager = e.Manager + otherVersion + e.APIVersion
			}
			restore[ManagerKey{Manager: entries[i].Manager, Operation: e.Operation, APIVersion: version}] = e.APIVersion
			entries[i].APIVersion = version
			changed = true
		}
		key := ManagerKey{Manager: entries[i].Manager, Operation: e.Operation, APIVersion: entries[i].APIVersion, Subresource: e.Subresource}
		if seen[key] {
			return fmt.Errorf("%w: two entries of %s differ only in their version", ErrUnpredictable, key)
		}
		seen[key] = true
	}
	if changed {
		u.SetManagedFields(entries)
	}
	return nil
}

// Predict checks that a write of after as an imperative request by manager
// (Commit's JSON patch, which sets the content and the managed fields
// together) is recorded by the apiserver's own field manager as after: no
// field changes owner, no entry appears or goes, but as planned. It returns
// ErrUnpredictable (wrapped, with the difference) otherwise.
func (m Model) Predict(before, after State, manager string) error {
	if before.comparable() != nil && equality.Semantic.DeepEqual(comparableContent(before.Object), comparableContent(after.Object)) {
		// A write that changes no value changes no field's owner: the
		// apiserver keeps the managed fields the request sets (SSA docs,
		// "Using Update to change managed fields"), entries of other
		// versions too, which need no conversion then. The field manager
		// is run whenever it can be (it also caps Update entries).
		return nil
	}
	next, err := after.Encoded()
	if err != nil {
		return err
	}
	if len(next.GetManagedFields()) == 0 {
		// No entry at all reads as "keep the live ones": the write sends
		// one empty entry, which clears them (SSA docs, "Clearing
		// managedFields").
		next.SetManagedFields([]metav1.ManagedFieldsEntry{{}})
	}
	got, err := m.Update(before, next, manager)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnpredictable, err)
	}
	if diff := Diff(after, got); diff != "" {
		return fmt.Errorf("%w: the apiserver would record the write otherwise (%s)", ErrUnpredictable, diff)
	}
	return nil
}

// Diff describes how two states differ in content or managed fields
// (entries compared by key, in any order, times aside); "" when they agree.
// Server-set metadata (resourceVersion, generation, uid,
// creationTimestamp) is left out.
func Diff(want, got State) string {
	var out []string
	wc, gc := comparableContent(want.Object), comparableContent(got.Object)
	if !equality.Semantic.DeepEqual(wc, gc) {
		out = append(out, "content differs")
	}
	w, g := entryMap(want.Owners), entryMap(got.Owners)
	var keys []string
	all := map[ManagerKey]bool{}
	for k := range w {
		all[k] = true
	}
	for k := range g {
		all[k] = true
	}
	for k := range all {
		ws, gs := w[k], g[k]
		switch {
		case ws == nil:
			keys = append(keys, fmt.Sprintf("unplanned entry %s %v", k, FormatSet(gs)))
		case gs == nil:
			keys = append(keys, fmt.Sprintf("missing entry %s", k))
		case !ws.Equals(gs):
			keys = append(keys, fmt.Sprintf("entry %s: lacks %v, has besides %v", k, FormatSet(ws.Difference(gs)), FormatSet(gs.Difference(ws))))
		}
	}
	sort.Strings(keys)
	return strings.Join(append(out, keys...), "; ")
}

// entryMap keys the non-empty entries (the apiserver drops empty ones).
func entryMap(owners ManagedFields) map[ManagerKey]*fieldpath.Set {
	out := map[ManagerKey]*fieldpath.Set{}
	for _, e := range owners {
		if e.Fields.Empty() {
			continue
		}
		k := e.ManagerKey
		if prev, ok := out[k]; ok {
			out[k] = prev.Union(e.Fields)
			continue
		}
		out[k] = e.Fields
	}
	return out
}

// comparableContent is obj's content without managed fields and
// server-set metadata. It shares obj's values (only the top level and
// metadata are copied): it is for comparing, not for changing.
func comparableContent(obj *unstructured.Unstructured) map[string]interface{} {
	if obj.Object == nil {
		return nil
	}
	out := make(map[string]interface{}, len(obj.Object))
	for k, v := range obj.Object {
		out[k] = v
	}
	md, ok := out["metadata"].(map[string]interface{})
	if !ok {
		return out
	}
	kept := make(map[string]interface{}, len(md))
	for k, v := range md {
		switch k {
		case "managedFields", "resourceVersion", "generation", "uid", "creationTimestamp":
		default:
			kept[k] = v
		}
	}
	if len(kept) == 0 {
		delete(out, "metadata")
	} else {
		out["metadata"] = kept
	}
	return out
}

// predict is the model's state after the apply of intent by manager on s
// (known, when not nil: computed already); an apply without guard that
// the model finds in conflict is predicted forced (see verify).
func (m Model) predict(s State, intent *unstructured.Unstructured, manager string, force, guarded bool, known *State) (State, error) {
	if known != nil {
		return *known, nil
	}
	predicted, err := m.Apply(s, intent, manager, force)
	if apierrors.IsConflict(err) && !guarded {
		predicted, err = m.Apply(s, intent, manager, true)
	}
	return predicted, err
}

// skeleton is the object intent names, with no content: what an apply
// that creates it starts from.
func skeleton(intent *unstructured.Unstructured) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(intent.GetAPIVersion())
	u.SetKind(intent.GetKind())
	u.SetNamespace(intent.GetNamespace())
	u.SetName(intent.GetName())
	return u
}
