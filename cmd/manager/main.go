// Command manager runs the fieldops controllers.
//
//	manager [--kubeconfig PATH] [--feature-gates Name=bool,...] [--local]
//
// With --local it first starts an embedded control plane (kube-apiserver and
// etcd from bin/, see test/localcp), installs the CRDs, writes a kubeconfig
// to --local-dir and prints the KUBECONFIG line; Ctrl-C stops everything.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/feature"
	"github.com/fieldops/fieldops/plugins/host"
	"github.com/fieldops/fieldops/test/localcp"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fieldops:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		metricsAddr, probeAddr, localDir, pluginConfig, metricsCertDir string
		leaderElect, local, metricsSecure                              bool
		setup                                                          controllers.Options
		pprofAddr                                                      string
	)
	fs := pflag.NewFlagSet("manager", pflag.ContinueOnError)
	fs.StringVar(&metricsAddr, "metrics-bind-address", ":8443", "Address of the Prometheus metrics endpoint; 0 disables it.")
	fs.BoolVar(&metricsSecure, "metrics-secure", true, "Serve metrics over HTTPS and let in only callers whose bearer token may GET /metrics (TokenReview and SubjectAccessReview against the apiserver).")
	fs.StringVar(&metricsCertDir, "metrics-cert-dir", "", "With --metrics-secure: directory holding tls.crt and tls.key; empty serves a self-signed certificate.")
	fs.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	fs.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader, for more than one replica.")
	fs.BoolVar(&local, "local", false, "Start an embedded local control plane (kube-apiserver and etcd from bin/) and run against it.")
	fs.StringVar(&localDir, "local-dir", "bin/local", "With --local: where the kubeconfig is written.")
	fs.StringVar(&pluginConfig, "plugin-config", "", "YAML file declaring the plugins (name, path, sha256, kind); needs --feature-gates=ExternalPlugins=true.")
	fs.StringVar(&setup.DefaultServiceAccount, "default-service-account", os.Getenv("FIELDOPS_DEFAULT_SERVICE_ACCOUNT"), "(env FIELDOPS_DEFAULT_SERVICE_ACCOUNT, for OLM Subscriptions) ServiceAccount, in their own namespace, that FieldPatches and ManagedWorkloads without spec.serviceAccountName act as (impersonated): the lockdown mode recommended for shared clusters. Empty: they act with the manager's own rights.")
	fs.BoolVar(&setup.NoCrossNamespaceRefs, "no-cross-namespace-refs", os.Getenv("FIELDOPS_NO_CROSS_NAMESPACE_REFS") == "true", "(env FIELDOPS_NO_CROSS_NAMESPACE_REFS=true) Refuse ManagedWorkload objects outside the workload's own namespace (and cluster-scoped ones).")
	fs.StringVar(&setup.OwnNamespace, "namespace", os.Getenv("POD_NAMESPACE"), "The manager's own namespace: nothing in it may be a target of a fieldops object (default: $POD_NAMESPACE).")
	fs.IntVar(&setup.Concurrency, "concurrency", 4, "How many objects each controller reconciles at once.")
	fs.StringVar(&pprofAddr, "pprof-bind-address", "", "Address to serve net/http/pprof on (go tool pprof); empty disables it.")
	feature.Gates.AddFlag(fs)
	zapOpts := zap.Options{Development: true}
	goflags := flag.NewFlagSet("", flag.ContinueOnError)
	zapOpts.BindFlags(goflags)
	// Before the copy into fs: controller-runtime's --kubeconfig.
	ctrl.RegisterFlags(goflags)
	fs.AddGoFlagSet(goflags)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	var plugins *host.Host
	switch {
	case pluginConfig != "" && !feature.Gates.Enabled(feature.ExternalPlugins):
		return errors.New("--plugin-config needs --feature-gates=ExternalPlugins=true")
	case pluginConfig != "":
		cfg, err := host.LoadConfig(pluginConfig)
		if err != nil {
			return err
		}
		if plugins, err = host.New(cfg, host.Options{}); err != nil {
			return err
		}
		defer plugins.Close()
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")
	log.Info("feature gates", "ServerSideApply", feature.Gates.Enabled(feature.ServerSideApply),
		"InPlacePodMetadata", feature.Gates.Enabled(feature.InPlacePodMetadata), "ExternalPlugins", feature.Gates.Enabled(feature.ExternalPlugins))

	var cfg *rest.Config
	if local {
		cp, err := localcp.Start(localcp.Options{})
		if err != nil {
			return err
		}
		defer func() { _ = cp.Stop() }()
		kubeconfig, err := writeKubeconfig(cp, localDir)
		if err != nil {
			return err
		}
		fmt.Printf("local control plane is up; in another shell:\n\n  export KUBECONFIG=%s\n\n", kubeconfig)
		cfg = cp.Config
		metricsAddr, probeAddr = "0", "0"
	} else {
		var err error
		if cfg, err = ctrl.GetConfig(); err != nil {
			return err
		}
	}
	setup.Plugins = plugins
	return runManager(cfg, managerOptions{metrics: metricsOptions(metricsAddr, metricsSecure, metricsCertDir), probeAddr: probeAddr, pprofAddr: pprofAddr, leaderElect: leaderElect}, setup)
}

// metricsOptions configures the metrics endpoint. Secure serving follows
// Kubebuilder's layout: HTTPS, and controller-runtime's
// filters.WithAuthenticationAndAuthorization, which authenticates the
// bearer token with a TokenReview and authorizes "get" on the non-resource
// URL /metrics with a SubjectAccessReview (config/rbac/metrics_*).
func metricsOptions(addr string, secure bool, certDir string) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: addr, SecureServing: secure}
	if secure {
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
		opts.CertDir = certDir
	}
	return opts
}

// managerOptions are the manager's serving options.
type managerOptions struct {
	metrics              metricsserver.Options
	probeAddr, pprofAddr string
	leaderElect          bool
}

func runManager(cfg *rest.Config, m managerOptions, opts controllers.Options) error {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 controllers.Scheme(),
		Metrics:                m.metrics,
		HealthProbeBindAddress: m.probeAddr,
		PprofBindAddress:       m.pprofAddr,
		LeaderElection:         m.leaderElect,
		LeaderElectionID:       "fieldops.dev",
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := controllers.SetupWith(mgr, opts); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
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
