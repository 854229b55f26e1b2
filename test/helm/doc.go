/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package helm tests kubectl fieldops helm-postrender under the real
// Helm 4 CLI, built from the Helm module this module pins, with the
// post-renderer plugin of deploy/helm-plugin installed. It is a module of
// its own: the main module links Helm's SDK (test/release, hack/chart),
// not its CLI, whose commands (pkg/cmd) need modules only this test
// uses.
package helm
