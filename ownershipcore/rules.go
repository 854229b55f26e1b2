/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// ManagerMatch selects field managers by name and, optionally, operation.
//
// Manager is a glob over the whole name: `*` matches any run of characters
// ('/' included, so "fieldops-*" matches "fieldops-fieldpatch/ns/name"),
// `?` matches one character; every other character matches itself. An
// empty Operation matches Apply and Update entries alike.
type ManagerMatch struct {
	Manager   string
	Operation metav1.ManagedFieldsOperationType
}

// Matches reports whether the entry of manager with operation op matches.
func (m ManagerMatch) Matches(manager string, op metav1.ManagedFieldsOperationType) bool {
	if m.Operation != "" && op != m.Operation {
		return false
	}
	return glob(m.Manager, manager)
}

func (m ManagerMatch) String() string {
	if m.Operation == "" {
		return fmt.Sprintf("%q", m.Manager)
	}
	return fmt.Sprintf("%q (%s)", m.Manager, m.Operation)
}

// glob reports whether name matches pattern, where `*` matches any run of
// characters (including none and '/') and `?` exactly one character. It
// never fails: there is no escape and no character class, so every
// pattern is valid. Runs in O(len(pattern)·len(name)) at worst.
func glob(pattern, name string) bool {
	p, n := []rune(pattern), []rune(name)
	// Greedy match with backtracking to the last star: the classic
	// wildcard algorithm, linear unless stars must be re-tried.
	pi, ni, star, mark := 0, 0, -1, 0
	for ni < len(n) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == n[ni]):
			pi++
			ni++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ni
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			ni = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// ManagerRules decide conflicts with named field managers before a default
// strategy does: a conflict whose owner matches YieldTo is yielded (the
// field stays with its owner and leaves the intent), else one matching
// ForceOver is forced, else Default decides it (a Static policy or a
// plugin, which is then asked only about the rest). YieldTo is checked
// first, so a manager in both lists is yielded to.
//
// This is the per-manager policy Argo CD (#2913, #9071) and Flux
// kustomize-controller (#982, #1294) users ask for: leave spec.replicas to
// the HorizontalPodAutoscaler's manager, force everyone else.
type ManagerRules struct {
	YieldTo   []ManagerMatch
	ForceOver []ManagerMatch
	// Default decides every other conflict; nil means Static(DecisionFail).
	Default ConflictStrategy
}

var _ ConflictStrategy = ManagerRules{}

// Empty reports whether r names no manager (Default alone decides).
func (r ManagerRules) Empty() bool { return len(r.YieldTo) == 0 && len(r.ForceOver) == 0 }

// Decides returns the decision the rules make for a field owned by
// manager with operation op (DecisionYield or DecisionForce), and false
// when no rule names it. A field of ours that a yielded-to manager takes
// is its field, not drift to repair.
func (r ManagerRules) Decides(manager string, op metav1.ManagedFieldsOperationType) (Decision, bool) {
	if _, ok := first(r.YieldTo, manager, op); ok {
		return DecisionYield, true
	}
	if _, ok := first(r.ForceOver, manager, op); ok {
		return DecisionForce, true
	}
	return "", false
}

func first(ms []ManagerMatch, manager string, op metav1.ManagedFieldsOperationType) (ManagerMatch, bool) {
	for _, m := range ms {
		if m.Matches(manager, op) {
			return m, true
		}
	}
	return ManagerMatch{}, false
}

// Resolve implements ConflictStrategy. Default gets the conflicts no rule
// decides, in their order; its answer must have one Resolution per
// conflict it was given, else the apply fails.
func (r ManagerRules) Resolve(ctx context.Context, obj *unstructured.Unstructured, manager string, conflicts []Conflict) ([]Resolution, error) {
	out := make([]Resolution, len(conflicts))
	var rest []Conflict
	var at []int
	for i, c := range conflicts {
		if m, ok := first(r.YieldTo, c.Manager, c.Operation); ok {
			out[i] = Resolution{Decision: DecisionYield, Message: "yieldTo " + m.String()}
			continue
		}
		if m, ok := first(r.ForceOver, c.Manager, c.Operation); ok {
			out[i] = Resolution{Decision: DecisionForce, Message: "forceOver " + m.String()}
			continue
		}
		rest, at = append(rest, c), append(at, i)
	}
	if len(rest) == 0 {
		return out, nil
	}
	def := r.Default
	if def == nil {
		def = Static(DecisionFail)
	}
	got, err := def.Resolve(ctx, obj, manager, rest)
	if err != nil {
		return nil, err
	}
	if len(got) != len(rest) {
		return nil, fmt.Errorf("conflict strategy answered %d decisions for %d conflicts", len(got), len(rest))
	}
	for j, i := range at {
		out[i] = got[j]
	}
	return out, nil
}

// Drift narrows diff (fields of live that differ from an intent, as
// OwnedDiff returns them) to the drift manager should repair: it leaves
// out fields now owned by a manager that yields names (their fields, not
// drift; yields may be nil). It returns what is left and the first manager
// (by name) other than manager that owns part of it: the drifter, "" when
// nobody does (the fields were removed).
func Drift(live *unstructured.Unstructured, diff *fieldpath.Set, manager string, yields func(string, metav1.ManagedFieldsOperationType) bool) (string, *fieldpath.Set, error) {
	if diff == nil || diff.Empty() {
		return "", fieldpath.NewSet(), nil
	}
	owners, err := Owners(live)
	if err != nil {
		return "", diff, err
	}
	others := owners.OwnersOf(diff, manager)
	if yields != nil {
		for _, e := range others {
			if yields(e.Manager, e.Operation) {
				diff = diff.Difference(e.Fields)
			}
		}
		others = owners.OwnersOf(diff, manager)
	}
	if managers := others.Managers(); len(managers) > 0 {
		return managers[0], diff, nil
	}
	return "", diff, nil
}
