/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"strings"
	"testing"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/ownershipcore"
)

// Every conflictPolicy and conflictPluginFallback value maps to a strategy
// or to an InvalidPatch error, never to a nil strategy (issue 15, defect 6).
func TestStrategyLookup(t *testing.T) {
	for _, tc := range []struct {
		policy   v1alpha1.ConflictPolicy
		fallback bool
		want     ownershipcore.ConflictStrategy // nil: an error
	}{
		{policy: "", want: ownershipcore.Static(ownershipcore.DecisionForce)},
		{policy: "Force", want: ownershipcore.Static(ownershipcore.DecisionForce)},
		{policy: "Fail", want: ownershipcore.Static(ownershipcore.DecisionFail)},
		{policy: "Yield", want: ownershipcore.Static(ownershipcore.DecisionYield)},
		{policy: "Plugin"},
		{policy: "force"},
		{policy: "Bogus"},
		{policy: "", fallback: true, want: ownershipcore.Static(ownershipcore.DecisionFail)},
		{policy: "Force", fallback: true, want: ownershipcore.Static(ownershipcore.DecisionForce)},
		{policy: "Fail", fallback: true, want: ownershipcore.Static(ownershipcore.DecisionFail)},
		{policy: "Yield", fallback: true, want: ownershipcore.Static(ownershipcore.DecisionYield)},
		{policy: "Plugin", fallback: true},
		{policy: "Bogus", fallback: true},
	} {
		name := "conflictPolicy=" + string(tc.policy)
		var got ownershipcore.ConflictStrategy
		var err error
		if tc.fallback {
			name = "conflictPluginFallback=" + string(tc.policy)
			got, err = fallbackStrategy(v1alpha1.ConflictFallbackPolicy(tc.policy))
		} else {
			got, err = builtinStrategy(tc.policy)
		}
		t.Run(name, func(t *testing.T) {
			if tc.want != nil {
				if err != nil || got != tc.want {
					t.Fatalf("got %v, %v; want %v", got, err, tc.want)
				}
				return
			}
			te, ok := skeleton.Reason(err)
			if got != nil || !ok || te.Reason != ReasonInvalidPatch || !skeleton.IsTerminal(err) || !strings.Contains(err.Error(), string(tc.policy)) {
				t.Fatalf("got %v, %v; want no strategy and a terminal InvalidPatch error naming %q", got, err, tc.policy)
			}
		})
	}
}
