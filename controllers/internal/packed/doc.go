/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package packed holds objects in an informer cache compactly: their
// metadata as the watch decoded it, the rest (spec and status) as
// DEFLATE-compressed JSON, unpacked into a fresh typed object by every
// read that copies (DeepCopyObject, which the informer cache's Get and
// List call).
package packed
