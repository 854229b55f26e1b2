/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package ownershipcore

import (
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/fieldops/fieldops/ownershipcore/fieldset"
)

// FormatPath prints a field path in the ownership core's path form
// (fieldset.FormatPath).
func FormatPath(p fieldpath.Path) string { return fieldset.FormatPath(p) }

// ParsePath reads a path in the form FormatPath prints (fieldset.ParsePath).
func ParsePath(s string) (fieldpath.Path, error) { return fieldset.ParsePath(s) }

// ParsePathSet parses field paths into a set (fieldset.ParsePathSet).
func ParsePathSet(paths []string) (*fieldpath.Set, error) { return fieldset.ParsePathSet(paths) }

// FormatSet prints the leaf paths of a set, sorted (fieldset.FormatSet).
func FormatSet(s *fieldpath.Set) []string { return fieldset.FormatSet(s) }
