/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command fieldops-local runs the fieldops manager on an embedded local
// cluster, with no real cluster needed (`make run-local`):
//
//	fieldops-local [--local-dir DIR] [manager flags...]
//
// It starts the local cluster of internal/localcp from bin/
// (kube-apiserver, etcd, kube-controller-manager, kube-scheduler and one
// node simulated by kwok) with the CRDs, installs the admission and RBAC
// objects of config/default and config/admission (install.go: rendered
// from config/ with kustomize, not copied), onboards the default namespace
// as docs/operators-guide.md#onboarding-a-tenant-namespace shows, applies
// the upstream objects that config/samples target as their own field
// managers (internal/localcp/upstream.go), writes an admin kubeconfig to
// --local-dir, prints what it installed and created, the metrics
// (plain HTTP) and probe URLs on free loopback ports, and the KUBECONFIG
// line, and runs the manager in the foreground. SIGINT or SIGTERM stops
// the manager and then the cluster; its child processes never outlive it,
// even when it is killed (SIGKILL): see internal/localcp. It is a binary
// of its own so that the manager (cmd/manager) links neither the control
// plane nor envtest.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/fieldops/fieldops/cmd/manager/app"
	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/internal/served"
	"github.com/fieldops/fieldops/internal/tenancy"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fieldops-local:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		f        app.Flags
		localDir string
	)
	fs := f.NewFlagSet("fieldops-local", false)
	fs.StringVar(&localDir, "local-dir", "bin/local", "Where the kubeconfig is written.")
	if help, err := app.Parse(fs, os.Args[1:]); help || err != nil {
		return err
	}
	if err := defaultLoopbackAddrs(fs, &f); err != nil {
		return err
	}
	root, err := localcp.ModuleRoot()
	if err != nil {
		return err
	}
	// The first SIGINT or SIGTERM stops the manager, then the control
	// plane; a second one kills this process at once, and its children
	// with it (internal/localcp: Pdeathsig and the guard).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); stop() }()

	l := &localRun{flags: &f, localDir: localDir, root: root}
	defer func() {
		if l.cp != nil {
			_ = l.cp.Stop()
		}
	}()
	return f.Run(ctx, func() (*rest.Config, error) { return l.start(ctx) })
}

// defaultLoopbackAddrs puts metrics (plain HTTP: no TokenReview to pass)
// and probes on free loopback ports, unless their flags are given.
func defaultLoopbackAddrs(fs *pflag.FlagSet, f *app.Flags) error {
	if !fs.Changed("metrics-bind-address") {
		addr, err := freeLoopbackAddr()
		if err != nil {
			return err
		}
		f.MetricsAddr, f.MetricsSecure = addr, false
	}
	if !fs.Changed("health-probe-bind-address") {
		addr, err := freeLoopbackAddr()
		if err != nil {
			return err
		}
		f.ProbeAddr = addr
	}
	return nil
}

// localRun is the local cluster the manager runs on: cp is set once the
// control plane started, for run to stop it.
type localRun struct {
	flags    *app.Flags
	localDir string
	root     string
	cp       *localcp.ControlPlane
}

// start is the start sequence the user watches, in order: the cluster,
// its kubeconfig, what config/default installs (but the manager), the
// onboarding of the default namespace, the upstream objects, the
// endpoints, and the KUBECONFIG line once every fieldops kind answers.
func (l *localRun) start(ctx context.Context) (*rest.Config, error) {
	var err error
	if l.cp, err = localcp.Start(localcp.Options{Cluster: &localcp.ClusterOptions{Nodes: 1}}); err != nil {
		return nil, err
	}
	cp := l.cp
	kubeconfig, err := writeKubeconfig(cp, l.localDir)
	if err != nil {
		return nil, err
	}
	fmt.Printf("local cluster is up: kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kwok (node %s; no container runs)\n", localcp.NodeName(0))
	fmt.Printf("component logs: %s\n", cp.LogDir())
	if err := l.installAndOnboard(ctx); err != nil {
		return nil, err
	}
	created, err := localcp.ApplyUpstream(ctx, cp.Config, l.root)
	if err != nil {
		return nil, err
	}
	printList("\nupstream objects the samples target (config/samples):", created)
	fmt.Println()
	printEndpoints(l.flags)
	// The KUBECONFIG line means "ready": every fieldops kind answers.
	if err := served.Wait(ctx, cp.Config, served.Group, 0); err != nil {
		return nil, err
	}
	fmt.Printf("\nin another shell:\n\n  export KUBECONFIG=%s\n\n", kubeconfig)
	return cp.Config, nil
}

// printEndpoints prints the metrics and probe URLs, those that are on.
func printEndpoints(f *app.Flags) {
	if f.MetricsAddr != "0" {
		scheme := "https"
		if !f.MetricsSecure {
			scheme = "http"
		}
		fmt.Printf("metrics: %s://%s/metrics   (curl -s %[1]s://%[2]s/metrics | grep ^fieldops_; Prometheus: a static_configs target %[2]s)\n", scheme, f.MetricsAddr)
	}
	if f.ProbeAddr != "0" {
		fmt.Printf("probes:  http://%s/healthz  http://%[1]s/readyz\n", f.ProbeAddr)
	}
}

// freeLoopbackAddr returns 127.0.0.1:<a port free now>.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
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

// installAndOnboard installs the admission and RBAC objects of
// installDirs and onboards the default namespace for the manager's
// options, printing what it did.
func (l *localRun) installAndOnboard(ctx context.Context) error {
	c, err := client.New(l.cp.Config, client.Options{})
	if err != nil {
		return err
	}
	installed, err := install(ctx, c, l.root)
	if err != nil {
		return err
	}
	printList("\nadmission and RBAC as "+strings.Join(installDirs, " and ")+" install them (but the manager, which runs here):", installed)
	opts := l.flags.Setup
	onboarded, err := onboardDefault(ctx, c, tenancy.Options{DefaultServiceAccount: opts.DefaultServiceAccount, ManagerRightsNamespaces: opts.ManagerRightsNamespaces})
	if err != nil {
		return err
	}
	fmt.Println("\n" + onboarded)
	return nil
}

func printList(title string, lines []string) {
	fmt.Println(title)
	for _, l := range lines {
		fmt.Println("  " + l)
	}
}
