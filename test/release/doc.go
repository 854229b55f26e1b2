/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package release tests what a release ships besides the code: the Helm
// chart (linted, in sync with config/, installed on the local control
// plane), every install path's kinds against what Kubernetes 1.30 serves,
// the example plugins built static, and `make release`'s dist/.
package release
