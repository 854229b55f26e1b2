/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

import (
	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/internal/conflicts"
	"github.com/fieldops/fieldops/ownershipcore"
)

// builtinStrategy returns the built-in conflict strategy of a
// conflictPolicy other than Plugin: Force ("" too, the API default), Fail
// or Yield (conflicts.Policy). Any other value, Plugin included, is an
// InvalidPatch skeleton.Terminal error: a strategy is never nil.
func builtinStrategy(p v1alpha1.ConflictPolicy) (ownershipcore.ConflictStrategy, error) {
	if s, ok := conflicts.Policy(p); ok {
		return s, nil
	}
	return nil, skeleton.Terminal(ReasonInvalidPatch, "conflictPolicy %q is not one of Force, Fail, Yield or Plugin", p)
}

// fallbackStrategy returns the strategy of a conflictPluginFallback: Fail
// for "" (the default), else Force, Fail or Yield (conflicts.Fallback).
// Any other value, Plugin included (a plugin cannot be its own fallback),
// is an InvalidPatch skeleton.Terminal error.
func fallbackStrategy(p v1alpha1.ConflictFallbackPolicy) (ownershipcore.ConflictStrategy, error) {
	if s, ok := conflicts.Fallback(p); ok {
		return s, nil
	}
	return nil, skeleton.Terminal(ReasonInvalidPatch, "conflictPluginFallback %q is not one of Force, Fail or Yield", p)
}
