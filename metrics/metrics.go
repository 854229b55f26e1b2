/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package metrics defines the fieldops_ Prometheus metrics, registered on
// controller-runtime's registry (served by the manager's metrics endpoint).
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Controller label values: the names of the controllers in
// controller-runtime's own metrics (controller_runtime_reconcile_total).
const (
	ControllerFieldPatch        = "fieldpatch"
	ControllerClusterFieldPatch = "clusterfieldpatch"
	ControllerWorkload          = "managedworkload"
	ControllerPodSet            = "podset"
)

// ActionFailed is the action label of an apply that failed with an error
// other than a conflict.
const ActionFailed = "Failed"

// Pod update modes.
const (
	ModeInPlace  = "in_place"
	ModeRecreate = "recreate"
)

var (
	// ApplyTotal counts the writes of an intent to an object (action
	// Created, Configured; Migrated: a ManagedWorkload moved legacy
	// ownership) and the attempts that failed (Conflicted: a conflict the
	// policy fails on; Failed: any other error), one per reconcile that
	// wrote or failed. An apply that changes nothing (Unchanged) is not
	// counted. kind is the object's kind. Objects that never reach an
	// apply (an invalid patch, an unknown kind) are counted by
	// fieldops_objects under their Ready reason.
	ApplyTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fieldops_apply_total",
		Help: "Writes of an intent to an object (Created, Configured, Migrated) and failed attempts (Conflicted, Failed), by controller, object kind and action; applies that change nothing are not counted.",
	}, []string{"controller", "kind", "action"})

	// DriftTotal counts repairs of owned fields another actor changed.
	DriftTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fieldops_drift_total",
		Help: "Drift on owned fields found and repaired, by controller and object kind.",
	}, []string{"controller", "kind"})

	// ConflictsTotal counts SSA conflicts met, by the field manager that
	// owned the contested field.
	ConflictsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fieldops_conflicts_total",
		Help: "Server-Side Apply conflicts met, by controller and the field manager owning the contested field.",
	}, []string{"controller", "manager"})

	// PodUpdatesTotal counts PodSet pod updates: in_place (labels and
	// annotations applied to the running pod) or recreate (deleted and
	// created again).
	PodUpdatesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fieldops_pod_updates_total",
		Help: "PodSet pod updates by mode: in_place (metadata applied to the running pod) or recreate.",
	}, []string{"mode"})

	// PluginCallDuration times every call to a plugin, failed ones too.
	PluginCallDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "fieldops_plugin_call_duration_seconds",
		Help:    "Duration of calls to out-of-process plugins, by plugin and method (Resolve, Paths), in seconds.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"plugin", "method"})

	// PluginFailuresTotal counts failed plugin calls by reason: start
	// (the process did not start or failed its checksum), timeout, exited
	// (the process died), malformed (an answer broke the protocol), error
	// (the plugin returned an error).
	PluginFailuresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fieldops_plugin_failures_total",
		Help: "Failed plugin calls by plugin and reason (start, timeout, exited, malformed, error).",
	}, []string{"plugin", "reason"})

	// HandBacksTotal counts the steps (not the fields) that give fields
	// back when a FieldPatch is deleted or drops fields, or a
	// ManagedWorkload drops a shared object: HandBack (fields moved to their
	// previous owners, values kept) and Relinquish (fields released without
	// an owner, or the manager's remaining fields removed). Each step that
	// changed something counts once, however many fields it moved; the
	// event of the step gives the number of fields.
	HandBacksTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fieldops_handbacks_total",
		Help: "Steps that gave fields back (one per step, not per field), by controller, object kind and step (HandBack: fields moved to their previous owners; Relinquish: fields released or removed; Restore: previous values put back).",
	}, []string{"controller", "kind", "step"})

	// Contested is 1 for each FieldPatch or ClusterFieldPatch whose repairs
	// are backed off because another field manager keeps taking its fields
	// back (status.contestedBy); the series is gone when the contest ends.
	Contested = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fieldops_contested",
		Help: "1 while a FieldPatch's fields are contested by another field manager, by controller, namespace, name and the contesting manager.",
	}, []string{"controller", "namespace", "name", "manager"})
)

// Steps of HandBacksTotal.
const (
	StepHandBack   = "HandBack"
	StepRelinquish = "Relinquish"
	StepRestore    = "Restore"
)

// SetContested records whether the object is contested: manager is the
// contesting field manager, or empty when the object is not contested
// (or gone), which removes its series.
func SetContested(controller, namespace, name, manager string) {
	Contested.DeletePartialMatch(prometheus.Labels{"controller": controller, "namespace": namespace, "name": name})
	if manager != "" {
		Contested.WithLabelValues(controller, namespace, name, manager).Set(1)
	}
}

func init() {
	ctrlmetrics.Registry.MustRegister(ApplyTotal, DriftTotal, ConflictsTotal, PodUpdatesTotal, PluginCallDuration, PluginFailuresTotal, HandBacksTotal, Contested, Objects)
}
