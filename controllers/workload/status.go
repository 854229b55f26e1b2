/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package workload

import (
	"github.com/fieldops/fieldops/internal/workloadspec"
	"github.com/fieldops/fieldops/metrics"
)

// Reasons carried by the conditions, the inventory entries and the events.
// Each is documented in docs/troubleshooting.md (test/deploy checks it).
const (
	ReasonApplied           = "Applied"
	ReasonSuspended         = "Suspended"
	ReasonObjectsFailed     = "ObjectsFailed"
	ReasonInvalidIgnorePath = "InvalidIgnorePath"
	ReasonNotConverged      = "NotConverged"
	ReasonPluginUnavailable = "PluginUnavailable"
	// ReasonProgressing: every object is applied, some are not healthy
	// yet (kstatus InProgress); Ready waits (spec.wait).
	ReasonProgressing = "Progressing"
	// ReasonHealthCheckFailed: an applied object's kstatus is Failed
	// (a Job failed, a Deployment's progress deadline passed, …).
	ReasonHealthCheckFailed = "HealthCheckFailed"
	// ReasonHealthCheckTimeout: objects are still not healthy spec.timeout
	// after the workload last applied them.
	ReasonHealthCheckTimeout = "HealthCheckTimeout"

	// Per object.
	ReasonInvalidObject   = workloadspec.ReasonInvalidObject
	ReasonDuplicateObject = workloadspec.ReasonDuplicateObject
	ReasonUnknownKind     = workloadspec.ReasonUnknownKind
	ReasonRejected        = "Rejected"
	ReasonConflict        = "Conflict"
	ReasonApplyFailed     = "ApplyFailed"
	ReasonPruneFailed     = "PruneFailed"
	// ReasonContested: another field manager keeps taking back fields of
	// the object (repairs are backed off), or another fieldops object took
	// them (no repair: fieldops objects never fight each other).
	ReasonContested = "Contested"
	// ReasonForbidden: the workload's account (spec.serviceAccountName)
	// may not read or write the object; retried every 30 s.
	ReasonForbidden = "Forbidden"
	// ReasonForbiddenObject: the object is part of fieldops itself, or
	// outside the workload's namespace under --no-cross-namespace-refs.
	ReasonForbiddenObject = "ForbiddenObject"

	// Events only.
	ReasonCreated       = "Created"
	ReasonDriftRepaired = "DriftRepaired"
	ReasonMigrated      = "Migrated"
	ReasonPruned        = "Pruned"
	ReasonRelinquished  = "Relinquished"
	ReasonDeleteFailed  = "DeleteFailed"
	ReasonPluginFailed  = "PluginFailed"
)

// Modes of status.mode.
const (
	ModeServerSideApply = "ServerSideApply"
	ModeLegacy          = "Legacy"
)

// Inventory actions besides the ownership core's.
const (
	// ActionFailed: the object could not be applied (see its reason).
	ActionFailed = metrics.ActionFailed
	// ActionMigrated: legacy ownership was moved into the workload's
	// Apply entry; the object is applied on the next reconcile.
	ActionMigrated = "Migrated"
)
