/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package fieldplan plans what a FieldPatch, ClusterFieldPatch or
// ManagedWorkload would do, with the controllers' own decisions
// (patchintent, the ownership core) and a server-side dry run, acting as
// the account the object acts as: the plan kubectl fieldops plan prints
// (-o json prints the Plan values), and the prediction test/invariants
// holds the controller to.
package fieldplan
