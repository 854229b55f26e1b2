/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchintent

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// patchedObject returns live with the patch of spec applied, for the
// StrategicMerge, Merge and JSON types. The fields it changes become the
// intent (see ownershipcore.Applier.ChangedIntent). A JSON patch is applied
// so that it holds once applied (applyJSONPatchOnce, with sch and owned);
// merge and strategic merge patches hold by themselves.
func patchedObject(spec *v1alpha1.FieldPatchSpec, live *unstructured.Unstructured, sch schemaInfo, owned ownedFunc) (*unstructured.Unstructured, error) {
	liveJSON, err := json.Marshal(live.Object)
	if err != nil {
		return nil, err
	}
	raw := spec.Patch.Raw
	var out []byte
	switch spec.Type {
	case v1alpha1.PatchTypeJSON:
		ops, err := decodeJSONPatch(raw)
		if err != nil {
			return nil, err
		}
		if out, err = applyJSONPatchOnce(ops, liveJSON, sch, owned); err != nil {
			return nil, err
		}
	case v1alpha1.PatchTypeMerge:
		if !isJSONObject(raw) {
			return nil, errors.New("merge patch: must be an object")
		}
		if out, err = jsonpatch.MergePatch(liveJSON, raw); err != nil {
			return nil, fmt.Errorf("merge patch: %w", err)
		}
	case v1alpha1.PatchTypeStrategicMerge:
		if !isJSONObject(raw) {
			return nil, errors.New("strategic merge patch: must be an object")
		}
		typed, err := clientgoscheme.Scheme.New(live.GroupVersionKind())
		if err != nil {
			return nil, fmt.Errorf("strategic merge patch is only defined for built-in kinds, not %s: use Merge or Apply", live.GroupVersionKind().Kind)
		}
		if out, err = strategicpatch.StrategicMergePatch(liveJSON, raw, typed); err != nil {
			return nil, fmt.Errorf("strategic merge patch: %w", err)
		}
	default:
		return nil, fmt.Errorf("patch type %q is not computed locally", spec.Type)
	}
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal(out, &obj.Object); err != nil {
		return nil, fmt.Errorf("patched object: %w", err)
	}
	return obj, nil
}

// InvalidError is a patch that fails validation (validatePatch) before it
// is computed against the target: only a spec change helps. The FieldPatch
// controller reports it as Stalled with reason InvalidPatch.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// Build validates the patch of spec against live (validatePatch) and
// returns the intent it makes under manager: the partial object of an
// Apply patch, or the fields a StrategicMerge, Merge or JSON patch changes
// on live plus those it owns already (ownershipcore.Applier.ChangedIntent).
// st is the patch's status: a JSON patch's test operations are judged
// with the fields it recorded as taken on this target. A validation error
// is an *InvalidError; other errors are returned as they are (a patch that
// does not fit the target, ownershipcore.ErrUnknownKind, ...).
//
// The FieldPatch controller and kubectl fieldops plan both build intents
// here, so that a plan cannot disagree with what the controller applies.
func Build(a *ownershipcore.Applier, spec *v1alpha1.FieldPatchSpec, st *v1alpha1.FieldPatchStatus, live *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error) {
	// The schema is read from live's typed value only when a question
	// needs it (an empty object, a JSON patch): most patches never ask.
	sch := &lazySchema{load: func() *typedSchema {
		info, err := a.Schema.Info(live)
		if err != nil {
			return nil // the intent's own conversion reports it
		}
		return &typedSchema{info: info}
	}}
	target := patchTarget{APIVersion: live.GetAPIVersion(), Kind: live.GetKind(), Name: live.GetName(), Namespace: live.GetNamespace()}
	if err := validatePatch(TypeOrApply(spec.Type), spec.Patch.Raw, target, sch); err != nil {
		return nil, &InvalidError{Err: err}
	}
	if TypeOrApply(spec.Type) == v1alpha1.PatchTypeApply {
		return applyIntent(spec, live.GroupVersionKind(), live.GetNamespace())
	}
	var owned ownedFunc
	if spec.Type == v1alpha1.PatchTypeJSON && sch.get() != nil {
		var err error
		if owned, err = sch.get().owned(live, st, manager); err != nil {
			return nil, err
		}
	}
	patched, err := patchedObject(spec, live, sch, owned)
	if err != nil {
		return nil, err
	}
	return a.ChangedIntentWithin(live, patched, manager, writtenFields(a, spec, live, sch, owned, manager))
}

// writtenFields returns the fields an imperative patch writes on live
// whatever their values there: those it changes on live once the fields
// manager owns are taken off (list item keys stay, so that items are still
// found), every field below an added one included. A field manager owns
// and the patch no longer writes (an edit dropped it) is not among them,
// and leaves the intent (docs/fieldpatch.md: a field that leaves the patch
// is given back as at deletion). It returns nil, every owned field staying
// in the intent, when manager owns nothing or the patch cannot be
// computed without those fields (a JSON patch's replace or test of one):
// the field is then let go only at deletion.
func writtenFields(a *ownershipcore.Applier, spec *v1alpha1.FieldPatchSpec, live *unstructured.Unstructured, sch schemaInfo, owned ownedFunc, manager string) *fieldset.Set {
	owners, err := ownershipcore.Owners(live)
	if err != nil {
		return nil
	}
	ours := owners.Applied(manager)
	if ours == nil {
		return nil
	}
	strip := fieldset.NewSet()
	ours.Fields.Leaves().Iterate(func(p fieldset.Path) {
		if !isItemKey(p) {
			strip.Insert(p.Copy())
		}
	})
	bare, err := a.RemoveFields(live, strip)
	if err != nil {
		return nil
	}
	patched, err := patchedObject(spec, bare, sch, owned)
	if err != nil {
		return nil
	}
	written, err := a.ChangedFields(bare, patched)
	if err != nil {
		return nil
	}
	return written
}

// isItemKey reports whether p is a key field of a list item, such as
// .spec.containers[name="app"].name.
func isItemKey(p fieldset.Path) bool {
	if len(p) < 2 || p[len(p)-1].FieldName == nil || p[len(p)-2].Key == nil {
		return false
	}
	for _, f := range *p[len(p)-2].Key {
		if f.Name == *p[len(p)-1].FieldName {
			return true
		}
	}
	return false
}

// TypeOrApply is the patch type, Apply when unset (the API default).
func TypeOrApply(t v1alpha1.PatchType) v1alpha1.PatchType {
	if t == "" {
		return v1alpha1.PatchTypeApply
	}
	return t
}

// lazySchema is a schemaInfo that loads its typedSchema at the first
// question; a nil typedSchema (the kind's schema could not be read)
// answers no struct and no list keys.
type lazySchema struct {
	load   func() *typedSchema
	once   sync.Once
	schema *typedSchema
}

func (l *lazySchema) get() *typedSchema {
	l.once.Do(func() { l.schema = l.load() })
	return l.schema
}

// IsStruct implements schemaInfo.
func (l *lazySchema) IsStruct(path []string) bool {
	s := l.get()
	return s != nil && s.IsStruct(path)
}

// ListKeys implements schemaInfo.
func (l *lazySchema) ListKeys(path []string) []string {
	if s := l.get(); s != nil {
		return s.ListKeys(path)
	}
	return nil
}

// applyIntent reads an Apply patch: a partial object, given the identity of
// the target.
func applyIntent(spec *v1alpha1.FieldPatchSpec, gvk schema.GroupVersionKind, namespace string) (*unstructured.Unstructured, error) {
	if !isJSONObject(spec.Patch.Raw) {
		return nil, errors.New("apply patch: must be an object (a partial manifest of the target)")
	}
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal(spec.Patch.Raw, &obj.Object); err != nil {
		return nil, fmt.Errorf("apply patch: %w", err)
	}
	if v, ok := obj.Object["apiVersion"]; ok && v != gvk.GroupVersion().String() {
		return nil, fmt.Errorf("apply patch: apiVersion %v differs from the target's %s", v, gvk.GroupVersion())
	}
	if v, ok := obj.Object["kind"]; ok && v != gvk.Kind {
		return nil, fmt.Errorf("apply patch: kind %v differs from the target's %s", v, gvk.Kind)
	}
	if n := obj.GetName(); n != "" && n != spec.Target.Name {
		return nil, fmt.Errorf("apply patch: metadata.name %q differs from the target's %q", n, spec.Target.Name)
	}
	obj.SetGroupVersionKind(gvk)
	obj.SetName(spec.Target.Name)
	obj.SetNamespace(namespace)
	return obj, nil
}

func isJSONObject(raw []byte) bool {
	var m map[string]interface{}
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// typedSchema is the schemaInfo of a kind's schema, as the ownership core
// reads it from the apiserver's OpenAPI (ownershipcore.SchemaInfo).
type typedSchema struct {
	info *ownershipcore.SchemaInfo
}

// IsStruct implements schemaInfo.
func (s *typedSchema) IsStruct(path []string) bool {
	shape, ok := s.info.Shape(path)
	return ok && shape.Struct
}

// ListKeys implements schemaInfo.
func (s *typedSchema) ListKeys(path []string) []string {
	shape, ok := s.info.Shape(path)
	if !ok {
		return nil
	}
	return shape.Keys
}

// fieldPath turns a JSON pointer into doc into the path of the field it
// names, as managedFields records it (ownershipcore.SchemaInfo.FieldPath):
// list items by their keys (map lists) or values (sets); at an atomic list
// it stops, the list being the field. ok is false when path does not name a
// field of doc.
func (s *typedSchema) fieldPath(doc interface{}, path []string) (fieldset.Path, bool) {
	return s.info.FieldPath(doc, path)
}

// owned returns the ownedFunc of manager on live: a path is the patch's own
// when our Apply entry exists and it or the fields recorded as taken on
// this target (ReadLedger's Recorded) hold the field, a field below it, or
// the atomic field above it.
func (s *typedSchema) owned(live *unstructured.Unstructured, st *v1alpha1.FieldPatchStatus, manager string) (ownedFunc, error) {
	mf, err := ownershipcore.Owners(live)
	if err != nil {
		return nil, err
	}
	ours := mf.Applied(manager)
	if ours == nil {
		return func(interface{}, []string) bool { return false }, nil
	}
	ledger, err := ReadLedger(st, string(live.GetUID()))
	if err != nil {
		return nil, err
	}
	fields := ours.Fields.Union(ledger.Recorded)
	return func(doc interface{}, path []string) bool {
		p, ok := s.fieldPath(doc, path)
		if !ok {
			return false
		}
		found := false
		fields.Iterate(func(q fieldset.Path) {
			if !found && (pathHasPrefix(q, p) || pathHasPrefix(p, q)) {
				found = true
			}
		})
		return found
	}, nil
}

func pathHasPrefix(p, prefix fieldset.Path) bool {
	if len(prefix) > len(p) {
		return false
	}
	for i := range prefix {
		if !p[i].Equals(prefix[i]) {
			return false
		}
	}
	return true
}

// Intent is Build followed by the removal of ignore (spec.ignorePaths and
// what ignore plugins name; may be nil): the intent the controller
// applies, and its field set. Errors: an *InvalidError for a patch that
// fails validation, does not fit the target, or sets no field once ignore
// is left out (an Apply patch); ownershipcore.ErrUnknownKind (wrapped)
// when the target's kind has no schema; others as they are.
func Intent(a *ownershipcore.Applier, spec *v1alpha1.FieldPatchSpec, st *v1alpha1.FieldPatchStatus, live *unstructured.Unstructured, manager string, ignore *fieldset.Set) (*unstructured.Unstructured, *fieldset.Set, error) {
	intent, err := Build(a, spec, st, live, manager)
	if err == nil && ignore != nil && !ignore.Empty() {
		intent, err = a.RemoveFields(intent, ignore)
	}
	var set *fieldset.Set
	if err == nil {
		set, err = a.FieldSet(intent)
	}
	var invalid *InvalidError
	switch {
	case errors.As(err, &invalid), errors.Is(err, ownershipcore.ErrUnknownKind):
		return nil, nil, err
	case err != nil:
		return nil, nil, &InvalidError{Err: fmt.Errorf("patch (type %s) does not fit %s: %v", TypeOrApply(spec.Type), live.GetKind(), err)}
	case TypeOrApply(spec.Type) == v1alpha1.PatchTypeApply && CountLeaves(set) == 0:
		// validatePatch refused a patch with no field; what is left out
		// here went to ignorePaths.
		return nil, nil, &InvalidError{Err: fmt.Errorf("the patch sets no field of %s besides its identity once ignorePaths and ignorePlugins are left out", live.GetKind())}
	}
	return intent, set, nil
}

// CountLeaves is len(Leaves(s)), without formatting a path.
func CountLeaves(s *fieldset.Set) int {
	if s == nil {
		return 0
	}
	n := 0
	s.Leaves().Iterate(func(p fieldset.Path) {
		if !identityField(p) {
			n++
		}
	})
	return n
}

// identityField reports whether p is .apiVersion, .kind, .metadata.name or
// .metadata.namespace.
func identityField(p fieldset.Path) bool {
	name := func(i int) string {
		if p[i].FieldName == nil {
			return ""
		}
		return *p[i].FieldName
	}
	switch len(p) {
	case 1:
		return name(0) == "apiVersion" || name(0) == "kind"
	case 2:
		return name(0) == "metadata" && (name(1) == "name" || name(1) == "namespace")
	}
	return false
}

// Leaves lists the leaf fields of a set in the ownership core's form
// (ownershipcore.FormatSet), leaving out the identity fields every intent
// carries (apiVersion, kind, metadata.name, metadata.namespace).
func Leaves(s *fieldset.Set) []string {
	var out []string
	for _, p := range ownershipcore.FormatSet(s) {
		switch p {
		case ".apiVersion", ".kind", ".metadata.name", ".metadata.namespace":
			continue
		}
		out = append(out, p)
	}
	return out
}
