/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package patchintent builds the intent of a FieldPatch or
// ClusterFieldPatch (the partial object its field manager applies, for
// every patch type) and reads and writes its record of previous owners,
// for the FieldPatch controller and kubectl fieldops plan alike: the plan
// cannot disagree with what the controller applies.
package patchintent
