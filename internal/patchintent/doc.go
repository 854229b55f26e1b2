/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package patchintent makes the FieldPatch decision (Decide: the intent
// of a FieldPatch or ClusterFieldPatch, the partial object its field
// manager applies, for every patch type; the record of previous owners
// followed to the target; the fields that left the patch; what an apply
// adds to the record) and reads and writes the record in status, for the
// FieldPatch controller and kubectl fieldops plan alike: the plan cannot
// disagree with what the controller does.
package patchintent
