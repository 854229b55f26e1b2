/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package fieldset names the field set and field path of Server-Side Apply
// (structured-merge-diff's fieldpath.Set and fieldpath.Path, the types of
// metadata.managedFields' FieldsV1) for the code around the ownership core:
// controllers, commands and plugins hold and pass field sets, while every
// rule about managed fields lives in ownershipcore. Besides the types it
// reads and prints paths (ParsePath, FormatPath) and builds them as
// managedFields name fields and list items (WithField, WithItemKeys,
// WithItemValue). It is a leaf: it imports structured-merge-diff's fieldpath
// and value packages and nothing else, so a package that needs only the
// vocabulary links little.
package fieldset

import "sigs.k8s.io/structured-merge-diff/v6/fieldpath"

// Set is a set of field paths (fieldpath.Set): what a field manager owns,
// what an intent sets, what differs.
type Set = fieldpath.Set

// Path is one field path (fieldpath.Path).
type Path = fieldpath.Path

// NewSet returns a set of paths.
func NewSet(paths ...Path) *Set { return fieldpath.NewSet(paths...) }
