/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package app is the fieldops manager's command line: its flags and
// the manager they configure. cmd/manager runs it against a cluster;
// cmd/fieldops-local runs it against the embedded local control plane. It
// imports neither the control plane nor envtest, so the production binary
// links neither.
package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/fieldops/fieldops/api/v1alpha1"
	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/feature"
	"github.com/fieldops/fieldops/internal/accountwebhook"
	"github.com/fieldops/fieldops/internal/logcap"
	"github.com/fieldops/fieldops/internal/tenancy"
	"github.com/fieldops/fieldops/plugins/host"
)

// Flags are the manager's flags.
type Flags struct {
	MetricsAddr, ProbeAddr, PluginConfig, MetricsCertDir, PprofAddr string
	LeaderElect, MetricsSecure                                      bool
	Setup                                                           controllers.Options
	// LeaderElection times the leader election Lease (with --leader-elect).
	LeaderElection LeaderElection
	// AccountWebhook serves the account-impersonation check as a
	// validating admission webhook (internal/accountwebhook) on
	// WebhookPort, with the certificate in WebhookCertDir.
	AccountWebhook bool
	WebhookPort    int
	WebhookCertDir string
	// WatchLabelSelector restricts the manager to the FieldPatches,
	// ClusterFieldPatches, ManagedWorkloads and PodSets it matches
	// (Kubernetes label selector syntax; empty is every object): a shard.
	// Check parses it into watchSelector.
	WatchLabelSelector string

	watchSelector labels.Selector

	zapOpts       zap.Options
	sharedWatchAt int
	managerRights string
}

// LeaderElection is the timing of the leader election Lease, as
// client-go's leaderelection.LeaderElectionConfig has it. Its zero value
// is invalid; NewFlagSet sets controller-runtime's defaults (15 s, 10 s,
// 2 s).
type LeaderElection struct {
	// Namespace holds the Lease; empty is the namespace the manager's pod
	// runs in (controller-runtime reads it from the ServiceAccount mount,
	// so outside a cluster it must be set).
	Namespace string
	// LeaseDuration is how long the followers wait after they last saw
	// the leader renew the Lease before they take it: a leader killed
	// without releasing it is replaced after about this long.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps retrying to renew before
	// it gives up leading (and the manager exits).
	RenewDeadline time.Duration
	// RetryPeriod is how often every candidate tries to acquire or renew
	// the Lease; client-go jitters each wait up to 2.2 times it
	// (leaderelection.JitterFactor 1.2).
	RetryPeriod time.Duration
}

// Check reports timings client-go's leaderelection.NewLeaderElector
// refuses: every duration positive, LeaseDuration above RenewDeadline,
// and RenewDeadline above RetryPeriod times the jitter factor 1.2.
func (l LeaderElection) Check() error {
	switch {
	case l.LeaseDuration <= 0 || l.RenewDeadline <= 0 || l.RetryPeriod <= 0:
		return fmt.Errorf("--leader-elect-lease-duration (%s), --leader-elect-renew-deadline (%s) and --leader-elect-retry-period (%s) must be positive", l.LeaseDuration, l.RenewDeadline, l.RetryPeriod)
	case l.RenewDeadline >= l.LeaseDuration:
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be shorter than --leader-elect-lease-duration (%s): a leader must give up before its followers may take over", l.RenewDeadline, l.LeaseDuration)
	case float64(l.RenewDeadline) <= leaderElectionJitter*float64(l.RetryPeriod):
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be longer than 1.2 times --leader-elect-retry-period (%s), the longest jittered wait between two renewals", l.RenewDeadline, l.RetryPeriod)
	}
	return nil
}

// leaderElectionJitter is client-go's leaderelection.JitterFactor: a
// candidate waits between RetryPeriod and (1+JitterFactor)×RetryPeriod
// between two tries, and NewLeaderElector wants RenewDeadline above
// JitterFactor×RetryPeriod.
const leaderElectionJitter = 1.2

// DefaultServiceAccount is the default of --default-service-account: the
// ServiceAccount, in their own namespace, that namespaced fieldops objects
// naming none act as.
const DefaultServiceAccount = tenancy.DefaultServiceAccount

// envOr is the environment variable key when it is set (even empty),
// otherwise def.
func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

// NewFlagSet returns a flag set named name with the manager's flags bound
// to f. With kubeconfig, it has controller-runtime's --kubeconfig too.
func (f *Flags) NewFlagSet(name string, kubeconfig bool) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.StringVar(&f.MetricsAddr, "metrics-bind-address", ":8443", "Address of the Prometheus metrics endpoint; 0 disables it.")
	fs.BoolVar(&f.MetricsSecure, "metrics-secure", true, "Serve metrics over HTTPS and let in only callers whose bearer token may GET /metrics (TokenReview and SubjectAccessReview against the apiserver).")
	fs.StringVar(&f.MetricsCertDir, "metrics-cert-dir", "", "With --metrics-secure: directory holding tls.crt and tls.key; empty serves a self-signed certificate.")
	fs.StringVar(&f.ProbeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	fs.BoolVar(&f.LeaderElect, "leader-elect", false, "Elect a leader, for more than one replica. The Lease is fieldops.dev, shared by every manager without --watch-label-selector or with '"+v1alpha1.UnshardedSelector+"'; any other selector has a Lease of its own, <hash of the selector>.fieldops.dev.")
	fs.StringVar(&f.LeaderElection.Namespace, "leader-elect-namespace", "", "With --leader-elect: the namespace of the Lease fieldops.dev; empty is the namespace the manager's pod runs in (outside a cluster it must be set).")
	fs.DurationVar(&f.LeaderElection.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "With --leader-elect: how long followers wait after the leader's last renewal before taking the Lease. A leader killed without releasing it (kill -9, a lost node) is replaced this long after its last renewal, plus up to 2.2 retry periods.")
	fs.DurationVar(&f.LeaderElection.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "With --leader-elect: how long the leader retries renewing the Lease before it stops leading (the manager exits); shorter than --leader-elect-lease-duration.")
	fs.DurationVar(&f.LeaderElection.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "With --leader-elect: how often candidates try to acquire or renew the Lease (each wait jittered up to 2.2 times it); --leader-elect-renew-deadline must exceed 1.2 times it.")
	fs.StringVar(&f.WatchLabelSelector, "watch-label-selector", "", "Reconcile only the FieldPatches, ClusterFieldPatches, ManagedWorkloads and PodSets this label selector matches (Kubernetes syntax, as kubectl -l takes it); empty is every object. A shard runs with "+v1alpha1.ShardLabel+"=<shard>, the main instance beside shards with '"+v1alpha1.UnshardedSelector+"'. Each selector has its own leader election Lease (see --leader-elect). Targets are never filtered.")
	fs.StringVar(&f.PluginConfig, "plugin-config", "", "YAML file declaring the plugins (name, path, sha256, kind); needs --feature-gates=ExternalPlugins=true.")
	fs.StringVar(&f.Setup.DefaultServiceAccount, "default-service-account", envOr("FIELDOPS_DEFAULT_SERVICE_ACCOUNT", DefaultServiceAccount), "(env FIELDOPS_DEFAULT_SERVICE_ACCOUNT, for OLM Subscriptions) ServiceAccount, in their own namespace, that FieldPatches and ManagedWorkloads without spec.serviceAccountName act as (impersonated). It may be empty only with --manager-rights-namespaces='*'.")
	fs.StringVar(&f.managerRights, "manager-rights-namespaces", os.Getenv("FIELDOPS_MANAGER_RIGHTS_NAMESPACES"), "(env FIELDOPS_MANAGER_RIGHTS_NAMESPACES) Comma-separated namespaces whose FieldPatches and ManagedWorkloads without spec.serviceAccountName act with the manager's own cluster-wide rights instead of --default-service-account; '*' is every namespace (the behaviour of 0.1.0). Whoever may create such an object there then has the manager's rights: list only namespaces where only cluster administrators create them.")
	fs.BoolVar(&f.Setup.NoCrossNamespaceRefs, "no-cross-namespace-refs", os.Getenv("FIELDOPS_NO_CROSS_NAMESPACE_REFS") != "false", "(env FIELDOPS_NO_CROSS_NAMESPACE_REFS=false turns it off) Refuse ManagedWorkload objects of another namespace; a cluster-scoped object is held when the account the workload acts as may write it (its RBAC decides), and with the manager's rights only in --manager-rights-namespaces.")
	fs.StringVar(&f.Setup.OwnNamespace, "namespace", os.Getenv("POD_NAMESPACE"), "The manager's own namespace: nothing in it may be a target of a fieldops object (default: $POD_NAMESPACE).")
	fs.IntVar(&f.Setup.Concurrency, "concurrency", 4, "How many objects each controller reconciles at once.")
	fs.IntVar(&f.sharedWatchAt, "shared-target-watch-at", controllers.DefaultSharedWatchAt, "From this many targets of one kind in one namespace, one watch of that kind in that namespace serves them (holding all its objects) instead of one watch per target; never for Secrets. 0 watches every target by name.")
	fs.StringVar(&f.PprofAddr, "pprof-bind-address", "", "Address to serve net/http/pprof on (go tool pprof); empty disables it.")
	fs.BoolVar(&f.AccountWebhook, "account-webhook", false, "Serve the validating admission webhook "+accountwebhook.Path+" that lets only those who may impersonate a ServiceAccount create or change a FieldPatch, ClusterFieldPatch or ManagedWorkload acting as it (the rule of the ValidatingAdmissionPolicy fieldops-account-impersonation, for installs without it: the OLM bundle turns it on). Needs create on subjectaccessreviews.")
	fs.IntVar(&f.WebhookPort, "webhook-port", webhook.DefaultPort, "With --account-webhook: the port the webhook server listens on (HTTPS).")
	fs.StringVar(&f.WebhookCertDir, "webhook-cert-dir", "", "With --account-webhook: directory holding the serving certificate, tls.crt and tls.key; empty is controller-runtime's default, /tmp/k8s-webhook-server/serving-certs, where OLM mounts the certificate it provisions.")
	feature.Gates.AddFlag(fs)
	// Production logging by default: JSON lines at info level, a stack
	// trace from error on. --zap-devel switches to development logging
	// (console lines, debug level, a stack trace from warning on).
	f.zapOpts = zap.Options{}
	goflags := flag.NewFlagSet("", flag.ContinueOnError)
	f.zapOpts.BindFlags(goflags)
	if kubeconfig {
		// Before the copy into fs: controller-runtime's --kubeconfig.
		ctrl.RegisterFlags(goflags)
	}
	fs.AddGoFlagSet(goflags)
	return fs
}

// Parse parses args into fs. help is true after --help (already printed).
func Parse(fs *pflag.FlagSet, args []string) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return true, nil
		}
		return false, err
	}
	return false, nil
}

// Check reports flag combinations that cannot work, before anything
// starts, and fills Setup.ManagerRightsNamespaces from
// --manager-rights-namespaces. An empty --default-service-account is
// refused unless --manager-rights-namespaces is "*": a namespaced object
// acts with the manager's rights only where a cluster administrator said
// so by name.
func (f *Flags) Check() error {
	if f.PluginConfig != "" && !feature.Gates.Enabled(feature.ExternalPlugins) {
		return errors.New("--plugin-config needs --feature-gates=ExternalPlugins=true")
	}
	if err := f.LeaderElection.Check(); err != nil {
		return err
	}
	sel, err := ParseWatchSelector(f.WatchLabelSelector)
	if err != nil {
		return err
	}
	f.watchSelector, f.Setup.WatchLabelSelector = sel, f.WatchLabelSelector
	namespaces, err := ParseNamespaces(f.managerRights)
	if err != nil {
		return fmt.Errorf("--manager-rights-namespaces: %w", err)
	}
	f.Setup.ManagerRightsNamespaces = namespaces
	if f.Setup.DefaultServiceAccount == "" && !slices.Contains(namespaces, "*") {
		return errors.New("--default-service-account is empty, which would let every namespaced FieldPatch and ManagedWorkload act with the manager's rights; to mean that, say --manager-rights-namespaces='*'")
	}
	if msgs := validation.IsDNS1123Subdomain(f.Setup.DefaultServiceAccount); f.Setup.DefaultServiceAccount != "" && len(msgs) > 0 {
		return fmt.Errorf("--default-service-account %q: %s", f.Setup.DefaultServiceAccount, strings.Join(msgs, "; "))
	}
	return nil
}

// ParseNamespaces parses a comma-separated list of namespace names, or
// "*" (every namespace); blanks around names are dropped, an empty list
// is nil. A name that is not a DNS-1123 label is an error.
func ParseNamespaces(s string) ([]string, error) {
	var out []string
	for _, ns := range strings.Split(s, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" {
			continue
		}
		if msgs := validation.IsDNS1123Label(ns); ns != "*" && len(msgs) > 0 {
			return nil, fmt.Errorf("%q is not a namespace name: %s", ns, strings.Join(msgs, "; "))
		}
		out = append(out, ns)
	}
	return out, nil
}

// Run runs the manager until ctx ends. config returns the cluster's
// configuration; it is called once the flags and plugins are checked, so
// a local control plane starts only when the manager can run.
func (f *Flags) Run(ctx context.Context, config func() (*rest.Config, error)) error {
	if err := f.Check(); err != nil {
		return err
	}
	var plugins *host.Host
	if f.PluginConfig != "" {
		cfg, err := host.LoadConfig(f.PluginConfig)
		if err != nil {
			return err
		}
		if plugins, err = host.New(cfg, host.Options{}); err != nil {
			return err
		}
		defer plugins.Close()
	}
	// Never V(8): client-go logs request and response bodies there.
	ctrl.SetLogger(logcap.Logger(zap.New(zap.UseFlagOptions(&f.zapOpts))))
	log := ctrl.Log.WithName("setup")
	log.Info("feature gates", "ServerSideApply", feature.Gates.Enabled(feature.ServerSideApply),
		"InPlacePodMetadata", feature.Gates.Enabled(feature.InPlacePodMetadata), "ExternalPlugins", feature.Gates.Enabled(feature.ExternalPlugins))
	cfg, err := config()
	if err != nil {
		return err
	}
	setup := f.Setup
	setup.Plugins = plugins
	setup.SharedWatchAt = sharedWatchAt(f.sharedWatchAt)
	m := managerOptions{metrics: metricsOptions(f.MetricsAddr, f.MetricsSecure, f.MetricsCertDir), probeAddr: f.ProbeAddr, pprofAddr: f.PprofAddr, leaderElect: f.LeaderElect, leaderElection: f.LeaderElection, watchSelector: f.watchSelector}
	if m.leaderElect || !m.watchSelector.Empty() {
		log.Info("shard", "watchLabelSelector", m.watchSelector.String(), "leaderElectionLease", LeaderElectionID(m.watchSelector))
	}
	if f.AccountWebhook {
		m.accountWebhook = &webhook.Options{Port: f.WebhookPort, CertDir: f.WebhookCertDir}
	}
	return runManager(ctx, cfg, m, setup)
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
	leaderElection       LeaderElection
	// watchSelector restricts the cache of fieldops's own kinds
	// (--watch-label-selector); it names the leader election Lease.
	watchSelector labels.Selector
	// accountWebhook, when set, serves the account-impersonation webhook
	// with these server options.
	accountWebhook *webhook.Options
}

func runManager(ctx context.Context, cfg *rest.Config, m managerOptions, opts controllers.Options) error {
	mopts := ctrl.Options{
		Scheme:                 controllers.Scheme(),
		Cache:                  controllers.WatchLabelSelector(controllers.CacheOptions(cache.Options{}), m.watchSelector),
		Metrics:                m.metrics,
		HealthProbeBindAddress: m.probeAddr,
		PprofBindAddress:       m.pprofAddr,
		LeaderElection:         m.leaderElect,
		LeaderElectionID:       LeaderElectionID(m.watchSelector),
		// A leader that stops (SIGTERM: a rolling upgrade, a drain)
		// releases the Lease, so a follower takes over at its next retry
		// instead of after a lease duration. Safe because the manager's
		// process ends as soon as mgr.Start returns.
		LeaderElectionReleaseOnCancel: true,
		LeaderElectionNamespace:       m.leaderElection.Namespace,
		LeaseDuration:                 &m.leaderElection.LeaseDuration,
		RenewDeadline:                 &m.leaderElection.RenewDeadline,
		RetryPeriod:                   &m.leaderElection.RetryPeriod,
	}
	if m.accountWebhook != nil {
		mopts.WebhookServer = webhook.NewServer(*m.accountWebhook)
	}
	mgr, err := ctrl.NewManager(cfg, mopts)
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
	if m.accountWebhook != nil {
		SetupAccountWebhook(mgr, opts)
		// Ready once the webhook serves: with failurePolicy Fail, the
		// apiserver refuses fieldops objects while no replica is ready.
		if err := mgr.AddReadyzCheck("account-webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return err
		}
	}
	return mgr.Start(ctx)
}

// ParseWatchSelector parses --watch-label-selector (Kubernetes label
// selector syntax, labels.Parse: "key=value", "key in (a,b)", "!key",
// requirements joined by commas); empty is labels.Everything. The error
// names the flag and says what is wrong.
func ParseWatchSelector(s string) (labels.Selector, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("--watch-label-selector %q is not a label selector (e.g. %s=shard1, or '%s'): %w", s, v1alpha1.ShardLabel, v1alpha1.UnshardedSelector, err)
	}
	return sel, nil
}

// leaderElectionBase is the Lease of the unsharded manager and of the
// main instance beside shards.
const leaderElectionBase = "fieldops.dev"

// LeaderElectionID is the name of the leader election Lease of a manager
// watching the objects sel matches: "fieldops.dev" for every object (nil
// or empty sel) and for the main instance's selector
// (v1alpha1.UnshardedSelector), so that turning sharding on is a rolling
// update of one Deployment whose old and new replicas still elect one
// leader; otherwise "<h>.fieldops.dev", h the first 10 hex digits of the
// SHA-256 of the selector's canonical form (canonicalSelector): each shard elects its own leader, and two
// spellings of one selector share a Lease. Flux derives the Lease of a
// shard from its selector the same way (a hash, so any selector makes a
// valid name).
func LeaderElectionID(sel labels.Selector) string {
	if sel == nil || sel.Empty() {
		return leaderElectionBase
	}
	canonical := canonicalSelector(sel)
	if main, err := labels.Parse(v1alpha1.UnshardedSelector); err == nil && canonical == main.String() {
		return leaderElectionBase
	}
	sum := sha256.Sum256([]byte(canonical))
	return hex.EncodeToString(sum[:])[:10] + "." + leaderElectionBase
}

// canonicalSelector is sel's String with "==" spelled "=" (labels.Parse
// takes both for one operator, and String sorts the requirements).
func canonicalSelector(sel labels.Selector) string {
	reqs, ok := sel.Requirements()
	if !ok {
		return sel.String()
	}
	out := labels.NewSelector()
	for _, r := range reqs {
		if r.Operator() == selection.DoubleEquals {
			if eq, err := labels.NewRequirement(r.Key(), selection.Equals, r.Values().UnsortedList()); err == nil {
				r = *eq
			}
		}
		out = out.Add(r)
	}
	return out.String()
}

// sharedWatchAt maps --shared-target-watch-at to
// controllers.Options.SharedWatchAt: 0 (never share) is negative there,
// where 0 means the default.
func sharedWatchAt(flag int) int {
	if flag <= 0 {
		return -1
	}
	return flag
}

// SetupAccountWebhook serves the account-impersonation webhook on mgr's
// webhook server, deciding with the tenancy settings of opts (the
// manager's --default-service-account and --manager-rights-namespaces) and
// reviewing with mgr's client.
func SetupAccountWebhook(mgr ctrl.Manager, opts controllers.Options) {
	accountwebhook.Register(mgr.GetWebhookServer(), mgr.GetClient(), accountwebhook.Options{
		DefaultServiceAccount: opts.DefaultServiceAccount, ManagerRightsNamespaces: opts.ManagerRightsNamespaces,
	})
}
