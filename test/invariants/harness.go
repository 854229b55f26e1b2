/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

package invariants

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fieldops/fieldops/controllers"
	"github.com/fieldops/fieldops/test/testkit"
)

// Env is the control plane sequences run against. Each run gets its own
// namespace and its own fieldops manager, watching only that namespace, so
// runs are independent and can go in parallel.
type Env struct {
	// Config reaches the control plane as an administrator.
	Config *rest.Config
	// Client is the test's own client: every field manager but fieldops.
	Client client.Client
	// Timeout bounds each wait of a step (a reconcile, a deletion).
	Timeout time.Duration

	runs atomic.Int64

	predictOnce sync.Once
	predict     *predictor
	predictErr  error

	// plans counts the steps whose plan was checked (invariant 10).
	plans planCounts
	// OrderNotes makes a plan's order of writes that differs from the
	// controller's a note of the step rather than a violation of (10).
	OrderNotes bool
}

// planCounts counts the checks of invariant (10): plans of applies and of
// deletions checked (of selector patches among them), plans a step's
// outcome left uncheckable, and orders of writes checked and left
// unchecked (writeorder.go).
type planCounts struct {
	applies, deletions, selector, unchecked atomic.Int64
	orders, ordersUnchecked, ordersDiffer   atomic.Int64
}

// String reads like a log line.
func (c *planCounts) String() string {
	return fmt.Sprintf("the plan predicted the controller at %d applies and %d deletions (%d of selector patches), and its order of writes at %d steps (%d differed, as notes; %d not checked: several targets); %d plans not checkable",
		c.applies.Load(), c.deletions.Load(), c.selector.Load(), c.orders.Load(), c.ordersDiffer.Load(), c.ordersUnchecked.Load(), c.unchecked.Load())
}

// fieldops is one running fieldops manager of a run.
type fieldops struct {
	// targets is what fieldops reads the target through.
	targets client.Reader
	writes  *testkit.WriteCounter
	// log keeps the manager's writes in order, each tagged with its
	// reconcile's ID (invariant 10's order of writes).
	log      *testkit.WriteLog
	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
}

// startFieldops starts a manager with every fieldops controller (as
// controllers.SetupWith wires them), watching only namespace, logging into
// recs, counting its writes and failing some of them through fl (nil:
// none).
func (e *Env) startFieldops(namespace string, recs *reconciles, fl *faults) (*fieldops, error) {
	f := &fieldops{writes: &testkit.WriteCounter{}, log: &testkit.WriteLog{Tag: reconcileID}, done: make(chan error, 1)}
	cfg := rest.CopyConfig(e.Config)
	f.writes.Wrap(cfg)
	f.log.Wrap(cfg)
	if fl != nil {
		// Outside the counter: a refused write never reached the
		// apiserver, a lost answer did.
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { fl.next = rt; return fl })
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  controllers.Scheme(),
		Logger:  recs.logger(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   controllers.CacheOptions(cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}}),
		// Every run has its own manager with the same controllers.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	counting := &countingManager{Manager: mgr}
	if err := controllers.SetupWith(counting, controllers.Options{}); err != nil {
		return nil, err
	}
	if f.targets, err = controllers.TargetReader(counting); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	started := recs.controllersStarted()
	go func() { f.done <- mgr.Start(ctx) }()
	// Wait until every controller has synced its informers and started its
	// workers: a manager stopped before that logs errors for nothing.
	deadline := time.Now().Add(e.Timeout)
	for recs.controllersStarted() < started+counting.controllers {
		if time.Now().After(deadline) {
			f.stop()
			return nil, fmt.Errorf("%d of %d fieldops controllers started within %s", recs.controllersStarted()-started, counting.controllers, e.Timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return f, nil
}

// countingManager counts the controllers added to it.
type countingManager struct {
	ctrl.Manager
	controllers int
}

func (m *countingManager) Add(r manager.Runnable) error {
	if _, ok := r.(interface{ GetLogger() logr.Logger }); ok {
		m.controllers++
	}
	return m.Manager.Add(r)
}

// stop stops the manager and waits until it has (once: later calls
// return at once).
func (f *fieldops) stop() {
	f.stopOnce.Do(func() {
		f.cancel()
		// What the manager returns once cancelled is not checked: the
		// invariants are judged on the cluster's objects, not on how the
		// manager stopped.
		<-f.done //nolint:errcheck // see above.
	})
}
