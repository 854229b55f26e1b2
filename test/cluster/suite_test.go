/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package cluster_test runs fieldops on the local cluster (internal/localcp
// with Options.Cluster: kube-controller-manager, kube-scheduler and kwok's
// simulated nodes) and checks what only a cluster shows: PodSet readiness
// and rollouts from the simulated kubelet's pod status (never written by
// the test), garbage collection of a PodSet's pods and of a pruned
// ManagedWorkload object's dependents, and namespace deletion.
package cluster_test

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/test/testkit"
)

var (
	k8s client.Client
	kit testkit.Kit
)

func TestMain(m *testing.M) {
	os.Exit(testkit.RunSuite(m, testkit.SuiteOptions{ControlPlane: localcp.Options{Cluster: &localcp.ClusterOptions{Nodes: 2}}},
		func(s *testkit.Suite) { k8s, kit = s.Client, s.Kit }))
}
