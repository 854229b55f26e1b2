/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package redact rewrites error text for status conditions, events and logs
// so that it reads without Go internals and without any value of the object
// it is about (a Secret's above all).
package redact
