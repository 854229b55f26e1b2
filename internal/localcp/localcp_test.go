/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package localcp

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// The apiserver reports the pinned Kubernetes version (stamped with
// ldflags by `make control-plane`), as `kubectl version`, Helm and OLM's
// minKubeVersion read it from /version. (A subtest of TestCluster, on
// its control plane: one start fewer.)
func checkServerVersion(t *testing.T, cfg *rest.Config) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	versions, err := requiredVersions(filepath.Join(root, toolsGoMod), kubernetesModule)
	if err != nil {
		t.Fatal(err)
	}
	want := versions[kubernetesModule]
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != want || !strings.HasPrefix(want, "v"+v.Major+"."+v.Minor+".") {
		t.Errorf("/version = %+v, want gitVersion %s with its major and minor", v, want)
	}
}
