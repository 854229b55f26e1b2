/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package fieldpatch

// What a unit's plan is made from besides the target: the intent without
// the ignored fields (ignorePaths, the ignorable-paths plugins), and the
// conflict strategy (a built-in policy, or a plugin with its fallback).

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/conditions"
	"github.com/fieldops/fieldops/controllers/internal/skeleton"
	"github.com/fieldops/fieldops/internal/conflicts"
	"github.com/fieldops/fieldops/internal/patchintent"
	"github.com/fieldops/fieldops/ownershipcore"
	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// decide decides the reconcile (patchintent.Decide) with the intent
// built for the patch type, without ignorePaths and the paths the
// ignorable-paths plugins name (ignore). ignoreFailure is the failure of
// such a plugin, if one failed (its event is recorded here;
// pluginCondition reports it).
func (n *runner) decide(ctx context.Context, p *pass) (_ *patchintent.Decision, ignore *fieldset.Set, ignoreFailure string, _ error) {
	u, spec, live := p.unit, p.spec, p.live
	ignore, err := ownershipcore.ParsePathSet(spec.IgnorePaths)
	if err != nil {
		return nil, nil, "", skeleton.Terminal(ReasonInvalidIgnorePath, "ignorePaths: %v", err)
	}
	extra, failed, err := n.Plugins.IgnoredPaths(ctx, spec.IgnorePlugins, live)
	if err != nil {
		return nil, nil, "", skeleton.Terminal(ReasonPluginUnavailable, "ignorePlugins: %v", err)
	}
	for _, f := range failed {
		ignoreFailure = fmt.Sprintf("%v; no extra paths ignored", f)
		u.event(corev1.EventTypeWarning, ReasonPluginFailed, "%s", ignoreFailure)
	}
	ignore = ignore.Union(extra)
	d, err := patchintent.Decide(p.applier, patchintent.Input{Spec: spec, Status: u.st, Live: live, Manager: p.manager, Ignore: ignore})
	var invalid *patchintent.InvalidError
	switch {
	case errors.As(err, &invalid):
		return nil, nil, ignoreFailure, skeleton.Terminal(ReasonInvalidPatch, "%v", invalid.Err)
	case errors.Is(err, ownershipcore.ErrUnknownKind):
		return nil, nil, ignoreFailure, &skeleton.ReasonError{Reason: ReasonUnknownKind, Err: err}
	case err != nil:
		return nil, nil, ignoreFailure, err
	}
	return d, ignore, ignoreFailure, nil
}

// strategy is the conflict strategy of the patch: a built-in policy, or
// the plugin conflictPlugin with conflictPluginFallback (Fail by default)
// when it fails, the failure reported as a PluginFailed event. A policy or
// fallback it does not know (which admission refuses) is an InvalidPatch
// error, never a nil strategy.
//
// When the plugin is asked, PluginFailure says how it answered: True with
// its failure, or (it answered) ignoreFailure, this reconcile's failure of
// an ignorable-paths plugin, if any.
func (n *runner) strategy(u *unit, ignoreFailure string) (ownershipcore.ConflictStrategy, error) {
	spec := u.spec
	if spec.ConflictPolicy != v1alpha1.ConflictPolicyPlugin {
		s, err := builtinStrategy(spec.ConflictPolicy)
		if err != nil {
			return nil, err
		}
		return conflicts.Rules(spec.ConflictRules, s), nil
	}
	fallback, err := fallbackStrategy(spec.ConflictPluginFallback)
	if err != nil {
		return nil, err
	}
	failed := false
	s, err := n.Plugins.Strategy(spec.ConflictPlugin, fallback, func(err error) {
		failed = true
		msg := fmt.Sprintf("%v; conflicts decided by conflictPluginFallback", err)
		u.event(corev1.EventTypeWarning, ReasonPluginFailed, "%s", msg)
		conditions.SetPluginFailure(&u.st.Conditions, u.gen(), msg)
	})
	if err != nil {
		return nil, skeleton.Terminal(ReasonPluginUnavailable, "conflictPlugin: %v", err)
	}
	// The condition changes only when the plugin is asked: it stays True
	// through reconciles with no conflict, and goes once it answers.
	answered := func() {
		if !failed {
			conditions.SetPluginFailure(&u.st.Conditions, u.gen(), ignoreFailure)
		}
	}
	return conflicts.Rules(spec.ConflictRules, askedStrategy{s, answered}), nil
}
