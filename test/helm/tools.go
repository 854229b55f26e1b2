//go:build tools

/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package helm

// The packages of Helm's CLI (helm.sh/helm/v4/cmd/helm), kept in go.mod
// so that the test can build the pinned helm binary.
import (
	_ "helm.sh/helm/v4/pkg/cmd"
	_ "helm.sh/helm/v4/pkg/kube"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)
