/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package targetcache_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/controllers/internal/targetcache"
	"github.com/fieldops/fieldops/internal/localcp"
	"github.com/fieldops/fieldops/test/testkit"
)

// The suite runs one manager with every fieldops controller in this test
// process (so its heap is the test's heap), on a transport that records
// every request it sends.
var (
	k8s        client.Client // the test's own client
	restConfig *rest.Config
	kit        testkit.Kit
	targets    *targetcache.Cache // the manager's shared target cache
	requests   = &recorder{}
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 1 }
	cp, err := localcp.Start(localcp.Options{})
	if err != nil {
		return fail(err)
	}
	defer func() { _ = cp.Stop() }()
	if k8s, err = client.New(cp.Config, client.Options{Scheme: controllers.Scheme()}); err != nil {
		return fail(err)
	}
	kit, restConfig = testkit.Kit{Client: k8s}, cp.Config
	mcfg := rest.CopyConfig(cp.Config)
	mcfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &recording{recorder: requests, next: rt} })
	mgr, err := ctrl.NewManager(mcfg, ctrl.Options{Scheme: controllers.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return fail(err)
	}
	if err := controllers.Setup(mgr); err != nil {
		return fail(err)
	}
	if targets, err = targetcache.Shared(mgr); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	code := m.Run()
	cancel()
	<-done
	return code
}

// request is one request the manager sent.
type request struct {
	Method string
	URL    string // path and query
	User   string // impersonated; empty: the manager itself
}

// recorder records the manager's requests, through every transport built
// from the manager's config (its own, and the impersonating ones).
type recorder struct {
	mu  sync.Mutex
	all []request
}

type recording struct {
	*recorder
	next http.RoundTripper
}

func (r *recording) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.all = append(r.all, request{Method: req.Method, URL: req.URL.RequestURI(), User: req.Header.Get("Impersonate-User")})
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

// since returns the requests after the first n.
func (r *recorder) since(n int) []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.all[n:]...)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.all)
}
