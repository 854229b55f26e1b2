/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package crdcheck finds what a change of a CustomResourceDefinition's
// list and map semantics (x-kubernetes-list-type, x-kubernetes-list-map-keys,
// x-kubernetes-map-type) would break in the objects already stored: the
// checks of `kubectl fieldops check-crd`, as pure functions over the old
// and new CRDs and the objects.
package crdcheck
