/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package repo tests the repository itself rather than the code: what git
// tracks and ignores, the release files and the versions the docs name.
// It needs git and a checkout (it skips in a source tree without .git),
// not the control plane.
package repo
