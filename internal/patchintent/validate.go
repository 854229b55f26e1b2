/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchintent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/internal/inputlimits"
)

// patchTarget is the identity of the object a patch is computed against.
type patchTarget struct {
	APIVersion, Kind, Name, Namespace string
}

// schemaInfo answers the questions validation and JSON patch evaluation ask
// of the target's schema, at a path of JSON pointer tokens (list positions
// as decimal indices or "-"). A nil schemaInfo knows nothing: no struct, no
// list keys.
type schemaInfo interface {
	// IsStruct reports whether the schema declares the value at path an
	// object with named fields (such as a volume's emptyDir), rather than
	// a map of arbitrary keys (data, labels) or an untyped value.
	IsStruct(path []string) bool
	// ListKeys returns the key fields of the list at path when the schema
	// declares it a map list (x-kubernetes-list-type: map with
	// x-kubernetes-list-map-keys), nil otherwise.
	ListKeys(path []string) []string
}

// serverFields are metadata fields the apiserver sets: a patch of them is
// either ignored by the apiserver or stripped by fieldops, never applied.
var serverFields = map[string]string{
	"managedFields":              "is the apiserver's record of field ownership, which fieldops changes only through Server-Side Apply",
	"uid":                        "is set by the apiserver",
	"resourceVersion":            "is set by the apiserver",
	"creationTimestamp":          "is set by the apiserver",
	"generation":                 "is set by the apiserver",
	"selfLink":                   "is set by the apiserver",
	"deletionTimestamp":          "is set by the apiserver when the object is deleted",
	"deletionGracePeriodSeconds": "is set by the apiserver when the object is deleted",
}

const (
	removalsNote  = "removals cannot be owned or handed back with Server-Side Apply, so a FieldPatch does not remove fields"
	nullsNote     = "a null asks for the field's removal (RFC 7386), and clients such as kubectl apply drop nulls from spec.patch, so it may arrive as nothing at all; " + removalsNote
	nullNote      = "a null asks for the field's removal (RFC 7386), and " + removalsNote
	statusNote    = "fieldops writes the main resource only, where the apiserver ignores status (it belongs to the object's controller, through the status subresource)"
	emptyObjNote  = "an empty object sets no field: " + nullsNote + " (an empty object is accepted only for a struct field of a list item, such as a volume's emptyDir: {})"
	identityParts = "apiVersion, kind, metadata.name and metadata.namespace"
)

// validatePatch checks spec.patch of the given type before it is computed
// against the target, and returns an error naming the first input fieldops
// would otherwise ignore or could never apply:
//
//   - a patch over the input limits (inputlimits.Patch: its size, nesting
//     depth and number of JSON patch operations), checked first, in time
//     linear in its size, so that no work on field sets is spent on it;
//   - an empty patch ({}, [], null), or one that sets no field besides the
//     target's identity (apiVersion, kind, metadata.name,
//     metadata.namespace), or names another object than the target;
//   - a write of status or of a metadata field the apiserver sets
//     (managedFields, uid, resourceVersion, creationTimestamp, generation,
//     selfLink, deletionTimestamp, deletionGracePeriodSeconds);
//   - a null, which asks for a removal (RFC 7386; also in a JSON add or
//     replace value), and an empty object, which is what such a null
//     becomes when a client (kubectl apply) drops it, except for a struct
//     field of a list item (emptyDir: {}), which sch recognizes;
//   - for JSON (RFC 6902): an operation list that does not decode, an
//     unknown op, an add/replace/test without a value, a remove or a move
//     (removals cannot be owned, see the SSA docs on field management), a
//     write of the whole object or of its identity, or no writing
//     operation at all.
//
// Messages name paths and kinds, never values of the target. sch may be nil.
func validatePatch(typ v1alpha1.PatchType, raw []byte, target patchTarget, sch schemaInfo) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return errors.New("the patch is empty")
	}
	if err := inputlimits.Patch(raw, typ == v1alpha1.PatchTypeJSON); err != nil {
		return err
	}
	if typ == v1alpha1.PatchTypeJSON {
		ops, err := decodeJSONPatch(raw)
		if err != nil {
			return err
		}
		return validateJSONOps(ops, sch)
	}
	label := patchLabel(typ)
	var doc map[string]interface{}
	if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
		return fmt.Errorf("%s: must be an object (a partial manifest of the target)", label)
	}
	if len(doc) == 0 {
		return fmt.Errorf("%s: the patch is empty: it sets no field", label)
	}
	v := &objectValidator{target: target, sch: sch}
	if err := v.walk(nil, doc, false); err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	if v.leaves == 0 {
		return fmt.Errorf("%s: the patch sets no field besides the target's identity (%s)", label, identityParts)
	}
	return nil
}

func patchLabel(typ v1alpha1.PatchType) string {
	switch typ {
	case v1alpha1.PatchTypeMerge:
		return "merge patch"
	case v1alpha1.PatchTypeStrategicMerge:
		return "strategic merge patch"
	default:
		return "apply patch"
	}
}

// objectValidator walks a partial object (Apply, Merge, StrategicMerge),
// counting the leaves it sets.
type objectValidator struct {
	target patchTarget
	sch    schemaInfo
	leaves int
}

// walk checks val at path and counts its leaves: an object key by key
// (walkMap), a list item by item (walkList), null refused, a scalar one
// leaf.
func (v *objectValidator) walk(path []string, val interface{}, inList bool) error {
	switch val := val.(type) {
	case map[string]interface{}:
		return v.walkMap(path, val, inList)
	case []interface{}:
		return v.walkList(path, val)
	case nil:
		return fmt.Errorf("%s is null: %s", dotted(path), nullNote)
	default:
		v.leaves++
	}
	return nil
}

// walkMap checks an object: empty only as a struct item of a list (a
// leaf), no forbidden field, identity fields equal to the target's.
func (v *objectValidator) walkMap(path []string, val map[string]interface{}, inList bool) error {
	if len(val) == 0 {
		if len(path) > 0 && inList && v.sch != nil && v.sch.IsStruct(path) {
			v.leaves++
			return nil
		}
		return fmt.Errorf("%s is an empty object: %s", dotted(path), emptyObjNote)
	}
	for _, k := range sortedKeys(val) {
		sub := val[k]
		p := append(append([]string(nil), path...), k)
		if err := forbiddenWrite(p, dotted); err != nil {
			return err
		}
		if want, ok := v.identity(p); ok {
			if s, isString := sub.(string); !isString || s != want {
				return fmt.Errorf("%s differs from the target's %q: a patch changes its target only", dotted(p), want)
			}
			continue
		}
		if err := v.walk(p, sub, inList); err != nil {
			return err
		}
	}
	return nil
}

// walkList checks each item of a list; an empty list is a leaf.
func (v *objectValidator) walkList(path []string, val []interface{}) error {
	if len(val) == 0 {
		v.leaves++
	}
	for i, sub := range val {
		p := append(append([]string(nil), path...), strconv.Itoa(i))
		if err := v.walk(p, sub, true); err != nil {
			return err
		}
	}
	return nil
}

// identity returns the target's value of an identity field at path. An
// empty target namespace (a cluster-scoped target) accepts none.
func (v *objectValidator) identity(path []string) (string, bool) {
	switch strings.Join(path, "/") {
	case "apiVersion":
		return v.target.APIVersion, true
	case "kind":
		return v.target.Kind, true
	case "metadata/name":
		return v.target.Name, true
	case "metadata/namespace":
		return v.target.Namespace, true
	}
	return "", false
}

// forbiddenWrite returns why a patch may not write path, or nil.
func forbiddenWrite(path []string, format func([]string) string) error {
	switch {
	case len(path) == 0:
		return errors.New("the patch replaces the whole object; patch its fields instead")
	case path[0] == "status":
		return fmt.Errorf("%s: patches of status are not supported: %s", format(path), statusNote)
	case path[0] == "metadata" && len(path) > 1:
		if why, ok := serverFields[path[1]]; ok {
			return fmt.Errorf("%s %s and cannot be patched", format(path[:2]), why)
		}
	}
	return nil
}

// dotted formats a path for object patches: .spec.containers[0].env.
func dotted(path []string) string {
	var b strings.Builder
	for _, t := range path {
		if _, err := strconv.Atoi(t); err == nil {
			b.WriteString("[" + t + "]")
			continue
		}
		b.WriteString("." + t)
	}
	if b.Len() == 0 {
		return "."
	}
	return b.String()
}

// pointer formats a path as an RFC 6901 JSON pointer.
func pointer(path []string) string {
	var b strings.Builder
	for _, t := range path {
		b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}

// validateJSONOps checks decoded RFC 6902 operations (see validatePatch).
func validateJSONOps(ops []jsonOp, sch schemaInfo) error {
	if len(ops) == 0 {
		return errors.New("JSON patch: the patch is empty: it has no operation")
	}
	writes := 0
	for i, op := range ops {
		where := fmt.Sprintf("JSON patch op %d (%s)", i+1, op.describe())
		switch op.Op {
		case "remove":
			return fmt.Errorf("%s: the patch removes a field; %s", where, removalsNote)
		case "move":
			return fmt.Errorf("%s: move removes its source %s, and %s: use copy, and leave %s to its owner", where, op.From, removalsNote, op.From)
		case "add", "replace", "test":
			if !op.HasValue {
				return fmt.Errorf("%s: the operation has no value: %s", where, nullsNote)
			}
		}
		if op.Op == "test" {
			continue
		}
		writes++
		if err := forbiddenWrite(op.path, pointer); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		switch strings.Join(op.path, "/") {
		case "apiVersion", "kind", "metadata/name", "metadata/namespace":
			return fmt.Errorf("%s: the patch changes the target's identity; a patch changes its target only", where)
		}
		if op.Op == "copy" {
			continue
		}
		if err := checkValue(op.path, op.Value, sch); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	if writes == 0 {
		return errors.New("JSON patch: no operation writes a field (only test)")
	}
	return nil
}

// checkValue checks the value an operation writes at path: no forbidden
// field inside it, no empty object. The value itself may be anything
// (the target's schema decides).
func checkValue(path []string, val interface{}, sch schemaInfo) error {
	inList := false
	for _, t := range path {
		if isListPosition(t) {
			inList = true
		}
	}
	var walk func(p []string, val interface{}, inList bool) error
	walk = func(p []string, val interface{}, inList bool) error {
		switch val := val.(type) {
		case map[string]interface{}:
			if len(val) == 0 {
				if inList && sch != nil && sch.IsStruct(p) {
					return nil
				}
				return fmt.Errorf("%s is an empty object: %s", pointer(p), emptyObjNote)
			}
			for _, k := range sortedKeys(val) {
				q := append(append([]string(nil), p...), k)
				if err := forbiddenWrite(q, pointer); err != nil {
					return err
				}
				if err := walk(q, val[k], inList); err != nil {
					return err
				}
			}
		case []interface{}:
			for i, sub := range val {
				if err := walk(append(append([]string(nil), p...), strconv.Itoa(i)), sub, true); err != nil {
					return err
				}
			}
		case nil:
			return fmt.Errorf("%s is null: %s", pointer(p), nullNote)
		}
		return nil
	}
	return walk(path, val, inList)
}

func sortedKeys(m map[string]interface{}) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// isListPosition reports whether a JSON pointer token can name a list
// position: "-" or a decimal index.
func isListPosition(t string) bool {
	if t == "-" {
		return true
	}
	_, err := strconv.Atoi(t)
	return err == nil
}
