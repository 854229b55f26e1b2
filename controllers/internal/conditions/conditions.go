/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package conditions sets the kstatus conditions (Ready, Reconciling,
// Stalled) every fieldops kind reports, so that kstatus-aware tools (Flux's
// health checks, kubectl wait --for=condition=Ready) read them alike, and
// Argo CD through the health scripts of config/argocd. See
// sigs.k8s.io/cli-utils/pkg/kstatus, "Conditions".
package conditions

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types.
const (
	Ready       = "Ready"
	Reconciling = "Reconciling"
	Stalled     = "Stalled"
	// PluginFailure is True while a plugin the object names fails and its
	// fallback is in use (no extra ignored paths, or the fallback conflict
	// policy). It is not a kstatus condition: the object still reconciles.
	PluginFailure = "PluginFailure"
)

// SetPluginFailure sets PluginFailure to True with message, or removes it
// when message is empty.
func SetPluginFailure(conds *[]metav1.Condition, gen int64, message string) {
	if message == "" {
		meta.RemoveStatusCondition(conds, PluginFailure)
		return
	}
	Set(conds, gen, PluginFailure, metav1.ConditionTrue, "PluginFailed", message)
}

// SetReady marks the object reconciled and settled: Ready=True with
// reason, and no Reconciling or Stalled.
func SetReady(conds *[]metav1.Condition, gen int64, reason, message string) {
	Set(conds, gen, Ready, metav1.ConditionTrue, reason, message)
	meta.RemoveStatusCondition(conds, Reconciling)
	meta.RemoveStatusCondition(conds, Stalled)
}

// SetStalled marks an error a retry will not fix until the spec or the
// world changes: Ready=False and Stalled=True with the same reason.
func SetStalled(conds *[]metav1.Condition, gen int64, reason, message string) {
	Set(conds, gen, Ready, metav1.ConditionFalse, reason, message)
	Set(conds, gen, Stalled, metav1.ConditionTrue, reason, message)
	meta.RemoveStatusCondition(conds, Reconciling)
}

// SetWaiting marks progress that waits on something (a missing object, a
// backoff, a transient error): Ready=False and Reconciling=True.
func SetWaiting(conds *[]metav1.Condition, gen int64, reason, message string) {
	Set(conds, gen, Ready, metav1.ConditionFalse, reason, message)
	Set(conds, gen, Reconciling, metav1.ConditionTrue, reason, message)
	meta.RemoveStatusCondition(conds, Stalled)
}

// Set sets one condition, stamped with the observed generation gen.
func Set(conds *[]metav1.Condition, gen int64, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: gen,
	})
}

// KeepTransitions gives every condition of after whose status is the one
// it had in before the LastTransitionTime it had there, so a condition a
// reconcile removed and set again (or set twice) keeps the time of its
// last real transition, and a status that did not change is not written
// again: lastTransitionTime is "the last time the condition transitioned
// from one status to another" (metav1.Condition).
func KeepTransitions(before []metav1.Condition, after []metav1.Condition) {
	for i := range after {
		if b := meta.FindStatusCondition(before, after[i].Type); b != nil && b.Status == after[i].Status {
			after[i].LastTransitionTime = b.LastTransitionTime
		}
	}
}
