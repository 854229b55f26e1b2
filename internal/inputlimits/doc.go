/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package inputlimits bounds what one fieldops object may ask of the
// manager: the size and nesting depth of a FieldPatch's patch or of a
// ManagedWorkload's object, and the number of operations of a JSON patch.
// Work on field sets grows with a value's depth (every path is as long as
// the value is deep), so input over these limits is refused before it is
// decoded into field sets, with a message naming the limit; the limits
// are far above what Kubernetes objects need (a Deployment's deepest
// field, a container's env valueFrom key, is 12 levels down).
package inputlimits
