//go:build tools

/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package tools pins kwok, the simulated nodes of the local control plane
// (internal/localcp): it registers fake nodes and plays their kubelet, so
// scheduled pods go Running and Ready. A module of its own because its
// Kubernetes libraries are not those of test/tools.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
