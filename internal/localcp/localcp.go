// Package localcp starts the local control plane: a real kube-apiserver and
// etcd, built from pinned modules by test/tools into bin/ (`make
// control-plane`), started through controller-runtime's envtest, with the
// fieldops CRDs installed. Every suite that involves Server-Side Apply, the
// demo and `make run-local` use it; none uses a fake client.
package localcp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	// Webhooks are admission webhooks to register (served by the caller).
	Webhooks envtest.WebhookInstallOptions
}

// ControlPlane is a running local control plane.
type ControlPlane struct {
	Env    *envtest.Environment
	Config *rest.Config
}

// Start starts kube-apiserver and etcd from <root>/bin and installs the CRDs
// of config/crd/bases. It fails with a hint when the binaries are missing.
func Start(opts Options) (*ControlPlane, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(root, "bin")
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return nil, fmt.Errorf("%s not built in %s: run 'make control-plane' first", b, bin)
		}
	}
	paths := []string{filepath.Join(root, "config", "crd", "bases")}
	for _, p := range opts.ExtraCRDPaths {
		paths = append(paths, filepath.Join(root, p))
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: bin,
		CRDDirectoryPaths:     paths,
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: opts.Webhooks,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start local control plane: %w", err)
	}
	return &ControlPlane{Env: env, Config: cfg}, nil
}

// Stop stops the control plane.
func (cp *ControlPlane) Stop() error { return cp.Env.Stop() }
