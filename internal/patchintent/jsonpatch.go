/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package patchintent

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// jsonOp is one RFC 6902 operation of a JSON FieldPatch.
type jsonOp struct {
	Op, Path, From string
	// Value is the decoded value (add, replace, test); HasValue tells a
	// missing value from JSON null.
	Value    interface{}
	HasValue bool

	path, from []string // Path and From as RFC 6901 tokens
}

func (o jsonOp) describe() string {
	if o.Op == "move" || o.Op == "copy" {
		return fmt.Sprintf("%s from %s to %s", o.Op, o.From, o.Path)
	}
	return o.Op + " " + o.Path
}

// decodeJSONPatch reads an RFC 6902 patch: a list of operations, each with
// a known "op" and a "path" (and "from" for move and copy) that are valid
// RFC 6901 JSON pointers. It does not check values (validateJSONOps does).
func decodeJSONPatch(raw []byte) ([]jsonOp, error) {
	var list []map[string]interface{}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errors.New("JSON patch: must be a list of RFC 6902 operations ({op, path, value})")
	}
	ops := make([]jsonOp, 0, len(list))
	for i, m := range list {
		var op jsonOp
		var ok bool
		if op.Op, ok = m["op"].(string); !ok {
			return nil, fmt.Errorf("JSON patch op %d: no op", i+1)
		}
		switch op.Op {
		case "add", "remove", "replace", "move", "copy", "test":
		default:
			return nil, fmt.Errorf("JSON patch op %d: unknown op %q (RFC 6902 defines add, remove, replace, move, copy and test)", i+1, op.Op)
		}
		if op.Path, ok = m["path"].(string); !ok {
			return nil, fmt.Errorf("JSON patch op %d (%s): no path", i+1, op.Op)
		}
		var err error
		if op.path, err = parsePointer(op.Path); err != nil {
			return nil, fmt.Errorf("JSON patch op %d (%s): path: %w", i+1, op.Op, err)
		}
		if op.Op == "move" || op.Op == "copy" {
			if op.From, ok = m["from"].(string); !ok {
				return nil, fmt.Errorf("JSON patch op %d (%s %s): no from", i+1, op.Op, op.Path)
			}
			if op.from, err = parsePointer(op.From); err != nil {
				return nil, fmt.Errorf("JSON patch op %d (%s %s): from: %w", i+1, op.Op, op.Path, err)
			}
		}
		op.Value, op.HasValue = m["value"]
		ops = append(ops, op)
	}
	return ops, nil
}

// parsePointer splits an RFC 6901 JSON pointer into its unescaped tokens;
// "" is the whole document.
func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%q is not a JSON pointer: it must start with /", p)
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		if strings.Contains(strings.NewReplacer("~0", "", "~1", "").Replace(t), "~") {
			return nil, fmt.Errorf("%q is not a JSON pointer: ~ must be escaped as ~0", p)
		}
		tokens[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(t)
	}
	return tokens, nil
}

// ownedFunc reports whether the value at path of doc (the document as the
// operations so far left it) is a field the patch has already written: our
// field manager owns it, or took it before on this target. It decides
// whether a test guarding that field still applies.
type ownedFunc func(doc interface{}, path []string) bool

// applyJSONPatchOnce applies RFC 6902 operations to doc (the live object as
// JSON) so that a patch applied once holds: computing it again against the
// object it produced changes nothing, which RFC 6902 alone does not give
// (an add at "-" appends at every application). Operations run in order,
// each against the result of the ones before, as in RFC 6902, except:
//
//   - an add or copy into a list position ("-" or an index) is skipped when
//     the list already holds the value: an item that has every field of
//     the value with the same value (server-set defaults, such as a port's
//     protocol, do not make it another item). In a map list (sch's
//     ListKeys) an item with the same keys is the value's item: the value's
//     fields are merged into it in place (a replace of that item), which
//     repairs drift inside it without a second item of the same key. This
//     is "ensure present", the meaning the patch had on its first
//     application, for map lists (env), sets and atomic lists
//     (tolerations) alike;
//   - a test whose path a later operation of the patch writes (the same
//     path, one above or one below it) is skipped once owned says the
//     patch has written it: the test guarded the first application, and
//     the value is the patch's own now.
//
// move and remove are refused before (validateJSONOps). Errors name the
// operation and its paths, never values of the target. sch and owned may
// be nil.
func applyJSONPatchOnce(ops []jsonOp, doc []byte, sch schemaInfo, owned ownedFunc) ([]byte, error) {
	var cur interface{}
	if err := json.Unmarshal(doc, &cur); err != nil {
		return nil, fmt.Errorf("JSON patch: target: %w", err)
	}
	for i := range ops {
		where := fmt.Sprintf("JSON patch op %d (%s)", i+1, ops[i].describe())
		op, skip := opOnce(ops, i, cur, sch, owned)
		if skip {
			continue
		}
		out, err := applyOne(op, doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		doc = out
		cur = nil
		if err := json.Unmarshal(doc, &cur); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
	}
	return doc, nil
}

// opOnce is ops[i] as applyJSONPatchOnce applies it to cur, or skip when
// it is not applied: a test of a path the patch owns and writes later, an
// add or copy of a value already present (addOnce).
func opOnce(ops []jsonOp, i int, cur interface{}, sch schemaInfo, owned ownedFunc) (op jsonOp, skip bool) {
	op = ops[i]
	switch op.Op {
	case "test":
		return op, owned != nil && writtenLater(ops, i) && owned(cur, op.path)
	case "add", "copy":
		return addOnce(op, cur, sch)
	}
	return op, false
}

// addOnce is an add or copy into a list position of cur made "ensure
// present": skip when the list holds the value, a replace of the item
// with the value's keys in a map list, else op as it is (RFC 6902
// semantics, errors included, for the rest).
func addOnce(op jsonOp, cur interface{}, sch schemaInfo) (jsonOp, bool) {
	if len(op.path) == 0 || !isListPosition(op.path[len(op.path)-1]) {
		return op, false
	}
	parent := op.path[:len(op.path)-1]
	list, ok := lookup(cur, parent).([]interface{})
	if !ok {
		return op, false // RFC 6902 semantics (an object key that looks like an index, or an error below)
	}
	val := op.Value
	if op.Op == "copy" {
		if val = lookup(cur, op.from); val == nil {
			return op, false // the copy reports the missing source below
		}
	}
	if indexOf(list, val, nil) >= 0 {
		return op, true // already present
	}
	var keys []string
	if sch != nil {
		keys = sch.ListKeys(parent)
	}
	if at := indexOf(list, val, keys); at >= 0 {
		return jsonOp{Op: "replace", Path: pointer(parent) + "/" + strconv.Itoa(at), Value: merged(list[at], val), HasValue: true}, false
	}
	return op, false
}

// applyOne applies a single operation with evanphx/json-patch.
func applyOne(op jsonOp, doc []byte) ([]byte, error) {
	m := map[string]interface{}{"op": op.Op, "path": op.Path}
	if op.From != "" || op.Op == "copy" || op.Op == "move" {
		m["from"] = op.From
	}
	if op.HasValue {
		m["value"] = op.Value
	}
	raw, err := json.Marshal([]interface{}{m})
	if err != nil {
		return nil, err
	}
	p, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		return nil, err
	}
	return p.Apply(doc)
}

// writtenLater reports whether an operation after ops[i] writes ops[i]'s
// path, a path above it, or a path below it.
func writtenLater(ops []jsonOp, i int) bool {
	for _, later := range ops[i+1:] {
		if later.Op == "test" {
			continue
		}
		if hasPrefix(later.path, ops[i].path) || hasPrefix(ops[i].path, later.path) {
			return true
		}
		// A list position written by "-" is below the list.
		if n := len(later.path); n > 0 && later.path[n-1] == "-" && hasPrefix(ops[i].path, later.path[:n-1]) {
			return true
		}
	}
	return false
}

func hasPrefix(path, prefix []string) bool {
	if len(prefix) > len(path) {
		return false
	}
	for i := range prefix {
		if path[i] != prefix[i] {
			return false
		}
	}
	return true
}

// lookup returns the value at path in doc, nil when there is none.
func lookup(doc interface{}, path []string) interface{} {
	for _, t := range path {
		switch d := doc.(type) {
		case map[string]interface{}:
			doc = d[t]
		case []interface{}:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(d) {
				return nil
			}
			doc = d[i]
		default:
			return nil
		}
	}
	return doc
}

// indexOf returns the position of the item of list that is val's: with no
// keys, an item that contains val (every field of val, recursively, with
// the same value); with keys, an item with val's values of all the keys.
// -1 when there is none, or when val lacks a key.
func indexOf(list []interface{}, val interface{}, keys []string) int {
	if len(keys) == 0 {
		for i, item := range list {
			if contains(item, val) {
				return i
			}
		}
		return -1
	}
	vm, ok := val.(map[string]interface{})
	if !ok {
		return -1
	}
	for _, k := range keys {
		if _, ok := vm[k]; !ok {
			return -1
		}
	}
	for i, item := range list {
		im, ok := item.(map[string]interface{})
		if !ok {
			continue
		}
		same := true
		for _, k := range keys {
			if !reflect.DeepEqual(im[k], vm[k]) {
				same = false
				break
			}
		}
		if same {
			return i
		}
	}
	return -1
}

// contains reports whether have holds want: objects every field of want
// (recursively), lists the same number of items each holding want's,
// other values equal.
func contains(have, want interface{}) bool {
	switch w := want.(type) {
	case map[string]interface{}:
		h, ok := have.(map[string]interface{})
		if !ok {
			return false
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok || !contains(hv, wv) {
				return false
			}
		}
		return true
	case []interface{}:
		h, ok := have.([]interface{})
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(h[i], w[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(have, want)
	}
}

// merged returns item with val's fields set over it, recursively for
// objects (RFC 7386 without removals): the other fields of the item stay.
func merged(item, val interface{}) interface{} {
	im, ok1 := item.(map[string]interface{})
	vm, ok2 := val.(map[string]interface{})
	if !ok1 || !ok2 {
		return val
	}
	out := make(map[string]interface{}, len(im))
	for k, v := range im {
		out[k] = v
	}
	for k, v := range vm {
		out[k] = merged(im[k], v)
	}
	return out
}
