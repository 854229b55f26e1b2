/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package modelfuzz explores random sequences of Server-Side Apply
// operations over the ownership core's model alone (ownershipcore.Model),
// with no apiserver: other managers apply and update, fieldops's field
// managers apply, hand back, release and relinquish, and after every step
// of fieldops the invariants (Model.Check) and the prediction of its write
// (Model.Predict) must hold. A failing sequence is shrunk to the fewest
// steps that still fail.
package modelfuzz
