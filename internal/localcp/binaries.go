/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package localcp

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/mod/modfile"
)

// The modules the control plane's binaries are built from (`make
// control-plane`), pinned in the tools modules.
const (
	kubernetesModule = "k8s.io/kubernetes"
	etcdModule       = "go.etcd.io/etcd/server/v3"
	kwokModule       = "sigs.k8s.io/kwok"
	toolsGoMod       = "test/tools/go.mod"
	kwokGoMod        = "test/tools/kwok/go.mod"
)

// Binaries are the control plane's executables, built from the pinned
// versions.
type Binaries struct {
	// KubeVersion is the pinned k8s.io/kubernetes version, e.g. v1.36.3:
	// what the apiserver's /version reports (stamped by ldflags).
	KubeVersion           string
	KubeAPIServer         string
	KubeControllerManager string
	KubeScheduler         string
	Etcd                  string
	Kwok                  string
	// KwokStages is kwok's --config: the Stages by which it plays each
	// node's kubelet (written by `make control-plane`).
	KwokStages string
}

// FindBinaries returns the binaries under <root>/bin for the versions
// pinned in root's tools modules. Each binary's directory is named after
// its version (bin/kubernetes-v1.36.3/kube-apiserver), as the Makefile
// builds them: a binary of another version is never picked up, whatever
// its file time. It fails with a hint when one is missing.
func FindBinaries(root string) (Binaries, error) {
	versions, err := requiredVersions(filepath.Join(root, toolsGoMod), kubernetesModule, etcdModule)
	if err != nil {
		return Binaries{}, err
	}
	kwok, err := requiredVersions(filepath.Join(root, kwokGoMod), kwokModule)
	if err != nil {
		return Binaries{}, err
	}
	bin := filepath.Join(root, "bin")
	kube := filepath.Join(bin, "kubernetes-"+versions[kubernetesModule])
	kwokDir := filepath.Join(bin, "kwok-"+kwok[kwokModule])
	b := Binaries{
		KubeVersion:           versions[kubernetesModule],
		KubeAPIServer:         filepath.Join(kube, "kube-apiserver"),
		KubeControllerManager: filepath.Join(kube, "kube-controller-manager"),
		KubeScheduler:         filepath.Join(kube, "kube-scheduler"),
		Etcd:                  filepath.Join(bin, "etcd-"+versions[etcdModule], "etcd"),
		Kwok:                  filepath.Join(kwokDir, "kwok"),
		KwokStages:            filepath.Join(kwokDir, "stages.yaml"),
	}
	for _, p := range []string{b.KubeAPIServer, b.KubeControllerManager, b.KubeScheduler, b.Etcd, b.Kwok, b.KwokStages} {
		if _, err := os.Stat(p); err != nil {
			return Binaries{}, fmt.Errorf("%s not built: run 'make control-plane' first", p)
		}
	}
	return b, nil
}

// requiredVersions returns the versions go.mod requires of each module.
func requiredVersions(gomod string, modules ...string) (map[string]string, error) {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return nil, err
	}
	f, err := modfile.ParseLax(gomod, data, nil)
	if err != nil {
		return nil, err
	}
	versions := map[string]string{}
	for _, r := range f.Require {
		versions[r.Mod.Path] = r.Mod.Version
	}
	for _, m := range modules {
		if versions[m] == "" {
			return nil, fmt.Errorf("%s requires no %s", gomod, m)
		}
	}
	return versions, nil
}
