//go:build tools

/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package tools pins the commands built by this module for the local
// control plane (internal/localcp; DESIGN.md, "The local control plane"):
// kube-apiserver, kube-controller-manager and kube-scheduler from
// k8s.io/kubernetes, and etcd. The Makefile builds the three Kubernetes
// commands in one `go build` so that their shared packages compile once.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
