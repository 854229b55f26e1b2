/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package states_test puts fieldops objects of every kind in each state
// their controllers report (Ready, progressing, Contested, Stalled,
// Forbidden, Suspended, being deleted) on the local control plane and
// reads their health as Argo CD does, through the kind's health script
// (test/health), and as Flux does, through kstatus.
package states_test

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fieldops/fieldops/test/testkit"
)

var (
	k8s client.Client
	kit testkit.Kit
)

// The control plane without the cluster's controllers: a test acts as
// the kubelet where a pod must be Ready.
func TestMain(m *testing.M) {
	os.Exit(testkit.RunSuite(m, testkit.SuiteOptions{}, func(s *testkit.Suite) { k8s, kit = s.Client, s.Kit }))
}
