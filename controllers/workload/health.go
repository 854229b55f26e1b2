/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload

import (
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers/internal/conditions"
	"github.com/fieldops/fieldops/controllers/internal/notes"
)

// DefaultTimeout is spec.timeout's default: how long objects may take to
// become healthy.
const DefaultTimeout = 5 * time.Minute

// setHealth records obj's health in e: its kstatus (Flux's fork of
// sigs.k8s.io/cli-utils, the computation Flux's health checks and
// `kubectl wait`-style tools use). A Deployment is Current once rolled out
// and available, a Job once complete, a custom resource once its Ready
// condition is True (or when it has no conditions to wait for).
func setHealth(e *v1alpha1.InventoryEntry, obj *unstructured.Unstructured) {
	if obj == nil {
		return
	}
	res, err := status.Compute(obj)
	if err != nil {
		e.Health, e.HealthMessage = string(status.UnknownStatus), notes.Condition(fmt.Sprintf("cannot compute health: %v", err))
		return
	}
	e.Health, e.HealthMessage = string(res.Status), notes.Condition(res.Message)
}

// waits reports whether Ready waits for health (spec.wait, default true).
func waits(mw *v1alpha1.ManagedWorkload) bool { return mw.Spec.Wait == nil || *mw.Spec.Wait }

// healthTimeout is spec.timeout, or DefaultTimeout when unset or not
// positive.
func healthTimeout(mw *v1alpha1.ManagedWorkload) time.Duration {
	if mw.Spec.Timeout != nil && mw.Spec.Timeout.Duration > 0 {
		return mw.Spec.Timeout.Duration
	}
	return DefaultTimeout
}

// health sums up the inventory's health for Ready: the objects that are
// not Current (as "Kind ns/name: Status: message"), and whether one of them
// Failed. Objects waiting to be pruned and objects not applied are left
// out (their failure is reported as such).
func health(inventory []v1alpha1.InventoryEntry) (unhealthy []string, failed bool) {
	for _, e := range inventory {
		if e.Index < 0 || e.Reason != "" || e.Health == "" || e.Health == string(status.CurrentStatus) {
			continue
		}
		failed = failed || e.Health == string(status.FailedStatus)
		msg := fmt.Sprintf("%s %s: %s", e.Kind, refName(e.Namespace, e.Name), e.Health)
		if e.HealthMessage != "" {
			msg += " (" + e.HealthMessage + ")"
		}
		unhealthy = append(unhealthy, msg)
	}
	return unhealthy, failed
}

// reportHealth sets Ready from the inventory's health once every object is
// applied: Ready when all are Current; Progressing while some are not,
// until spec.timeout after status.lastAppliedTime; then, or at once when
// one Failed, Stalled. It reports whether it set Ready (false: every object
// is healthy, or the workload does not wait), and how long until the
// timeout, for a requeue.
func reportHealth(mw *v1alpha1.ManagedWorkload, now time.Time) (bool, time.Duration) {
	st, gen := &mw.Status, mw.Generation
	if !waits(mw) {
		return false, 0
	}
	unhealthy, failed := health(st.Inventory)
	if len(unhealthy) == 0 {
		return false, 0
	}
	timeout := healthTimeout(mw)
	since := now
	if st.LastAppliedTime != nil {
		since = st.LastAppliedTime.Time
	}
	left := since.Add(timeout).Sub(now)
	list := strings.Join(unhealthy, "; ")
	switch {
	case failed:
		conditions.SetStalled(&st.Conditions, gen, ReasonHealthCheckFailed, fmt.Sprintf("%d of %d objects unhealthy: %s", len(unhealthy), len(st.Inventory), list))
		return true, 0
	case left <= 0:
		conditions.SetStalled(&st.Conditions, gen, ReasonHealthCheckTimeout, fmt.Sprintf("%d of %d objects not healthy %s after they were applied (spec.timeout): %s", len(unhealthy), len(st.Inventory), timeout, list))
		return true, 0
	}
	conditions.SetWaiting(&st.Conditions, gen, ReasonProgressing, fmt.Sprintf("waiting for %d of %d objects to become healthy (timeout %s): %s", len(unhealthy), len(st.Inventory), timeout, list))
	return true, left
}

// touched records that the workload changed objects or its spec now: the
// health timeout counts from here.
func touched(st *v1alpha1.ManagedWorkloadStatus, now time.Time) {
	st.LastAppliedTime = &metav1.Time{Time: now}
}
