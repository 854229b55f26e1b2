/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package inputlimits

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

const (
	// MaxDepth is the deepest nesting of objects and lists a patch or a
	// workload's object may hold, the top-level object counting as 1; for
	// a JSON patch, an operation's path segments count too.
	MaxDepth = 64
	// MaxPatchBytes is the largest spec.patch, in bytes of JSON.
	MaxPatchBytes = 512 << 10
	// MaxJSONPatchOps is the most operations a JSON patch may hold.
	MaxJSONPatchOps = 1000
)

// ErrLimit is wrapped by every error of this package.
var ErrLimit = errors.New("over fieldops's input limits")

// Depth returns how deeply raw, one JSON value, nests objects and lists (0
// for a scalar, 1 for a flat object), reading no further once max is
// passed (it then returns a depth above max). Its cost is linear in
// len(raw) and it allocates no tree. A value that does not decode is an
// error.
func Depth(raw []byte, max int) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if depth != 0 {
				return 0, io.ErrUnexpectedEOF
			}
			break
		}
		if err != nil {
			return 0, err
		}
		d, ok := tok.(json.Delim)
		if !ok {
			continue
		}
		switch d {
		case '{', '[':
			depth++
			if depth > deepest {
				deepest = depth
			}
			if deepest > max {
				return deepest, nil
			}
		default:
			depth--
		}
	}
	return deepest, nil
}

// Patch checks a FieldPatch's spec.patch (raw JSON; jsonPatch when it is
// an RFC 6902 operation list) against MaxPatchBytes, MaxDepth and
// MaxJSONPatchOps. The error wraps ErrLimit and names the limit, never a
// value. Input that does not decode is left to the patch's own validation
// (nil here).
func Patch(raw []byte, jsonPatch bool) error {
	if len(raw) > MaxPatchBytes {
		return fmt.Errorf("the patch is %d bytes, more than %d: %w", len(raw), MaxPatchBytes, ErrLimit)
	}
	if !jsonPatch {
		return object("the patch", raw)
	}
	var ops []struct {
		Path  string          `json:"path"`
		From  string          `json:"from"`
		Value json.RawMessage `json:"value"`
	}
	if json.Unmarshal(raw, &ops) != nil {
		if d, err := Depth(raw, MaxDepth); err == nil && d > MaxDepth {
			return fmt.Errorf("the patch nests more than %d levels deep: %w", MaxDepth, ErrLimit)
		}
		return nil
	}
	if len(ops) > MaxJSONPatchOps {
		return fmt.Errorf("the JSON patch has %d operations, more than %d: %w", len(ops), MaxJSONPatchOps, ErrLimit)
	}
	for i, op := range ops {
		segments := max(strings.Count(op.Path, "/"), strings.Count(op.From, "/"))
		if segments > MaxDepth {
			return fmt.Errorf("JSON patch op %d: its path has more than %d segments: %w", i+1, MaxDepth, ErrLimit)
		}
		if len(op.Value) == 0 {
			continue
		}
		if d, err := Depth(op.Value, MaxDepth); err == nil && segments+d > MaxDepth {
			return fmt.Errorf("JSON patch op %d: its path and value nest more than %d levels deep: %w", i+1, MaxDepth, ErrLimit)
		}
	}
	return nil
}

// Object checks one object of a ManagedWorkload (raw JSON) against
// MaxDepth. The error wraps ErrLimit.
func Object(raw []byte) error { return object("the object", raw) }

func object(what string, raw []byte) error {
	d, err := Depth(raw, MaxDepth)
	if err == nil && d > MaxDepth {
		return fmt.Errorf("%s nests more than %d levels deep: %w", what, MaxDepth, ErrLimit)
	}
	return nil
}
