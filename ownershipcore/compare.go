/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"math"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// Redefaulted reports whether answer, the apiserver's answer to manager's
// write on before, differs from predicted only in fields predicted lacks
// that answer holds and records as manager's alone, in an Update entry:
// fields the write removed that the apiserver's defaulting set again (a
// Deployment's replicas), which the field manager records as the writer's
// change. The model runs no defaulting, so it cannot predict them.
func (m Model) Redefaulted(before, predicted, answer State, manager string) bool {
	predicted, answer = integral(predicted), integral(answer)
	ps, err1 := m.contentSet(predicted.Object)
	as, err2 := m.contentSet(answer.Object)
	if err1 != nil || err2 != nil {
		return false
	}
	extra := as.Difference(ps)
	others := fieldpath.NewSet()
	owners := make(ManagedFields, 0, len(answer.Owners))
	for _, e := range answer.Owners {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == "" {
			e = Entry{ManagerKey: e.ManagerKey, Time: e.Time, Fields: e.Fields.Difference(extra)}
		} else {
			others = others.Union(e.Fields)
		}
		owners = append(owners, e)
	}
	extra = extra.Difference(others)
	if extra.Empty() {
		return false
	}
	content, err := m.removeValues(answer.Object, extra, others)
	if err != nil {
		return false
	}
	return m.Compare(before, predicted, State{Object: content, Owners: owners, SamePaths: answer.SamePaths}) == ""
}

// Compare describes how answer, the apiserver's answer to a write on
// before, differs from predicted, the model's state for that write (as
// Diff, in fields: "" when they agree), apart from what the model leaves
// to the apiserver (defaulted): fields its defaulting or a mutating
// admission plugin added that no entry owns, additions inside an atomic
// list or map, values nobody owns that the write left alone. Numbers are
// JSON numbers (integral), a built-in kind is compared in its Go type's
// form (canonical). Managed-fields times, resourceVersion, generation, uid
// and creationTimestamp are not compared.
func (m Model) Compare(before, predicted, answer State) string {
	predicted, answer = integral(predicted), integral(answer)
	got := m.defaulted(before, predicted, answer)
	return m.namedDiff(predicted, got)
}

// integral is s with every whole number of its content an int64, as the
// apiserver's JSON decoding reads it (an intent decoded elsewhere may hold
// 3 as the float64 3): a number is compared as a JSON number.
func integral(s State) State {
	content, _ := integralValue(s.Object.Object).(map[string]interface{})
	return State{Object: &unstructured.Unstructured{Object: content}, Owners: s.Owners, SamePaths: s.SamePaths, setAside: s.setAside}
}

// canonical is s with its content as the Go type of its kind encodes it,
// for a built-in kind (client-go's scheme): the apiserver stores such an
// object in that form, so a value an intent gives in another spelling of
// the same value (a quantity "0.5" the apiserver stores as "500m") is one
// value. Other kinds, and content the Go type cannot read, are as they
// are.
func canonical(s State) State {
	typed, err := clientgoscheme.Scheme.New(s.Object.GroupVersionKind())
	if err != nil {
		return s
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(WithoutManagedFields(s.Object.Object), typed); err != nil {
		return s
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return s
	}
	return State{Object: &unstructured.Unstructured{Object: content}, Owners: s.Owners, SamePaths: s.SamePaths, setAside: s.setAside}
}

// integralValue is a copy of v with whole float64 numbers as int64.
func integralValue(v interface{}) interface{} {
	switch t := v.(type) {
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int64(t)
		}
	case map[string]interface{}:
		out := make(map[string]interface{}, len(t))
		for k, e := range t {
			out[k] = integralValue(e)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(t))
		for i, e := range t {
			out[i] = integralValue(e)
		}
		return out
	}
	return v
}

// CompareOwn is Compare restricted to what a write of manager alone
// decides, whatever other writers did between the read of before and the
// write: manager's entries, and the values at the fields they hold in
// predicted or in answer, or that predicted prunes from before and no
// other entry of predicted or answer owns.
//
// Those fields follow from the entries alone, so the three states are
// first compared cut down to the map keys on the way to them (trimmedTo:
// what lies under a list or under one of the fields is kept whole); only
// when that finds a difference are the whole objects compared, and theirs
// is the answer. A write therefore costs the conversion of the part of
// the object its fields are in, and a difference is named as the whole
// objects name it.
func (m Model) CompareOwn(before, predicted, answer State, manager string) string {
	fields := predicted.ours(manager).Union(answer.ours(manager)).Union(
		before.ours(manager).Difference(predicted.ours(manager)).Difference(othersOf(predicted, manager)).Difference(othersOf(answer, manager)))
	if m.compareOwn(trimmedTo(before, fields), trimmedTo(predicted, fields), trimmedTo(answer, fields), fields, manager) == "" {
		return ""
	}
	return m.compareOwn(before, predicted, answer, fields, manager)
}

// compareOwn is CompareOwn's comparison of the values at fields and of
// manager's entries. predicted's content is converted to a typed value
// once, for both the defaulting and its part.
func (m Model) compareOwn(before, predicted, answer State, fields *fieldpath.Set, manager string) string {
	predicted, answer = integral(predicted), integral(answer)
	pt, err := m.typedContent(predicted.Object)
	if err != nil {
		return "" // its part cannot be taken either
	}
	got := m.defaultedFrom(before, predicted, pt, answer)
	want := partOf(predicted, pt, fields, manager)
	have, err := m.part(got, fields, manager)
	if err != nil {
		return ""
	}
	return m.namedDiff(want, have)
}

// trimmedTo is s with its content cut down to apiVersion, kind and the map
// keys on the way to a field of set; the value of a field of set, and a
// list on the way (its items are named by keys, values or indexes), are
// kept whole. The content shares its values with s's.
func trimmedTo(s State, set *fieldpath.Set) State {
	if s.Object == nil {
		return s
	}
	content := trimmedMap(s.Object.Object, set)
	for _, k := range []string{"apiVersion", "kind"} {
		if v, ok := s.Object.Object[k]; ok {
			content[k] = v
		}
	}
	s.Object = &unstructured.Unstructured{Object: content}
	return s
}

// trimmedMap is trimmedTo's cut of one map.
func trimmedMap(m map[string]interface{}, set *fieldpath.Set) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range m {
		pe := fieldpath.PathElement{FieldName: &k}
		if set.Members.Has(pe) {
			out[k] = v
			continue
		}
		child, ok := set.Children.Get(pe)
		if !ok {
			continue
		}
		if sub, isMap := v.(map[string]interface{}); isMap {
			out[k] = trimmedMap(sub, child)
		} else {
			out[k] = v
		}
	}
	return out
}

// othersOf is every field of s that an entry of another manager than
// manager owns.
func othersOf(s State, manager string) *fieldpath.Set {
	out := fieldpath.NewSet()
	for _, e := range s.Owners {
		if e.Manager != manager {
			out = out.Union(e.Fields)
		}
	}
	return out
}

// part is s with only the values at fields (with the keys of the list
// items they are in) and manager's entries.
func (m Model) part(s State, fields *fieldpath.Set, manager string) (State, error) {
	tv, err := m.typedContent(s.Object)
	if err != nil {
		return State{}, err
	}
	return partOf(s, tv, fields, manager), nil
}

// partOf is part with tv, s's content as a typed value (typedContent).
func partOf(s State, tv *typed.TypedValue, fields *fieldpath.Set, manager string) State {
	content, ok := tv.ExtractItems(fields.Leaves(), typed.WithAppendKeyFields()).AsValue().Unstructured().(map[string]interface{})
	if !ok {
		content = map[string]interface{}{}
	}
	var owners ManagedFields
	for _, e := range s.Owners {
		if e.Manager == manager {
			owners = append(owners, e)
		}
	}
	out := &unstructured.Unstructured{Object: content}
	out.SetGroupVersionKind(s.Object.GroupVersionKind())
	return State{Object: out, Owners: owners, SamePaths: s.SamePaths}
}

// namedDiff is Diff of the states' canonical forms (canonical), with the
// fields whose values differ named (JSON paths down to the first list,
// never values).
func (m Model) namedDiff(want, got State) string {
	want, got = canonical(want), canonical(got)
	diff := Diff(want, got)
	if !strings.HasPrefix(diff, "content differs") {
		return diff
	}
	var named []string
	contentPaths("", comparableContent(want.Object), comparableContent(got.Object), &named)
	sort.Strings(named)
	return strings.Replace(diff, "content differs", "content differs at "+strings.Join(named, ", "), 1)
}

// contentPaths appends to out the paths below prefix where a and b differ:
// keys of maps, a list as a whole.
func contentPaths(prefix string, a, b interface{}, out *[]string) {
	am, aok := a.(map[string]interface{})
	bm, bok := b.(map[string]interface{})
	if !aok || !bok {
		if !equality.Semantic.DeepEqual(a, b) {
			*out = append(*out, prefix)
		}
		return
	}
	for k, av := range am {
		bv, ok := bm[k]
		switch {
		case !ok:
			*out = append(*out, prefix+"."+k+" (missing)")
		default:
			contentPaths(prefix+"."+k, av, bv, out)
		}
	}
	for k := range bm {
		if _, ok := am[k]; !ok {
			*out = append(*out, prefix+"."+k+" (unplanned)")
		}
	}
}

// defaulted is got without what the apiserver's defaulting or a mutating
// admission plugin added, which the model leaves to it:
//   - the fields after lacks that got holds with no owner (a removed field
//     with a default comes back); a list item's key field goes last, so the
//     item is found by its keys until then;
//   - what got's value of an atomic list or map (a leaf of both field
//     sets) holds besides after's, where it holds all of after's (a
//     LimitRange's limits item gains defaultRequest);
//   - another value, at a field no entry of got owns, that the write left
//     as before had it: the apiserver's registry strategy keeps such
//     values (a DaemonSet's deprecated.daemonset.template.generation
//     annotation counts its template's changes).
//
// A field got holds besides that an entry owns stays: a divergence.
func (m Model) defaulted(before, after, got State) State {
	at, err := m.typedContent(after.Object)
	if err != nil {
		return got
	}
	return m.defaultedFrom(before, after, at, got)
}

// defaultedFrom is defaulted with at, after's content as a typed value
// (typedContent).
func (m Model) defaultedFrom(before, after State, at *typed.TypedValue, got State) State {
	as, err1 := at.ToFieldSet()
	gs, err2 := m.contentSet(got.Object)
	if err1 != nil || err2 != nil {
		return got
	}
	owned := got.Owners.Union()
	extra := gs.Difference(as).Difference(owned)
	keys := keyFields(extra)
	content, err := m.removeValues(got.Object, extra.Difference(keys), owned)
	if err == nil {
		content, err = m.removeValues(content, keys, owned)
	}
	if err != nil {
		return got
	}
	as.Intersection(gs).Iterate(func(p fieldpath.Path) {
		av, ok := valueAt(after.Object.Object, p)
		gv, found := valueAt(content.Object, p)
		if !ok || !found || equality.Semantic.DeepEqual(av, gv) {
			return
		}
		kept := false
		if before.Object != nil {
			bv, had := valueAt(before.Object.Object, p)
			kept = had && !owned.Has(p) && equality.Semantic.DeepEqual(integralValue(bv), av)
		}
		if kept || adds(av, gv) {
			setAt(content.Object, p, av) // after is a copy of its own (integral)
		}
	})
	return State{Object: content, Owners: got.Owners, SamePaths: got.SamePaths}
}

// keyFields are the paths of set that name a key field of the list item
// they are in.
func keyFields(set *fieldpath.Set) *fieldpath.Set {
	out := fieldpath.NewSet()
	set.Iterate(func(p fieldpath.Path) {
		if n := len(p); n >= 2 && p[n-1].FieldName != nil && p[n-2].Key != nil {
			for _, k := range *p[n-2].Key {
				if k.Name == *p[n-1].FieldName {
					out.Insert(p)
				}
			}
		}
	})
	return out
}

// adds reports whether g is a with things added: every key of a map of a
// with the same value or more, lists of the same length item by item,
// scalars equal.
func adds(a, g interface{}) bool {
	switch at := a.(type) {
	case map[string]interface{}:
		gt, ok := g.(map[string]interface{})
		if !ok {
			return false
		}
		for k, v := range at {
			if gv, ok := gt[k]; !ok || !adds(v, gv) {
				return false
			}
		}
		return true
	case []interface{}:
		gt, ok := g.([]interface{})
		if !ok || len(gt) != len(at) {
			return false
		}
		for i := range at {
			if !adds(at[i], gt[i]) {
				return false
			}
		}
		return true
	}
	return equality.Semantic.DeepEqual(a, g)
}

// setAt sets the value at p in obj (which holds it) to v.
func setAt(obj map[string]interface{}, p fieldpath.Path, v interface{}) {
	var parent interface{} = obj
	if len(p) > 1 {
		parent, _ = valueAt(obj, p[:len(p)-1])
	}
	_ = set(parent, p[len(p)-1], v)
}
