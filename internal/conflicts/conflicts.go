/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package conflicts turns the API's conflict rules (yieldTo, forceOver)
// into the ownership core's ManagerRules, for the FieldPatch and
// ManagedWorkload controllers alike.
package conflicts

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/ownershipcore"
)

// Rules returns rules as ownershipcore.ManagerRules deciding the conflicts
// they name, and def (a policy's strategy, or a plugin) the rest. When
// rules name no manager, it returns def itself.
func Rules(rules v1alpha1.ConflictRules, def ownershipcore.ConflictStrategy) ownershipcore.ConflictStrategy {
	r := Of(rules)
	if r.Empty() {
		return def
	}
	r.Default = def
	return r
}

// Yields returns whether a field of ours that manager (with operation op)
// took is left to it rather than repaired: what rules decide for the
// manager, else policyYields (conflictPolicy is Yield).
func Yields(rules v1alpha1.ConflictRules, policyYields bool) func(manager string, op metav1.ManagedFieldsOperationType) bool {
	r := Of(rules)
	return func(manager string, op metav1.ManagedFieldsOperationType) bool {
		if d, ok := r.Decides(manager, op); ok {
			return d == ownershipcore.DecisionYield
		}
		return policyYields
	}
}

// Of returns rules as ownershipcore.ManagerRules without a default.
func Of(rules v1alpha1.ConflictRules) ownershipcore.ManagerRules {
	return ownershipcore.ManagerRules{YieldTo: matches(rules.YieldTo), ForceOver: matches(rules.ForceOver)}
}

func matches(sel []v1alpha1.ManagerSelector) []ownershipcore.ManagerMatch {
	var out []ownershipcore.ManagerMatch
	for _, s := range sel {
		// The CRD's enum admits only Apply, Update or nothing.
		out = append(out, ownershipcore.ManagerMatch{Manager: s.Manager, Operation: metav1.ManagedFieldsOperationType(s.Operation)})
	}
	return out
}

// policies maps a FieldPatch conflictPolicy other than Plugin to its
// built-in strategy ("" is the API default, Force).
var policies = map[v1alpha1.ConflictPolicy]ownershipcore.ConflictStrategy{
	"":                           ownershipcore.Static(ownershipcore.DecisionForce),
	v1alpha1.ConflictPolicyForce: ownershipcore.Static(ownershipcore.DecisionForce),
	v1alpha1.ConflictPolicyFail:  ownershipcore.Static(ownershipcore.DecisionFail),
	v1alpha1.ConflictPolicyYield: ownershipcore.Static(ownershipcore.DecisionYield),
}

// Policy returns the built-in strategy of a FieldPatch conflictPolicy:
// Force ("" too), Fail or Yield; false for Plugin or anything else.
func Policy(p v1alpha1.ConflictPolicy) (ownershipcore.ConflictStrategy, bool) {
	s, ok := policies[p]
	return s, ok
}

// Fallback returns the strategy of a conflictPluginFallback: Fail for ""
// (the default), else Force, Fail or Yield; false for anything else
// (Plugin included: a plugin cannot be its own fallback).
func Fallback(p v1alpha1.ConflictFallbackPolicy) (ownershipcore.ConflictStrategy, bool) {
	switch p {
	case "":
		return policies[v1alpha1.ConflictPolicyFail], true
	case v1alpha1.ConflictFallbackForce, v1alpha1.ConflictFallbackFail, v1alpha1.ConflictFallbackYield:
		return policies[v1alpha1.ConflictPolicy(p)], true
	}
	return nil, false
}

// workloadPolicies maps a ManagedWorkload conflictPolicy to its strategy
// ("" is the API default, Force).
var workloadPolicies = map[v1alpha1.WorkloadConflictPolicy]ownershipcore.ConflictStrategy{
	"":                                   ownershipcore.Static(ownershipcore.DecisionForce),
	v1alpha1.WorkloadConflictPolicyForce: ownershipcore.Static(ownershipcore.DecisionForce),
	v1alpha1.WorkloadConflictPolicyFail:  ownershipcore.Static(ownershipcore.DecisionFail),
	v1alpha1.WorkloadConflictPolicyYield: ownershipcore.Static(ownershipcore.DecisionYield),
}

// Workload returns the conflict strategy of a ManagedWorkload: its
// conflictPolicy (nil for a value the CRD's enum refuses, which fails
// every conflict) under its yieldTo and forceOver rules.
func Workload(policy v1alpha1.WorkloadConflictPolicy, rules v1alpha1.ConflictRules) ownershipcore.ConflictStrategy {
	return Rules(rules, workloadPolicies[policy])
}
