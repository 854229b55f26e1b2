/*
Copyright 2026 The fieldops Authors.

Licensed under the Apache License, Version 2.0.
*/

// Command flux is the Flux side of `make bench-scale`: it applies N partial
// Deployments, each adding one env var to the container of a Deployment
// another field manager owns, with the Flux ssa ResourceManager's ApplyAll
// (github.com/fluxcd/pkg/ssa), as kustomize-controller does, and reports the
// wall time of ApplyAll and its requests by HTTP method.
//
// It lives in its own Go module so the fieldops go.mod never requires
// fluxcd/pkg. The harness (test/benchscale) runs it as a separate process
// and drives it over stdin and stdout, one JSON object per line:
//
//	stdout {"ready":true}                 client built, RESTMapper warm
//	stdin  go                             start ApplyAll
//	stdout {"wallSeconds":…,"requests":…} ApplyAll returned
//	stdin  EOF                            exit (after the harness read /proc)
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
)

// counter counts requests by HTTP method; dry-run requests (the ?dryRun=All
// PATCH of ApplyAll's drift check) are counted apart as well.
type counter struct {
	next   http.RoundTripper
	mu     sync.Mutex
	method map[string]int
	dryRun int
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.method[r.Method]++
	if q, err := url.ParseQuery(r.URL.RawQuery); err == nil && q.Get("dryRun") != "" {
		c.dryRun++
	}
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

func (c *counter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.method, c.dryRun = map[string]int{}, 0
}

// Result is what the harness reads after ApplyAll.
type Result struct {
	WallSeconds float64        `json:"wallSeconds"`
	Requests    map[string]int `json:"requests"`
	DryRun      int            `json:"dryRun"`
	Actions     map[string]int `json:"actions"`
	Error       string         `json:"error,omitempty"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchscale-flux:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		namespace, manager, container, envName string
		n, concurrency                         int
	)
	// config.GetConfig reads --kubeconfig (registered by its package) or
	// $KUBECONFIG and turns client-side rate limiting off, as it does for
	// the fieldops manager.
	flag.StringVar(&namespace, "namespace", "bench-flux", "Namespace of the Deployments.")
	flag.IntVar(&n, "n", 1000, "Number of Deployments (bench-0 … bench-N-1).")
	flag.IntVar(&concurrency, "concurrency", 4, "ResourceManager.SetConcurrency: concurrent reads and dry-runs of ApplyAll (kustomize-controller's --concurrent-ssa defaults to 4).")
	flag.StringVar(&manager, "field-manager", "kustomize-controller", "Field manager of the applies.")
	flag.StringVar(&container, "container", "app", "Container the env var is added to.")
	flag.StringVar(&envName, "env", "FIELDOPS_BENCH", "Name of the env var added (value: the Deployment's index).")
	flag.Parse()

	cfg, err := config.GetConfig()
	if err != nil {
		return err
	}
	requests := &counter{method: map[string]int{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { requests.next = rt; return requests })
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	// Warm the RESTMapper as a running kustomize-controller has it.
	if _, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1"); err != nil {
		return err
	}
	rm := ssa.NewResourceManager(c, nil, ssa.Owner{Field: manager, Group: "bench.fieldops.dev"})
	rm.SetConcurrency(concurrency)

	objects := make([]*unstructured.Unstructured, n)
	for i := range objects {
		objects[i] = intent(namespace, fmt.Sprintf("bench-%d", i), container, envName, strconv.Itoa(i))
	}

	out := json.NewEncoder(os.Stdout)
	if err := out.Encode(map[string]bool{"ready": true}); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "go" {
		return fmt.Errorf("expected 'go' on stdin")
	}

	requests.reset()
	start := time.Now()
	cs, err := rm.ApplyAll(context.Background(), objects, ssa.DefaultApplyOptions())
	res := Result{WallSeconds: time.Since(start).Seconds(), Actions: map[string]int{}}
	requests.mu.Lock()
	res.Requests, res.DryRun = requests.method, requests.dryRun
	requests.mu.Unlock()
	if err != nil {
		res.Error = err.Error()
	} else {
		for _, e := range cs.Entries {
			res.Actions[e.Action.String()]++
		}
	}
	if err := out.Encode(res); err != nil {
		return err
	}
	for in.Scan() { // until the harness closes stdin
	}
	return nil
}

// intent is the partial Deployment: only the container's name (its list
// key) and one env var.
func intent(namespace, name, container, envName, value string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{
				"name": container,
				"env":  []any{map[string]any{"name": envName, "value": value}},
			}},
		}}},
	}}
}
