//go:build tools

// Package tools pins the commands built by this module: kube-apiserver and
// etcd for the local control plane (see test/localcp and DESIGN.md, "The
// local control plane").
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
