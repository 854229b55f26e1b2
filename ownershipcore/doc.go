/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package ownershipcore is the only part of fieldops that reads or writes
// metadata.managedFields, talks Server-Side Apply or imports
// structured-merge-diff: decoding managed fields into field sets, field
// manager names, the apiserver's schema, an Applier that decides "unchanged"
// locally with the apiserver's own field manager, owned-field diffs, hand-back
// and relinquish.
//
// Its vocabulary is the apiserver's (see
// https://kubernetes.io/docs/reference/using-api/server-side-apply/ and
// KEP-555): field manager, managed fields, field set, intent, apply
// configuration, conflict, force, relinquish.
package ownershipcore
