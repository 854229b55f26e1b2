/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package localcp starts the local control plane: a real kube-apiserver and
// etcd, built from pinned modules by test/tools into bin/ (`make
// control-plane`; the apiserver reports its real version, e.g. v1.36.3),
// started through controller-runtime's envtest, with the fieldops CRDs
// installed. With Options.Cluster it is a small cluster: kube-controller-
// manager, kube-scheduler and nodes simulated by kwok (cluster.go). Every
// suite that involves Server-Side Apply, the demo and `make run-local`
// (cmd/fieldops-local) use it; none uses a fake client. No process it
// starts outlives the process that started it, and it leaves no files
// (procs.go). It is part of the product, not test code, but the manager
// binary does not link it (cmd/manager's deps test).
package localcp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ModuleRoot returns the directory of the fieldops go.mod, found by walking
// up from the working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/fieldops/fieldops\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("fieldops module root not found above the working directory")
		}
		dir = parent
	}
}

// Options tune Start.
type Options struct {
	// ExtraCRDPaths are more CRD files or directories to install, relative to
	// the module root.
	ExtraCRDPaths []string
	// NoFieldopsCRDs leaves the CRDs of config/crd/bases out: the caller
	// installs them (as the Helm chart's test does).
	NoFieldopsCRDs bool
	// Webhooks are admission webhooks to register (served by the caller).
	Webhooks envtest.WebhookInstallOptions
	// Cluster, when set, makes the control plane a small cluster:
	// kube-controller-manager (garbage collection, namespace deletion,
	// the workload controllers), kube-scheduler, and nodes simulated by
	// kwok, so pods are scheduled and go Running and Ready as a kubelet
	// would report (no container runs: images are never pulled).
	Cluster *ClusterOptions
}

// ControlPlane is a running local control plane.
type ControlPlane struct {
	Env    *envtest.Environment
	Config *rest.Config

	root     string // every file of the control plane, removed by Stop
	guard    *guard
	launcher *launcher
	children []*child // started by Start itself, stopped in reverse order
}

// Start starts kube-apiserver and etcd from <root>/bin (FindBinaries) and
// installs the CRDs of config/crd/bases. It fails with a hint when the binaries are missing.
// Every process it starts dies with the caller's process (see procs.go);
// Stop stops them and removes their files.
//
// Start is a sequence of steps, in order: the files and the guard, the
// shims and envtest's environment, envtest's start, then the cluster's
// components; a step that fails stops what the earlier ones started.
func Start(opts Options) (*ControlPlane, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	bins, err := FindBinaries(root)
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{launcher: newLauncher()}
	if cp.root, err = os.MkdirTemp("", "fieldops-localcp-"); err != nil {
		cp.launcher.close()
		return nil, err
	}
	steps := []func() error{
		cp.writeParent,
		cp.launchGuard,
		func() error { return cp.makeEnv(bins, crdPaths(root, opts), opts.Webhooks) },
		cp.startEnv,
	}
	if opts.Cluster != nil {
		steps = append(steps, func() error {
			return cp.launcher.do(func() error { return cp.startCluster(bins, *opts.Cluster) })
		})
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, errors.Join(fmt.Errorf("start local control plane: %w", err), cp.Stop())
		}
	}
	return cp, nil
}

// crdPaths are the CRD files and directories to install: config/crd/bases
// unless opts leaves it out, then opts.ExtraCRDPaths, under root.
func crdPaths(root string, opts Options) []string {
	var paths []string
	if !opts.NoFieldopsCRDs {
		paths = append(paths, filepath.Join(root, "config", "crd", "bases"))
	}
	for _, p := range opts.ExtraCRDPaths {
		paths = append(paths, filepath.Join(root, p))
	}
	return paths
}

// writeParent records this process as the control plane's parent, for
// the guard.
func (cp *ControlPlane) writeParent() error {
	return os.WriteFile(filepath.Join(cp.root, parentFile), []byte(strconv.Itoa(os.Getpid())), 0o600)
}

// launchGuard starts the guard that stops the control plane's processes
// and removes its files when this process dies.
func (cp *ControlPlane) launchGuard() (err error) {
	cp.guard, err = startGuard(cp.root)
	return err
}

// makeEnv makes the shims of etcd and kube-apiserver and their
// directories, and envtest's environment of them.
func (cp *ControlPlane) makeEnv(bins Binaries, crdPaths []string, webhooks envtest.WebhookInstallOptions) error {
	etcd, err := makeShim(cp.root, "etcd", bins.Etcd)
	if err != nil {
		return err
	}
	apiserver, err := makeShim(cp.root, "kube-apiserver", bins.KubeAPIServer)
	if err != nil {
		return err
	}
	for _, d := range []string{"etcd", "apiserver"} {
		if err := os.Mkdir(filepath.Join(cp.root, d), 0o700); err != nil {
			return err
		}
	}
	apiServer := &envtest.APIServer{Path: apiserver, CertDir: filepath.Join(cp.root, "apiserver")}
	// One client at a time has nothing to share fairly: API Priority and
	// Fairness off saves the apiserver's start-up work for it (its
	// bootstrap configuration and controllers), which every suite pays.
	apiServer.Configure().Set("enable-priority-and-fairness", "false")
	cp.Env = &envtest.Environment{
		ControlPlane: envtest.ControlPlane{
			Etcd:      &envtest.Etcd{Path: etcd, DataDir: filepath.Join(cp.root, "etcd")},
			APIServer: apiServer,
		},
		CRDDirectoryPaths:     crdPaths,
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: webhooks,
	}
	return nil
}

// startEnv starts envtest's environment (etcd, kube-apiserver, the CRDs
// and webhooks) on the launcher.
func (cp *ControlPlane) startEnv() error {
	err := cp.launcher.do(func() error {
		cfg, err := cp.Env.Start()
		cp.Config = cfg
		return err
	})
	// envtest makes the webhooks' serving certificates a directory of its
	// own: the guard removes it too.
	if d := cp.Env.WebhookInstallOptions.LocalServingCertDir; d != "" {
		if werr := os.WriteFile(filepath.Join(cp.root, dirsFile), []byte(d+"\n"), 0o600); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// Stop stops every process of the control plane, in reverse order of
// start, waits for each, and removes the control plane's files.
func (cp *ControlPlane) Stop() error {
	if cp.launcher == nil {
		return nil // stopped already
	}
	var errs []error
	_ = cp.launcher.do(func() error {
		for i := len(cp.children) - 1; i >= 0; i-- {
			errs = append(errs, cp.children[i].stop())
		}
		cp.children = nil
		if cp.Env != nil && cp.Env.ControlPlane.APIServer != nil {
			errs = append(errs, cp.Env.Stop())
		}
		return nil
	})
	cp.launcher.close()
	cp.launcher = nil
	errs = append(errs, os.RemoveAll(cp.root))
	if cp.guard != nil {
		errs = append(errs, cp.guard.release())
	}
	return errors.Join(errs...)
}
