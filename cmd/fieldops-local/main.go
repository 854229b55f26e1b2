// Command fieldops-local runs the fieldops manager on an embedded local
// control plane, with no cluster (`make run-local`):
//
//	fieldops-local [--local-dir DIR] [manager flags...]
//
// It starts the local cluster of internal/localcp from bin/ (kube-apiserver,
// etcd, kube-controller-manager, kube-scheduler and one node simulated by
// kwok), installs the CRDs, writes an admin kubeconfig to --local-dir, prints the KUBECONFIG
// line and runs the manager in the foreground; SIGINT or SIGTERM stops
// the manager and then the control plane. Its child processes never
// outlive it, even when it is killed (SIGKILL): see internal/localcp.
// It is a binary of its own so that the manager (cmd/manager) links
// neither the control plane nor envtest.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/internal/managercmd"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fieldops-local:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		f        managercmd.Flags
		localDir string
	)
	fs := f.NewFlagSet("fieldops-local", false)
	fs.StringVar(&localDir, "local-dir", "bin/local", "Where the kubeconfig is written.")
	if help, err := managercmd.Parse(fs, os.Args[1:]); help || err != nil {
		return err
	}
	// Metrics and probes are not served yet in local mode.
	f.MetricsAddr, f.ProbeAddr = "0", "0"
	// The first SIGINT or SIGTERM stops the manager, then the control
	// plane; a second one kills this process at once, and its children
	// with it (internal/localcp: Pdeathsig and the guard).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); stop() }()

	var cp *localcp.ControlPlane
	defer func() {
		if cp != nil {
			_ = cp.Stop()
		}
	}()
	return f.Run(ctx, func() (*rest.Config, error) {
		var err error
		if cp, err = localcp.Start(localcp.Options{Cluster: &localcp.ClusterOptions{Nodes: 1}}); err != nil {
			return nil, err
		}
		kubeconfig, err := writeKubeconfig(cp, localDir)
		if err != nil {
			return nil, err
		}
		fmt.Printf("local cluster is up: kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kwok (node %s; no container runs)\n", localcp.NodeName(0))
		fmt.Printf("component logs: %s\n", cp.LogDir())
		fmt.Printf("in another shell:\n\n  export KUBECONFIG=%s\n\n", kubeconfig)
		return cp.Config, nil
	})
}

func writeKubeconfig(cp *localcp.ControlPlane, dir string) (string, error) {
	user, err := cp.Env.ControlPlane.AddUser(envtest.User{Name: "fieldops-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", err
	}
	b, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path, err := filepath.Abs(filepath.Join(dir, "kubeconfig"))
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, b, 0o600)
}
