/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Package bench holds the benchmarks that need a running fieldops on the
// local control plane.
package bench

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/internal/localcp"
)

// counter counts the manager's requests (all verbs; informer watches are
// long-lived and counted once).
type counter struct {
	next         http.RoundTripper
	n            atomic.Int64
	targetWrites atomic.Int64 // non-GET requests to ConfigMaps, the targets
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	if r.Method != http.MethodGet && strings.Contains(r.URL.Path, "/configmaps/") {
		c.targetWrites.Add(1)
	}
	return c.next.RoundTrip(r)
}

var (
	envOnce     sync.Once
	envClient   client.Client
	envRequests *counter
	envErr      error
	envStop     func()
)

// env starts the local control plane and one manager for every benchmark
// of the process (controller names are unique per process), and returns
// the benchmark's own client and the manager's request counter.
func env(b *testing.B) (client.Client, *counter) {
	b.Helper()
	envOnce.Do(func() {
		ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
		cp, err := localcp.Start(localcp.Options{})
		if err != nil {
			envErr = err
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		envStop = func() { cancel(); _ = cp.Stop() }
		envRequests = &counter{}
		mcfg := rest.CopyConfig(cp.Config)
		mcfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { envRequests.next = rt; return envRequests })
		mgr, err := ctrl.NewManager(mcfg, ctrl.Options{Scheme: controllers.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
		if err == nil {
			err = controllers.Setup(mgr)
		}
		if err == nil {
			envClient, err = client.New(cp.Config, client.Options{Scheme: controllers.Scheme()})
		}
		if err != nil {
			envErr = err
			return
		}
		go func() { _ = mgr.Start(ctx) }()
	})
	if envErr != nil {
		b.Fatal(envErr)
	}
	return envClient, envRequests
}

func TestMain(m *testing.M) {
	code := m.Run()
	if envStop != nil {
		envStop()
	}
	os.Exit(code)
}
