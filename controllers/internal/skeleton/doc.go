/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package skeleton is the one shape every fieldops reconcile has, after
// cluster-api's machine controller: get the object (NotFound: forget it,
// done) → wait when the cache predates our own last write of it → add
// the finalizer → defer the one status write → reconcileDelete, or the
// named phases in order.
package skeleton
