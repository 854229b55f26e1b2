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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

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

// guards are the JSON patch tests that make a patch apply only to the
// object as read: same resourceVersion, same UID.
func guards(live *unstructured.Unstructured) []map[string]interface{} {
	return []map[string]interface{}{
		{"op": "test", "path": "/metadata/uid", "value": string(live.GetUID())},
		{"op": "test", "path": "/metadata/resourceVersion", "value": live.GetResourceVersion()},
	}
}
