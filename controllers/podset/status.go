/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package podset

// Reasons carried by the conditions and events. Each is documented in
// docs/troubleshooting.md (test/deploy checks it).
const (
	ReasonReady       = "Ready"
	ReasonProgressing = "Progressing"
	ReasonInvalidSpec = "InvalidSpec"
	ReasonPodRejected = "PodRejected"
	ReasonPodFailed   = "PodFailed"

	// Events only.
	ReasonCreated        = "Created"
	ReasonScaledDown     = "ScaledDown"
	ReasonUpdatedInPlace = "UpdatedInPlace"
	ReasonRestarted      = "Restarted"
)
