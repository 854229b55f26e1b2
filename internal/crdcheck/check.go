/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package crdcheck

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// Severity says whether a finding makes the object fail or only changes
// its ownership.
type Severity string

const (
	// Break: a write that worked before the change fails after it. Either
	// the apiserver's field manager cannot convert the stored object with
	// the new schema, so every server-side apply of it fails (by any
	// manager, of any field) until the list is fixed by hand; or every
	// write fails validation (a list-map key the new schema requires is
	// missing); or the routine apply of a manager fails: it applies the
	// duplicates the new keys forbid, or a list it shared entry by entry
	// became atomic and it now conflicts with the other owners.
	Break Severity = "Break"
	// Warning: writes succeed, but who owns the list, and so who may
	// apply it without a conflict or silently replace it, changes.
	Warning Severity = "Warning"
)

// Finding is one list or map of one object and what the change does to
// it.
type Finding struct {
	Severity Severity
	// Path is the concrete path in the object: .spec.ports[2].protocols.
	Path   string
	Change Change
	// Reason says what breaks and why; for a Break, the message the
	// apiserver's field manager (structured-merge-diff) gives.
	Reason string
}

// Check returns what changes (of obj's version) do to obj: for each list
// or map at a changed path, structured-merge-diff's own rules for the new
// topology (a map list needs map elements with their keys, a set scalar
// elements; typed/helpers.go) and the ownership rules of the SSA docs
// ("Merge strategy"; api-conventions, "Changing the topology of a
// list"). Findings are in path order. It fails only when obj's
// managedFields do not decode.
func Check(obj *unstructured.Unstructured, changes []Change) ([]Finding, error) {
	owners, err := ownershipcore.Owners(obj)
	if err != nil {
		return nil, err
	}
	version := obj.GetAPIVersion()
	if i := strings.LastIndex(version, "/"); i >= 0 {
		version = version[i+1:]
	}
	var out []Finding
	for _, c := range changes {
		if c.Version != version {
			continue
		}
		for _, at := range instances(obj.Object, c.Path, "", fieldset.Path{}, true) {
			out = append(out, checkOne(c, at, owners)...)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// instance is a value at a changed path.
type instance struct {
	path  string
	value interface{}
	// fp is the path in managedFields' form; valid only when no list lies
	// between the root and the value (list elements are named by the
	// old topology's keys, which a changed schema may not give).
	fp      fieldset.Path
	fpValid bool
}

func instances(v interface{}, path Path, at string, fp fieldset.Path, fpValid bool) []instance {
	if len(path) == 0 {
		return []instance{{path: at, value: v, fp: fp, fpValid: fpValid}}
	}
	var out []instance
	s := path[0]
	switch {
	case s.Items:
		l, _ := v.([]interface{})
		for i, e := range l {
			out = append(out, instances(e, path[1:], at+"["+strconv.Itoa(i)+"]", nil, false)...)
		}
	case s.Values:
		m, _ := v.(map[string]interface{})
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, instances(m[k], path[1:], at+"."+k, fieldset.WithField(fp, k), fpValid)...)
		}
	default:
		m, _ := v.(map[string]interface{})
		if e, ok := m[s.Field]; ok && e != nil {
			out = append(out, instances(e, path[1:], at+"."+s.Field, fieldset.WithField(fp, s.Field), fpValid)...)
		}
	}
	return out
}

// checkOne finds what the change c does to the instance at: to the
// items of a list whose type or keys change, and to the managers that own
// it (checkHolders).
func checkOne(c Change, at instance, owners ownershipcore.ManagedFields) []Finding {
	var out []Finding
	add := func(sev Severity, path, reason string, args ...interface{}) {
		out = append(out, Finding{Severity: sev, Path: path, Change: c, Reason: fmt.Sprintf(reason, args...)})
	}
	list, isList := at.value.([]interface{})
	if c.List && isList {
		switch c.New.Type {
		case "map":
			checkMapList(c, at, list, owners, add)
		case "set":
			checkSet(c, at, list, owners, add)
		}
	}
	if len(owners) == 0 {
		add(Warning, at.path, "the object has no managedFields: its first server-side apply makes %q (Update) own every field, this one as it is then", "before-first-apply")
		return out
	}
	if !at.fpValid {
		return out
	}
	checkHolders(c, at.path, ownersOf(owners, at.fp), add)
	return out
}

// checkHolders finds what the change c does to the managers (holders)
// that own the field at path or its entries.
func checkHolders(c Change, path string, holders []string, add func(Severity, string, string, ...interface{})) {
	if len(holders) == 0 {
		return
	}
	wasAtomic, isAtomic := c.Old.Type == "atomic", c.New.Type == "atomic"
	switch {
	case wasAtomic && !isAtomic:
		add(Warning, path, "%s owned it whole (atomic); now %s only the field itself, none of its entries (SSA docs, \"Merge strategy\"): another manager may apply entries without a conflict, and the owner's apply no longer removes the entries it drops", strings.Join(holders, ", "), pronoun(holders))
	case !wasAtomic && isAtomic && len(holders) > 1:
		add(Break, path, "%s own entries of it; as atomic, the first write of the object after the change makes each of them own it whole (managedFields keep the field, not the entries; the values stay), so the next apply by one of them that changes it fails with a conflict with the others (\"Apply failed with 1 conflict: conflict with ...\"), and a forced one replaces it whole, dropping the others' entries", strings.Join(holders, ", "))
	case c.Old.Type == "map" && c.New.Type == "map" && len(holders) > 0:
		add(Warning, path, "managedFields name its entries by the keys [%s]; with the keys [%s] those entries are other fields: %s lose ownership of the entries they applied", strings.Join(c.Old.Keys, ","), strings.Join(c.New.Keys, ","), strings.Join(holders, ", "))
	}
}

func pronoun(holders []string) string {
	if len(holders) == 1 {
		return "it owns"
	}
	return "they own"
}

// ownersOf names the managers whose field set holds fp or a field under
// it, as "manager" (Operation).
func ownersOf(owners ownershipcore.ManagedFields, fp fieldset.Path) []string {
	var out []string
	for _, e := range owners {
		held := fieldset.HasAtOrBelow(e.Fields, fp)
		if name := fmt.Sprintf("%q (%s)", e.Manager, e.Operation); held && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// checkMapList applies structured-merge-diff's rules for the elements of
// an associative list with keys (typed/helpers.go,
// keyedAssociativeListItemToPathElement) and its duplicate check
// (typed/validate.go), which the apiserver relaxes for stored objects but
// not for an applied configuration.
func checkMapList(c Change, at instance, list []interface{}, owners ownershipcore.ManagedFields, add func(Severity, string, string, ...interface{})) {
	seen := map[string][]int{}
	var order []string
	for i, e := range list {
		at := at.path + "[" + strconv.Itoa(i) + "]"
		if e == nil {
			add(Break, at, "associative list with keys may not have a null element")
			continue
		}
		m, ok := e.(map[string]interface{})
		if !ok {
			add(Break, at, "associative list with keys may not have non-map elements (the element is %s)", kindOf(e))
			continue
		}
		var key, missing []string
		for _, k := range c.New.Keys {
			if v, ok := m[k]; ok {
				b, _ := json.Marshal(v)
				key = append(key, fmt.Sprintf("%s=%s", k, b))
			} else if !slices.Contains(c.KeyDefaults, k) {
				missing = append(missing, k)
			}
		}
		if len(key) == 0 && len(missing) > 0 {
			add(Break, at, "associative list with keys has an element that omits all key fields %q (and doesn't have default values for any key fields)", c.New.Keys)
			continue
		}
		if len(missing) > 0 {
			// The apiserver accepts a list-map key only if it is required
			// or defaulted; one without a default is required.
			add(Break, at, "the element omits the key fields %q, which the new schema requires (a list-map key must be required or defaulted): every write of the object, apply, update or patch, fails validation (%s.%s: Required value)", missing, strings.TrimPrefix(at, "."), missing[0])
			continue
		}
		k := "[" + strings.Join(key, ",") + "]"
		if _, ok := seen[k]; !ok {
			order = append(order, k)
		}
		seen[k] = append(seen[k], i)
	}
	for _, k := range order {
		if dup := seen[k]; len(dup) > 1 {
			duplicates(c, at, list, dup, owners, add, fmt.Sprintf("duplicate entries for key %s", k))
		}
	}
}

// duplicates reports elements dup of a list whose new topology names them
// alike. The apiserver keeps them in the stored object and lets updates
// and patches through, but structured-merge-diff refuses them in an
// applied configuration: a manager that applied all of them (it owns the
// atomic list, or each of them) fails on its next apply of the same
// configuration. Any other apply that names the key replaces them all
// with its one entry.
func duplicates(c Change, at instance, list []interface{}, dup []int, owners ownershipcore.ManagedFields, add func(Severity, string, string, ...interface{}), what string) {
	path := at.path + "[" + strconv.Itoa(dup[len(dup)-1]) + "]"
	idx := make([]string, len(dup))
	for i, d := range dup {
		idx[i] = strconv.Itoa(d)
	}
	var appliers []string
	if at.fpValid {
		for _, e := range owners {
			if e.Operation != "Apply" {
				continue
			}
			all := true
			for _, d := range dup {
				if !holds(e.Fields, at.fp, c.Old, list[d]) {
					all = false
					break
				}
			}
			if name := fmt.Sprintf("%q (%s)", e.Manager, e.Operation); all && !slices.Contains(appliers, name) {
				appliers = append(appliers, name)
			}
		}
	}
	if len(appliers) > 0 {
		add(Break, path, "%s (elements %s): %s applied them all, so its next apply of the same configuration fails (\"%s: %s\"); updates and patches still succeed, and an apply naming the key once replaces them all with its entry", what, strings.Join(idx, ", "), strings.Join(appliers, ", "), strings.TrimPrefix(at.path, "."), what)
		return
	}
	add(Warning, path, "%s (elements %s): the apiserver keeps them in the stored object and lets updates and patches through, but no apply may name them all, and an apply naming the key once replaces them all with its entry", what, strings.Join(idx, ", "))
}

// holds reports whether a field set holds element e of the list at fp,
// named as the old topology names it: the list itself when it was
// atomic, the entry's key or value when it was a map or set.
func holds(set *fieldset.Set, fp fieldset.Path, old Topology, e interface{}) bool {
	switch old.Type {
	case "map":
		m, ok := e.(map[string]interface{})
		if !ok {
			return false
		}
		return fieldset.HasAtOrBelow(set, fieldset.WithItemKeys(fp, m, old.Keys))
	case "set":
		return fieldset.HasAtOrBelow(set, fieldset.WithItemValue(fp, e))
	default:
		return fieldset.HasAtOrBelow(set, fp)
	}
}

// checkSet applies structured-merge-diff's rules for the elements of a
// set (typed/helpers.go, setItemToPathElement), which refuse map
// elements even when the items are x-kubernetes-map-type: atomic.
func checkSet(c Change, at instance, list []interface{}, owners ownershipcore.ManagedFields, add func(Severity, string, string, ...interface{})) {
	const cleared = "; updates and patches still succeed, but clear the object's managedFields (the field manager cannot convert it, so every manager loses every field it owned)"
	seen := map[string][]int{}
	var order []string
	for i, e := range list {
		path := at.path + "[" + strconv.Itoa(i) + "]"
		switch e.(type) {
		case map[string]interface{}:
			add(Break, path, "associative list without keys has an element that's a map type"+cleared)
			continue
		case []interface{}:
			add(Break, path, "not supported: associative list with lists as elements"+cleared)
			continue
		case nil:
			add(Break, path, "associative list without keys has an element that's an explicit null"+cleared)
			continue
		}
		b, _ := json.Marshal(e)
		if _, ok := seen[string(b)]; !ok {
			order = append(order, string(b))
		}
		seen[string(b)] = append(seen[string(b)], i)
	}
	for _, v := range order {
		if dup := seen[v]; len(dup) > 1 {
			duplicates(c, at, list, dup, owners, add, "duplicate entries for key [="+v+"]")
		}
	}
}

func kindOf(v interface{}) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []interface{}:
		return "a list"
	default:
		return "a number"
	}
}

// Breaks reports whether any finding is a Break.
func Breaks(findings []Finding) bool {
	return slices.ContainsFunc(findings, func(f Finding) bool { return f.Severity == Break })
}
