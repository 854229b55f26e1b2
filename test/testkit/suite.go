/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package testkit

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/internal/localcp"
)

// SuiteOptions shape the environment of RunSuite.
type SuiteOptions struct {
	// ControlPlane are the local control plane's options (extra CRDs,
	// webhook registrations).
	ControlPlane localcp.Options
	// Webhooks are admission handlers the manager's webhook server serves,
	// by path (registered with ControlPlane.Webhooks).
	Webhooks map[string]admission.Handler
	// Writes, if set, counts the manager's write requests.
	Writes *WriteCounter
	// Plugins are example plugins (ExamplePlugins) the manager runs.
	Plugins []string
	// ContestBase, if set, replaces ownershipcore.ContestBase, the unit
	// of the contest backoff, for the FieldPatch and ManagedWorkload
	// controllers: a test of the backoff then runs in a few seconds.
	ContestBase time.Duration
	// Setup, if set, changes the options the suite's manager is set up
	// with (tenancy, as the manager's flags set them).
	Setup func(*controllers.Options)
}

// Suite is what a suite's tests use: the control plane's config and the
// test's own client.
type Suite struct {
	Config *rest.Config
	Client client.Client
	Kit    Kit
}

// RunSuite is a suite's TestMain body: it starts the local control plane
// and a manager with every fieldops controller, hands the Suite to ready,
// runs the tests, and stops everything in order (the manager before the
// control plane and its serving certificates). It returns the exit code.
func RunSuite(m *testing.M, opts SuiteOptions, ready func(*Suite)) int {
	logger := zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel))
	ctrl.SetLogger(logger)
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 1 }
	cp, err := localcp.Start(opts.ControlPlane)
	if err != nil {
		return fail(err)
	}
	defer func() { _ = cp.Stop() }()
	c, err := client.New(cp.Config, client.Options{Scheme: controllers.Scheme()})
	if err != nil {
		return fail(err)
	}
	mcfg := rest.CopyConfig(cp.Config)
	if opts.Writes != nil {
		opts.Writes.Wrap(mcfg)
	}
	reconciles := &Reconciles{}
	mopts := ctrl.Options{
		Scheme: controllers.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:  controllers.CacheOptions(cache.Options{}),
		Logger: reconciles.Logger(logger), NewCache: reconciles.NewCache,
	}
	if len(opts.Webhooks) > 0 {
		wo := cp.Env.WebhookInstallOptions
		mopts.WebhookServer = webhook.NewServer(webhook.Options{Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir})
	}
	mgr, err := ctrl.NewManager(mcfg, mopts)
	if err != nil {
		return fail(err)
	}
	for path, h := range opts.Webhooks {
		mgr.GetWebhookServer().Register(path, &webhook.Admission{Handler: h})
	}
	// One worker per controller: the suites' order-sensitive checks assume
	// it. (The manager's default is 4; test/invariants and the tests of
	// contests exercise concurrent writers through separate objects.)
	setup := controllers.Options{Concurrency: 1, ContestBase: opts.ContestBase}
	if opts.Setup != nil {
		opts.Setup(&setup)
	}
	if len(opts.Plugins) > 0 {
		plugins, stop, err := ExamplePlugins(opts.Plugins...)
		if err != nil {
			return fail(err)
		}
		defer stop()
		setup.Plugins = plugins
	}
	if err := controllers.SetupWith(mgr, setup); err != nil {
		return fail(err)
	}
	targets, err := controllers.TargetReader(mgr)
	if err != nil {
		return fail(err)
	}
	stop := Start(mgr)
	ready(&Suite{Config: cp.Config, Client: c, Kit: Kit{Client: c, Reconciles: reconciles, Targets: targets}})
	code := m.Run()
	stop()
	return code
}

// Start runs mgr in the background until the returned function is
// called; that function returns once the manager has stopped. A manager
// that fails to start is reported on standard error.
func Start(mgr ctrl.Manager) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return func() { cancel(); <-done }
}
